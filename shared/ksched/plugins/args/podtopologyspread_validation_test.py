"""PodTopologySpreadArgs validation, cases after upstream ``validation_pluginargs_test.go``."""

from __future__ import annotations

from typing import Any

import pytest

from ksched.api.core import TopologySpreadConstraint
from ksched.api.meta import LabelSelector
from ksched.apimachinery.field import aggregate_message
from ksched.plugins.args.podtopologyspread_validation import validate_pod_topology_spread_args
from ksched.plugins.args.types import PodTopologySpreadArgs


def tsc(
    max_skew: int = 1, key: str = "node", when: str = "DoNotSchedule", **kw: Any
) -> TopologySpreadConstraint:
    return TopologySpreadConstraint(max_skew=max_skew, topology_key=key, when_unsatisfiable=when, **kw)


def args(constraints: list[TopologySpreadConstraint], defaulting: str = "List") -> PodTopologySpreadArgs:
    return PodTopologySpreadArgs(default_constraints=constraints, defaulting_type=defaulting)


NAME_MSG = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
    "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)


@pytest.mark.parametrize(
    ("name", "given", "want"),
    [
        ("valid constraints", args([tsc(1, "node"), tsc(2, "zone", "ScheduleAnyway")]), []),
        (
            "maxSkew less than zero",
            args([tsc(-1)]),
            ["defaultConstraints[0].maxSkew: Invalid value: -1: not in valid range (0, inf)"],
        ),
        (
            "empty topology key",
            args([tsc(key="")]),
            ["defaultConstraints[0].topologyKey: Required value: can not be empty"],
        ),
        (
            "whenUnsatisfiable is empty",
            args([tsc(when="")]),
            ["defaultConstraints[0].whenUnsatisfiable: Required value: can not be empty"],
        ),
        (
            "whenUnsatisfiable contains unsupported action",
            args([tsc(when="unknown action")]),
            [
                'defaultConstraints[0].whenUnsatisfiable: Unsupported value: "unknown action": '
                'supported values: "DoNotSchedule", "ScheduleAnyway"'
            ],
        ),
        (
            "duplicated constraints",
            args([tsc(1, "node"), tsc(2, "node")]),
            ['defaultConstraints[1]: Duplicate value: "{node, DoNotSchedule}"'],
        ),
        (
            "label selector present",
            args([tsc(label_selector=LabelSelector(match_labels={"a": "b"}))]),
            [
                "defaultConstraints[0].labelSelector: Forbidden: constraint must not define a selector, "
                "as they deduced for each pod"
            ],
        ),
        ("list default constraints, no constraints", args([]), []),
        ("system default constraints", args([], "System"), []),
        (
            "wrong constraints",
            args([tsc()], "System"),
            ['defaultingType: Invalid value: "System": when .defaultConstraints are not empty'],
        ),
        (
            "unknown defaulting type",
            args([], "Unknown"),
            ['defaultingType: Unsupported value: "Unknown": supported values: "System", "List"'],
        ),
        (
            "invalid topology key",
            args([tsc(key="-bad")]),
            [f'defaultConstraints[0].topologyKey: Invalid value: "-bad": {NAME_MSG}'],
        ),
    ],
)
def test_validate_pod_topology_spread_args(name: str, given: PodTopologySpreadArgs, want: list[str]) -> None:
    assert validate_pod_topology_spread_args(given) == want


def test_path_prefix_and_aggregate() -> None:
    got = validate_pod_topology_spread_args(args([tsc(0, "")]), "pluginConfig[1].args")
    assert got == [
        "pluginConfig[1].args.defaultConstraints[0].maxSkew: Invalid value: 0: not in valid range (0, inf)",
        "pluginConfig[1].args.defaultConstraints[0].topologyKey: Required value: can not be empty",
    ]
    assert aggregate_message(got) == "[" + ", ".join(got) + "]"
    assert aggregate_message(got[:1]) == got[0]
