"""The out-of-tree plugin example (examples/plugins/ksched-example-plugin) loads exactly as an
installed package would -- through its ``ksched.plugins`` entry point, found by importlib.metadata
in a ``.dist-info`` made from its own pyproject.toml -- and changes ``ksched simulate``'s decisions.
Nothing is installed: the package's ``src`` and the metadata go on ``sys.path`` for the test only."""

from __future__ import annotations

import importlib
import json
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

from ksched.cli import main as ksched
from ksched.plugins.registry import ENTRY_POINT_GROUP, Registry

PACKAGE = Path(__file__).resolve().parent.parent / "examples" / "plugins" / "ksched-example-plugin"
CLUSTER = PACKAGE / "example" / "cluster.yaml"
CONFIG = PACKAGE / "example" / "config.yaml"


@pytest.fixture
def installed_example(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """What ``pip install examples/plugins/ksched-example-plugin`` leaves for importlib.metadata."""
    project = tomllib.loads((PACKAGE / "pyproject.toml").read_text())["project"]
    points = project["entry-points"][ENTRY_POINT_GROUP]
    dist = tmp_path / f"{project['name'].replace('-', '_')}-{project['version']}.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {project['name']}\nVersion: {project['version']}\n"
    )
    lines = [f"[{ENTRY_POINT_GROUP}]", *(f"{name} = {target}" for name, target in points.items())]
    (dist / "entry_points.txt").write_text("\n".join(lines) + "\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.syspath_prepend(str(PACKAGE / "src"))
    importlib.invalidate_caches()
    yield
    sys.modules.pop("ksched_example_plugin", None)


def simulate(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, dict[str, object]], str]:
    code = ksched(["simulate", "--cluster", str(CLUSTER), "--output", "json", *args])
    out, err = capsys.readouterr()
    pods = {p["pod"]: p for p in json.loads(out)["pods"]} if code == 0 else {}
    return code, pods, err


@pytest.mark.usefixtures("installed_example")
def test_entry_point_registers_the_plugin_with_typed_args() -> None:
    registry = Registry()
    assert "PreferLabeledNodes" in registry
    registration = registry["PreferLabeledNodes"]
    assert registration.args_type is not None and registration.args_type.__name__ == "PreferLabeledNodesArgs"
    assert registration.factory.__module__ == "ksched_example_plugin"


@pytest.mark.usefixtures("installed_example")
@pytest.mark.parametrize("seed", [1, 2, 3, 4, 5])
def test_the_plugin_steers_every_pod_to_the_labeled_pool(
    capsys: pytest.CaptureFixture[str], seed: int
) -> None:
    code, pods, err = simulate(capsys, "--config", str(CONFIG), "--seed", str(seed))
    assert code == 0, err
    assert {name: p["node"] for name, p in pods.items()} == {
        "default/web-1": "node-2",
        "default/web-2": "node-2",
    }
    scores = pods["default/web-1"]["scores"]
    assert isinstance(scores, dict)
    assert {node: s["PreferLabeledNodes"] for node, s in scores.items()} == {
        "node-1": 0,
        "node-2": 500,  # score 100 x weight 5
        "node-3": 0,  # labelled, but not with an accepted value
    }


def test_without_the_plugin_the_nodes_tie(capsys: pytest.CaptureFixture[str]) -> None:
    """The effect is the plugin's: the default profile spreads the first pod over the tied nodes."""
    chosen = set()
    for seed in range(1, 9):
        code, pods, err = simulate(capsys, "--seed", str(seed))
        assert code == 0, err
        chosen.add(pods["default/web-1"]["node"])
    assert len(chosen) > 1 and chosen <= {"node-1", "node-2", "node-3"}


@pytest.mark.usefixtures("installed_example")
@pytest.mark.parametrize(
    ("args", "message"),
    [
        ("labelKey: example.com/pool\n          lableKey: x", 'unknown field "lableKey"'),
        ("values: [fast]", 'initializing plugin "PreferLabeledNodes": labelKey: Required value'),
        ("labelKey: a\n          score: 101", "score: Invalid value: 101"),
    ],
)
def test_bad_args_are_reported_with_the_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: str, message: str
) -> None:
    text = CONFIG.read_text()
    start = text.index("labelKey: example.com/pool")
    config = tmp_path / "config.yaml"
    config.write_text(text[:start] + args + "\n")
    code, _, err = simulate(capsys, "--config", str(config))
    assert code == 2
    assert message in err, err
