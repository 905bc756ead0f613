"""PDB matching and the violating/non-violating split (upstream ``filterPodsWithPDBViolation``)."""

from __future__ import annotations

from typing import Any

import pytest

from ksched.framework.podinfo import PodInfo
from ksched.plugins.defaultpreemption.pdb import PDBCache, compile_pdb, split_by_pdb_violation
from ksched.plugins.defaultpreemption.testing import pdb, pod

FOO = {"app": "foo"}


def names(pods: list[PodInfo]) -> list[str]:
    return [p.name for p in pods]


@pytest.mark.parametrize(
    ("name", "selector", "labels", "namespace", "matches"),
    [
        ("matchLabels selects", {"matchLabels": FOO}, FOO, "default", True),
        ("other namespace", {"matchLabels": FOO}, FOO, "other", False),
        ("labels differ", {"matchLabels": FOO}, {"app": "bar"}, "default", False),
        ("empty selector matches nothing", {}, FOO, "default", False),
        (
            "expression selects",
            {"matchExpressions": [{"key": "app", "operator": "In", "values": ["foo"]}]},
            FOO,
            "default",
            True,
        ),
        (
            "invalid operator matches nothing",
            {"matchExpressions": [{"key": "app", "operator": "Gt", "values": ["1"]}]},
            FOO,
            "default",
            False,
        ),
        (
            "In without values matches nothing",
            {"matchExpressions": [{"key": "app", "operator": "In"}]},
            FOO,
            "default",
            False,
        ),
    ],
)
def test_pdb_matching(
    name: str, selector: dict[str, Any], labels: dict[str, str], namespace: str, matches: bool
) -> None:
    compiled = compile_pdb(pdb(selector=selector))
    assert compiled.matches(PodInfo(pod("v", labels=labels, namespace=namespace))) is matches


def test_nil_selector_matches_nothing() -> None:
    budget = pdb(match_labels=FOO)
    budget.spec.selector = None
    assert not compile_pdb(budget).matches(PodInfo(pod("v", labels=FOO)))


def test_split_counts_victims_against_the_budget_in_order() -> None:
    pods = [PodInfo(pod(f"v{i}", labels=FOO)) for i in range(4)]
    violating, non_violating = split_by_pdb_violation(pods, [compile_pdb(pdb(match_labels=FOO, allowed=2))])
    assert names(non_violating) == ["v0", "v1"]
    assert names(violating) == ["v2", "v3"]


def test_split_ignores_pods_already_disrupted_and_unlabelled_pods() -> None:
    pods = [PodInfo(pod("gone", labels=FOO)), PodInfo(pod("bare")), PodInfo(pod("v", labels=FOO))]
    budget = compile_pdb(pdb(match_labels=FOO, allowed=0, disrupted=["gone"]))
    violating, non_violating = split_by_pdb_violation(pods, [budget])
    assert names(violating) == ["v"]
    assert names(non_violating) == ["gone", "bare"]


def test_split_with_several_budgets_any_exhausted_one_violates() -> None:
    pods = [PodInfo(pod("a", labels={"app": "foo", "tier": "x"})), PodInfo(pod("b", labels={"app": "foo"}))]
    budgets = [
        compile_pdb(pdb("wide", match_labels=FOO, allowed=5)),
        compile_pdb(pdb("narrow", match_labels={"tier": "x"}, allowed=0)),
    ]
    violating, non_violating = split_by_pdb_violation(pods, budgets)
    assert names(violating) == ["a"]
    assert names(non_violating) == ["b"]


def test_cache_recompiles_only_changed_objects() -> None:
    cache = PDBCache()
    first, second = pdb("a", match_labels=FOO), pdb("b", match_labels=FOO, allowed=1)
    compiled = cache.compile([first, second])
    again = cache.compile([first, second])
    assert again[0] is compiled[0] and again[1] is compiled[1]
    replaced = pdb("b", match_labels=FOO, allowed=3)
    third = cache.compile([first, replaced])
    assert third[0] is compiled[0]
    assert third[1].disruptions_allowed == 3
