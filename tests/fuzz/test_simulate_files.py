"""Fuzzing the cluster files of ``ksched simulate`` (``ksched.api.files.load_objects`` and the
command's ``main``): the example cluster with one object changed at one place gives either a
result (exit 0, JSON on standard output) or exit 2 with one error naming the object; never a
traceback."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from ksched.simulate.cli import main
from tests.fuzz.profiles import fuzz_settings
from tests.fuzz.trees import mutated

EXAMPLE: dict[str, Any] = yaml.safe_load(
    (Path(__file__).parents[2] / "examples" / "cluster.yaml").read_text()
)
ITEMS = len(EXAMPLE["items"])
KINDS = ["Node", "Pod", "List", "PersistentVolumeClaim", "Namespace", "v1", "apps/v1", "Deployment"]


def simulate(tree: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(yaml.safe_dump(tree, sort_keys=False))
    capsys.readouterr()
    code = main(["--cluster", str(cluster), "--output", "json", "--seed", "1"])
    out, err = capsys.readouterr()
    return code, out, err


def object_named(err: str, item: int, original: dict[str, Any]) -> bool:
    name = str((original.get("metadata") or {}).get("name", ""))
    return f"items[{item}]" in err or (bool(name) and name in err)


@fuzz_settings(25)
@given(data=st.data())
def test_one_object_changed(
    tmp_path_factory: pytest.TempPathFactory, capsys: pytest.CaptureFixture[str], data: st.DataObject
) -> None:
    item = data.draw(st.integers(0, ITEMS - 1), label="item")
    tree, _ = data.draw(mutated(EXAMPLE, texts=KINDS, under=("items", item)), label="change")
    code, out, err = simulate(tree, tmp_path_factory.mktemp("sim"), capsys)
    assert "Traceback" not in err
    if code == 0:
        assert isinstance(msgspec.json.decode(out), list | dict)
    else:
        assert code == 2, (code, err)
        assert object_named(err, item, EXAMPLE["items"][item]), err
