"""Fuzzing ``ksched.config.parse_config`` (KubeSchedulerConfiguration files and plugin args): any
text, any tree, and one-place mutations of a valid configuration give either a configuration or a
``ConfigError`` whose messages name the field at fault; never another exception."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from hypothesis import given
from hypothesis import strategies as st

from ksched.apimachinery.strconv import go_quote
from ksched.config import API_VERSION, KIND, ConfigError, parse_config
from tests.fuzz.profiles import fuzz_settings
from tests.fuzz.trees import Path as TreePath
from tests.fuzz.trees import json_values, mutated

SEED_TEXT = (Path(__file__).parent / "seeds" / "scheduler-config.yaml").read_text()
SEED: dict[str, Any] = yaml.safe_load(SEED_TEXT)
PLUGINS = [
    "DefaultPreemption",
    "InterPodAffinity",
    "NodeAffinity",
    "NodeResourcesFit",
    "PodTopologySpread",
    "VolumeBinding",
    "NodeResourcesBalancedAllocation",
    "DynamicResources",
    "NodeDeclaredFeatures",
    "*",
]


def outcome(text: str | bytes) -> ConfigError | None:
    """None for a valid configuration, else the ConfigError; anything else raised fails the test."""
    try:
        parse_config(text)
    except ConfigError as exc:
        assert exc.messages and all(m.strip() for m in exc.messages), exc.messages
        return exc
    return None


def names_the_field(error: ConfigError, path: TreePath) -> bool:
    """Some message names a key or plugin on ``path``, or the document's type (a top-level change)."""
    text = "\n".join(error.messages)
    words = [str(p) for p in path if isinstance(p, str)]
    words += [str(p) for p in path if isinstance(p, int)]  # a list index, e.g. profiles[1]
    quoted = [go_quote(w)[1:-1] for w in words]  # as messages print them, "\x1f" for a control character
    return any(w and w in text for w in [*words, *quoted]) or "Kind" in text or "YAML" in text


@fuzz_settings(100)
@given(st.text(max_size=300) | st.binary(max_size=300))
def test_any_text(text: str | bytes) -> None:
    outcome(text)


@fuzz_settings(40)
@given(st.dictionaries(st.text(max_size=20), json_values, max_size=6))
def test_any_tree(tree: dict[str, Any]) -> None:
    outcome(yaml.safe_dump({"apiVersion": API_VERSION, "kind": KIND, **tree}))


@fuzz_settings(60)
@given(mutated(SEED, texts=PLUGINS))
def test_mutations_of_a_valid_configuration(change: tuple[Any, TreePath]) -> None:
    tree, path = change
    error = outcome(yaml.safe_dump(tree, sort_keys=False))
    if error is not None:
        assert names_the_field(error, path), (path, error.messages)


@fuzz_settings(40)
@given(st.data())
def test_mutations_of_plugin_args(data: st.DataObject) -> None:
    """Plugin args: each plugin's args are changed, not the configuration around them."""
    configs = SEED["profiles"][0]["pluginConfig"]
    index = data.draw(st.integers(0, len(configs) - 1), label="plugin")
    tree, path = data.draw(mutated(SEED, texts=PLUGINS, under=("profiles", 0, "pluginConfig", index, "args")))
    error = outcome(yaml.safe_dump(tree, sort_keys=False))
    if error is not None:
        assert names_the_field(error, path), (path, error.messages)
