"""Every in-tree plugin (and the example out-of-tree one) claims exactly the extension points it
implements: each protocol of ``ksched.framework.interfaces`` whose methods the class has is named by a
``_POINT: type[PointPlugin] = Cls`` line of its module, which mypy checks against the protocol.

The runtime decides membership structurally (``isinstance`` on the protocols), so a method without a
claim would escape the static check: this test is what makes the claims complete."""

from __future__ import annotations

import ast
import importlib.util
import inspect
import sys
import typing
from pathlib import Path

import pytest

from ksched.framework import interfaces
from ksched.framework.cycle_state import CycleState
from ksched.framework.interfaces import FilterPlugin
from ksched.framework.nodeinfo import NodeInfo
from ksched.framework.podinfo import PodInfo
from ksched.framework.status import Status
from ksched.plugins.feature import DEFAULT_FEATURES
from ksched.plugins.registry import IN_TREE

EXAMPLE = (
    Path(__file__).resolve().parents[3]
    / "examples/plugins/ksched-example-plugin/src/ksched_example_plugin/__init__.py"
)
EXTENSION_POINTS = [
    proto
    for name, proto in vars(interfaces).items()
    if inspect.isclass(proto) and getattr(proto, "_is_protocol", False) and name not in {"Plugin", "Protocol"}
]


def implemented_points(cls: type) -> set[str]:
    """The protocols whose every member (but ``name``) the class defines, as the runtime's checks see it."""
    members = {proto: typing._get_protocol_attrs(proto) - {"name"} for proto in EXTENSION_POINTS}  # type: ignore[attr-defined]
    return {proto.__name__ for proto, names in members.items() if all(hasattr(cls, m) for m in names)}


def claimed_points(cls: type) -> set[str]:
    """The protocols named by ``X: type[Protocol] = cls`` lines at the top level of the class's module."""
    tree = ast.parse(inspect.getsource(sys.modules[cls.__module__]))
    claims = set()
    for node in tree.body:
        if (
            isinstance(node, ast.AnnAssign)
            and isinstance(node.value, ast.Name)
            and node.value.id == cls.__name__
            and isinstance(node.annotation, ast.Subscript)
            and isinstance(node.annotation.value, ast.Name)
            and node.annotation.value.id == "type"
            and isinstance(node.annotation.slice, ast.Name)
        ):
            claims.add(node.annotation.slice.id)
    return claims


def plugin_class(name: str) -> type:
    factory = IN_TREE[name](DEFAULT_FEATURES).factory
    cls = typing.get_type_hints(getattr(factory, "func", factory))["return"]  # a partial with features
    assert isinstance(cls, type)
    return cls


NOT_IMPLEMENTED = {"TopologyPlacementGenerator"}
"""Registered for the TopologyAwareWorkloadScheduling gate's default set, reported as missing when
built (docs/gang.md)."""


def test_the_plugins_not_implemented_are_still_missing() -> None:
    for name in NOT_IMPLEMENTED:
        with pytest.raises(ModuleNotFoundError):
            IN_TREE[name](DEFAULT_FEATURES)


@pytest.mark.parametrize("name", sorted(IN_TREE.keys() - NOT_IMPLEMENTED))
def test_in_tree_plugins_claim_what_they_implement(name: str) -> None:
    cls = plugin_class(name)
    assert claimed_points(cls) == implemented_points(cls)


def test_the_example_plugin_claims_what_it_implements(monkeypatch: pytest.MonkeyPatch) -> None:
    spec = importlib.util.spec_from_file_location("ksched_example_plugin", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "ksched_example_plugin", module)
    spec.loader.exec_module(module)
    cls = module.PreferLabeledNodes
    assert claimed_points(cls) == implemented_points(cls) == {"ScorePlugin"}


class _FilterWithUnclaimedScore:
    name = "FilterWithUnclaimedScore"

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        return None

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        return 0


_FILTER: type[FilterPlugin] = _FilterWithUnclaimedScore


def test_an_unclaimed_point_is_caught() -> None:
    cls = _FilterWithUnclaimedScore
    assert implemented_points(cls) - claimed_points(cls) == {"ScorePlugin"}
