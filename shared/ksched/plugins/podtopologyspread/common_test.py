"""Constraint compilation, default selectors (upstream ``helper.DefaultSelector``) and counting rules."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from ksched.api.core import ReplicationController, Service
from ksched.api.workloads import ReplicaSet, StatefulSet
from ksched.apimachinery.labels import Selector, label_selector_as_selector
from ksched.framework.objects import ClusterObjects
from ksched.framework.podinfo import PodInfo
from ksched.plugins.podtopologyspread.common import (
    DO_NOT_SCHEDULE,
    SYSTEM_DEFAULT_CONSTRAINTS,
    build_default_constraints,
    count_matching,
    default_selector,
    filter_constraints,
    merge_label_set_with_selector,
    selector_key,
)
from ksched.plugins.podtopologyspread.testing import exists, pod, sel_key, spread


def _objects(
    services: dict[str, dict[str, str]] | None = None,
    rcs: dict[str, dict[str, str]] | None = None,
    rss: dict[str, dict[str, Any] | None] | None = None,
    sss: dict[str, dict[str, Any] | None] | None = None,
    namespace: str = "default",
) -> ClusterObjects:
    objs = ClusterObjects()

    def meta(name: str) -> dict[str, str]:
        return {"name": name, "namespace": namespace}

    for name, sel in (services or {}).items():
        objs.services[f"{namespace}/{name}"] = msgspec.convert(
            {"metadata": meta(name), "spec": {"selector": sel}}, Service
        )
    for name, sel in (rcs or {}).items():
        objs.replication_controllers[f"{namespace}/{name}"] = msgspec.convert(
            {"metadata": meta(name), "spec": {"selector": sel}}, ReplicationController
        )
    for name, ls in (rss or {}).items():
        objs.replica_sets[f"{namespace}/{name}"] = msgspec.convert(
            {"metadata": meta(name), "spec": {"selector": ls}}, ReplicaSet
        )
    for name, ls in (sss or {}).items():
        objs.stateful_sets[f"{namespace}/{name}"] = msgspec.convert(
            {"metadata": meta(name), "spec": {"selector": ls}}, StatefulSet
        )
    return objs


LABELS = {"app": "web", "tier": "fe", "pod-template-hash": "abc"}


@pytest.mark.parametrize(
    ("name", "owner", "objs", "want"),
    [
        ("no objects select the pod", None, _objects(), None),
        (
            "services that select the pod are merged",
            None,
            _objects(services={"s1": {"app": "web"}, "s2": {"tier": "fe"}, "other": {"app": "db"}}),
            {"matchLabels": {"app": "web", "tier": "fe"}},
        ),
        ("a service with an empty selector selects nothing", None, _objects(services={"s": {}}), None),
        (
            "a service in another namespace is ignored",
            None,
            _objects(services={"s": {"app": "web"}}, namespace="other"),
            None,
        ),
        (
            "replication controller selector is merged",
            ("v1", "ReplicationController", "rc"),
            _objects(services={"s": {"app": "web"}}, rcs={"rc": {"tier": "fe"}}),
            {"matchLabels": {"app": "web", "tier": "fe"}},
        ),
        (
            "replica set requirements are added",
            ("apps/v1", "ReplicaSet", "rs"),
            _objects(services={"s": {"app": "web"}}, rss={"rs": exists("pod-template-hash")}),
            {"matchLabels": {"app": "web"}, **exists("pod-template-hash")},
        ),
        (
            "stateful set requirements are added",
            ("apps/v1", "StatefulSet", "ss"),
            _objects(sss={"ss": {"matchLabels": {"tier": "fe"}}}),
            {"matchLabels": {"tier": "fe"}},
        ),
        (
            "a replica set with a nil selector adds nothing",
            ("apps/v1", "ReplicaSet", "rs"),
            _objects(rss={"rs": None}),
            None,
        ),
        ("a missing replica set adds nothing", ("apps/v1", "ReplicaSet", "gone"), _objects(), None),
        (
            "an owner of another group version is not a controller we know",
            ("extensions/v1beta1", "ReplicaSet", "rs"),
            _objects(rss={"rs": exists("app")}),
            None,
        ),
        (
            "an unparsable owner apiVersion is ignored",
            ("a/b/c", "ReplicaSet", "rs"),
            _objects(services={"s": {"app": "web"}}, rss={"rs": exists("app")}),
            {"matchLabels": {"app": "web"}},
        ),
    ],
)
def test_default_selector(
    name: str, owner: tuple[str, str, str] | None, objs: ClusterObjects, want: dict[str, Any] | None
) -> None:
    got = default_selector(pod(labels=LABELS, owner=owner), objs)
    if want is None:
        assert got.empty
    else:
        assert selector_key(got) == sel_key(want)


def test_default_constraints_need_a_non_empty_selector() -> None:
    p = pod(labels=LABELS)
    assert build_default_constraints(SYSTEM_DEFAULT_CONSTRAINTS, p, _objects(), "ScheduleAnyway") == []
    got = build_default_constraints(
        SYSTEM_DEFAULT_CONSTRAINTS, p, _objects(services={"s": {"app": "web"}}), "ScheduleAnyway"
    )
    assert [(c.topology_key, c.max_skew, c.key) for c in got] == [
        ("kubernetes.io/hostname", 3, sel_key({"matchLabels": {"app": "web"}})),
        ("topology.kubernetes.io/zone", 5, sel_key({"matchLabels": {"app": "web"}})),
    ]
    assert build_default_constraints(SYSTEM_DEFAULT_CONSTRAINTS, p, _objects(), DO_NOT_SCHEDULE) == []


def test_merge_label_set_with_selector() -> None:
    merged = merge_label_set_with_selector({"a": "1"}, label_selector_as_selector(None))
    assert merged.never
    merged = merge_label_set_with_selector({"a": "1"}, Selector.everything())
    assert selector_key(merged) == sel_key({"matchLabels": {"a": "1"}})
    assert merged.matches({"a": "1"}) and not merged.matches({"a": "2"})


def test_match_label_keys_merged_by_the_api_server_are_not_counted_twice() -> None:
    """1.36 API server copies matchLabelKeys into labelSelector; the scheduler merges them again.
    The repeated requirement selects exactly the same pods (and compiles to the same key)."""
    labels = {"app": "web", "version": "v1"}
    as_created = spread(
        1, "zone", DO_NOT_SCHEDULE, {"matchLabels": {"app": "web"}}, match_label_keys=["version"]
    )
    as_stored = spread(
        1,
        "zone",
        DO_NOT_SCHEDULE,
        {
            "matchExpressions": [
                {"key": "app", "operator": "In", "values": ["web"]},
                {"key": "version", "operator": "In", "values": ["v1"]},
            ]
        },
        match_label_keys=["version"],
    )
    p1 = pod(labels=labels, constraints=[as_created])
    p2 = pod(labels=labels, constraints=[as_stored])
    (c1,) = filter_constraints(p1.spec.topology_spread_constraints, labels, DO_NOT_SCHEDULE)
    (c2,) = filter_constraints(p2.spec.topology_spread_constraints, labels, DO_NOT_SCHEDULE)
    assert c1.key == c2.key
    pods = [
        PodInfo(pod("a", labels={"app": "web", "version": "v1"}, node="n")),
        PodInfo(pod("b", labels={"app": "web", "version": "v2"}, node="n")),
        PodInfo(pod("c", labels={"app": "db", "version": "v1"}, node="n")),
    ]
    assert count_matching(pods, c1, "default") == count_matching(pods, c2, "default") == 1


def test_an_empty_selector_counts_nothing_but_matches_the_pod_itself() -> None:
    """Upstream countPodsMatchSelector returns 0 for an empty selector, while Filter's self-match is true."""
    (c,) = filter_constraints([spread_typed({})], {"app": "web"}, DO_NOT_SCHEDULE)
    assert c.matches({"app": "web"})
    assert count_matching([PodInfo(pod("a", labels={"app": "web"}, node="n"))], c, "default") == 0


def test_min_domains_and_policies_default() -> None:
    (c,) = filter_constraints([spread_typed(exists("a"))], {}, DO_NOT_SCHEDULE)
    assert (c.min_domains, c.honor_node_affinity, c.honor_node_taints) == (1, True, False)
    assert filter_constraints([spread_typed(exists("a"))], {}, "ScheduleAnyway") == []


def spread_typed(selector: dict[str, Any]) -> Any:
    return pod(constraints=[spread(1, "zone", DO_NOT_SCHEDULE, selector)]).spec.topology_spread_constraints[0]
