"""Node selectors as component-helpers ``nodeaffinity`` parses and matches them (1.36.2)."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from ksched.api.core import Node, Pod, PreferredSchedulingTerm
from ksched.api.core import NodeSelector as NodeSelectorSpec
from ksched.apimachinery.nodeselector import (
    NodeSelector,
    NodeSelectorError,
    PreferredSchedulingTerms,
    RequiredNodeAffinity,
)


def spec(*terms: dict[str, Any]) -> NodeSelectorSpec:
    return msgspec.convert({"nodeSelectorTerms": list(terms)}, NodeSelectorSpec)


def node(name: str, labels: dict[str, str]) -> Node:
    return msgspec.convert({"metadata": {"name": name, "labels": labels}}, Node)


ZONE_A = {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}
BAD_KEY = {"matchExpressions": [{"key": "bad key", "operator": "In", "values": ["x"]}]}
BAD_VALUE = {"matchExpressions": [{"key": "zone", "operator": "NotIn", "values": ["a b"]}]}


@pytest.mark.parametrize(
    ("terms", "labels", "name", "matches"),
    [
        ([ZONE_A], {"zone": "a"}, "n1", True),
        ([ZONE_A], {"zone": "b"}, "n1", False),
        ([{}], {"zone": "a"}, "n1", False),  # an empty term is dropped: nothing left to match
        ([BAD_KEY], {"bad key": "x"}, "n1", False),  # a term that does not parse never matches
        ([BAD_VALUE], {"zone": "b"}, "n1", False),
        ([BAD_VALUE, ZONE_A], {"zone": "a"}, "n1", True),  # terms are ORed; the broken one is skipped
        ([{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}], {}, "n1", True),
        (
            [{"matchFields": [{"key": "metadata.name", "operator": "NotIn", "values": ["n1"]}]}],
            {},
            "n1",
            False,
        ),
        ([{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}], {}, "", True),
        ([{"matchExpressions": [{"key": "n", "operator": "Gt", "values": ["5"]}]}], {"n": "6"}, "x", True),
        ([{"matchExpressions": [{"key": "n", "operator": "Lt", "values": ["5"]}]}], {"n": "x"}, "x", False),
    ],
)
def test_lazy_matching(terms: list[dict[str, Any]], labels: dict[str, str], name: str, matches: bool) -> None:
    assert NodeSelector(spec(*terms)).matches(labels, name) is matches


def test_parse_errors_surface_only_when_nothing_matched() -> None:
    selector = NodeSelector(spec(BAD_KEY, ZONE_A))
    assert selector.match(node("n", {"zone": "a"}))
    with pytest.raises(NodeSelectorError) as info:
        selector.match(node("n", {"zone": "b"}))
    assert str(info.value).startswith(
        'nodeSelectorTerms[0].matchExpressions[0].key: Invalid value: "bad key"'
    )


def test_every_parse_error_is_kept_with_its_path() -> None:
    bad_fields = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["a", "b"]}]}
    bogus = {"matchExpressions": [{"key": "k", "operator": "Bogus"}]}
    errors = NodeSelector(spec(BAD_VALUE, bad_fields, bogus), "affinity").errors
    assert [e.split(": ")[0] for e in errors] == [
        "affinity.nodeSelectorTerms[0].matchExpressions[0].values[0][zone]",
        "affinity.nodeSelectorTerms[1].matchFields[0].values",
        "affinity.nodeSelectorTerms[2].matchExpressions[0].operator",
    ]
    assert 'Invalid value: ["a","b"]: must have one element' in errors[1]
    assert NodeSelector(spec(ZONE_A)).errors == []


def test_preferred_terms_sum_weights_and_refuse_broken_terms() -> None:
    terms = [
        msgspec.convert({"weight": w, "preference": t}, PreferredSchedulingTerm)
        for w, t in [
            (3, ZONE_A),
            (0, BAD_KEY),
            (5, {"matchExpressions": [{"key": "zone", "operator": "Exists"}]}),
        ]
    ]
    preferred = PreferredSchedulingTerms(terms)  # the weight-0 broken term is ignored, not parsed
    assert preferred.score({"zone": "a"}, "n") == 8
    assert preferred.score({}, "n") == 0
    with pytest.raises(NodeSelectorError):
        PreferredSchedulingTerms(
            [msgspec.convert({"weight": 1, "preference": BAD_KEY}, PreferredSchedulingTerm)]
        )


def test_required_node_affinity_ands_node_selector_and_terms() -> None:
    pod = msgspec.convert(
        {
            "spec": {
                "containers": [],
                "nodeSelector": {"disk": "ssd"},
                "affinity": {
                    "nodeAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [ZONE_A]}
                    }
                },
            }
        },
        Pod,
    )
    required = RequiredNodeAffinity(pod)
    assert required.matches_node(node("n", {"disk": "ssd", "zone": "a"}))
    assert not required.matches_node(node("n", {"zone": "a"}))
    assert not required.matches_node(node("n", {"disk": "ssd", "zone": "b"}))
    assert RequiredNodeAffinity(msgspec.convert({"spec": {"containers": []}}, Pod)).is_empty
