"""PreFilter / Filter / AddPod / RemovePod tables ported from upstream ``filtering_test.go``.

Cases that only exercise a disabled feature gate (NodeInclusionPolicyInPodTopologySpread or
MatchLabelKeysInPodTopologySpread off) are not ported: both gates are locked on in 1.36. Cases
whose expectation is the same with the gate on are kept. Every PreFilter case runs through both
the indexed path (the snapshot's node list) and the node-by-node path, and every Filter case also
checks ``filter_batch`` against ``filter``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import msgspec
import numpy as np
import pytest

from ksched.api.core import Node, Pod, Service
from ksched.framework.cycle_state import CycleState
from ksched.framework.podinfo import PodInfo
from ksched.framework.snapshot import Snapshot
from ksched.framework.status import Code
from ksched.plugins.podtopologyspread.filtering import MAX_INT32, PRE_FILTER_STATE_KEY, PreFilterState
from ksched.plugins.podtopologyspread.testing import (
    constraint,
    exists,
    make_plugin,
    node,
    pod,
    sel_key,
    spread,
    zoned,
)

DNS = "DoNotSchedule"
SA = "ScheduleAnyway"
HONOR = "Honor"
IGNORE = "Ignore"
UNSCHED = "node.kubernetes.io/unschedulable"
F = exists("foo")
B = exists("bar")
S, U, UU = Code.SUCCESS, Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE


def ep(name: str, on: str, ns: str = "default", terminating: bool = False, **labels: str) -> Pod:
    """An existing pod bound to ``on``."""
    return pod(name, ns, labels=labels, node=on, terminating=terminating)


def four_nodes() -> list[Node]:
    return [
        zoned("node-a", "zone1"),
        zoned("node-b", "zone1"),
        zoned("node-x", "zone2"),
        zoned("node-y", "zone2"),
    ]


def nodes_by_label(*names: str, **labels: str) -> list[Node]:
    return [node(n, {"node": n, **labels}) for n in names]


@dataclass
class Want:
    """Expected state of one constraint: (maxSkew, key, selector, minDomains, honorAffinity, honorTaints),
    its counts per topology value, and its two critical paths."""

    spec: tuple[int, str, dict[str, Any] | None, int, bool, bool]
    counts: dict[str, int]
    paths: tuple[tuple[str, int], tuple[str, int]]


def zone_c(counts: dict[str, int], paths: Any, sel: dict[str, Any] | None = F, **kw: Any) -> Want:
    return Want((1, "zone", sel, 1, kw.get("aff", True), kw.get("taints", False)), counts, paths)


def node_c(counts: dict[str, int], paths: Any, sel: dict[str, Any] | None = F, **kw: Any) -> Want:
    return Want((1, "node", sel, 1, kw.get("aff", True), kw.get("taints", False)), counts, paths)


NEW_PATHS = (("", MAX_INT32), ("", MAX_INT32))


@dataclass
class PreFilterCase:
    name: str
    pod: Pod
    nodes: list[Node] = field(default_factory=list)
    existing: list[Pod] = field(default_factory=list)
    defaults: list[dict[str, Any]] = field(default_factory=list)
    services: list[dict[str, str]] = field(default_factory=list)
    want: list[Want] | None = None  # None: PreFilter returns Skip


FOUR_PODS_32 = [
    ep("p-a1", "node-a", foo=""),
    ep("p-a2", "node-a", foo=""),
    ep("p-b1", "node-b", foo=""),
    ep("p-y1", "node-y", foo=""),
    ep("p-y2", "node-y", foo=""),
]
SEVEN_PODS = [
    *FOUR_PODS_32[:4],
    ep("p-y2", "node-y", foo=""),
    ep("p-y3", "node-y", foo=""),
    ep("p-y4", "node-y", foo=""),
]
FOO_A_PODS = [
    ep("p-a1", "node-a", foo="a"),
    ep("p-a2", "node-a", foo="a"),
    ep("p-b1", "node-b", foo="a"),
    ep("p-y1", "node-y", foo="a"),
    ep("p-y2", "node-y", foo="a"),
]
ABC_NODES = [
    node("node-a", {"node": "node-a", "foo": ""}),
    node("node-b", {"node": "node-b", "foo": ""}),
    node("node-c", {"node": "node-c", "bar": ""}),
]
ABC_PODS = [
    ep("p-a", "node-a", bar=""),
    ep("p-b", "node-b", bar=""),
    ep("p-c", "node-b", bar=""),
    ep("p-d", "node-c"),
]
TAINT_NODES = [
    node("node-a", {"node": "node-a"}),
    node("node-b", {"node": "node-b"}),
    node("node-c", {"node": "node-c", "bar": ""}, tainted=True),
]

PRE_FILTER_CASES = [
    PreFilterCase(
        "clean cluster with one spreadConstraint",
        pod(labels={"foo": ""}, constraints=[spread(5, "zone", DNS, {"matchLabels": {"foo": "bar"}})]),
        four_nodes(),
        want=[
            Want(
                (5, "zone", {"matchLabels": {"foo": "bar"}}, 1, True, False),
                {"zone1": 0, "zone2": 0},
                (("zone1", 0), ("zone2", 0)),
            )
        ],
    ),
    PreFilterCase(
        "normal case with one spreadConstraint",
        pod(labels={"foo": ""}, constraints=[spread(1, "zone", DNS, F)]),
        four_nodes(),
        FOUR_PODS_32,
        want=[zone_c({"zone1": 3, "zone2": 2}, (("zone2", 2), ("zone1", 3)))],
    ),
    PreFilterCase(
        "normal case with null label selector",
        pod(labels={"foo": ""}, constraints=[spread(1, "zone", DNS, None)]),
        four_nodes(),
        FOUR_PODS_32,
        want=[zone_c({"zone1": 0, "zone2": 0}, (("zone2", 0), ("zone1", 0)), sel=None)],
    ),
    PreFilterCase(
        "normal case with one spreadConstraint, on a 3-zone cluster",
        pod(labels={"foo": ""}, constraints=[spread(1, "zone", DNS, F)]),
        [*four_nodes(), zoned("node-o", "zone3"), zoned("node-p", "zone3")],
        FOUR_PODS_32,
        want=[zone_c({"zone1": 3, "zone2": 2, "zone3": 0}, (("zone3", 0), ("zone2", 2)))],
    ),
    PreFilterCase(
        "namespace mismatch doesn't count",
        pod(labels={"foo": ""}, constraints=[spread(1, "zone", DNS, F)]),
        four_nodes(),
        [
            ep("p-a1", "node-a", foo=""),
            ep("p-a2", "node-a", "ns1", foo=""),
            ep("p-b1", "node-b", foo=""),
            ep("p-y1", "node-y", "ns2", foo=""),
            ep("p-y2", "node-y", foo=""),
        ],
        want=[zone_c({"zone1": 2, "zone2": 1}, (("zone2", 1), ("zone1", 2)))],
    ),
    PreFilterCase(
        "normal case with two spreadConstraints",
        pod(labels={"foo": ""}, constraints=[spread(1, "zone", DNS, F), spread(1, "node", DNS, F)]),
        four_nodes(),
        SEVEN_PODS,
        want=[
            zone_c({"zone1": 3, "zone2": 4}, (("zone1", 3), ("zone2", 4))),
            node_c({"node-a": 2, "node-b": 1, "node-x": 0, "node-y": 4}, (("node-x", 0), ("node-b", 1))),
        ],
    ),
    PreFilterCase(
        "soft spreadConstraints should be bypassed",
        pod(
            labels={"foo": ""},
            constraints=[
                spread(1, "zone", SA, F),
                spread(1, "zone", DNS, F),
                spread(1, "node", SA, F),
                spread(1, "node", DNS, F),
            ],
        ),
        [zoned("node-a", "zone1"), zoned("node-b", "zone1"), zoned("node-y", "zone2")],
        SEVEN_PODS,
        want=[
            zone_c({"zone1": 3, "zone2": 4}, (("zone1", 3), ("zone2", 4))),
            node_c({"node-a": 2, "node-b": 1, "node-y": 4}, (("node-b", 1), ("node-a", 2))),
        ],
    ),
    PreFilterCase(
        "different labelSelectors - simple version",
        pod(
            labels={"foo": "", "bar": ""}, constraints=[spread(1, "zone", DNS, F), spread(1, "node", DNS, B)]
        ),
        [zoned("node-a", "zone1"), zoned("node-b", "zone1"), zoned("node-y", "zone2")],
        [ep("p-a", "node-a", foo=""), ep("p-b", "node-b", bar="")],
        want=[
            zone_c({"zone1": 1, "zone2": 0}, (("zone2", 0), ("zone1", 1))),
            node_c({"node-a": 0, "node-b": 1, "node-y": 0}, (("node-a", 0), ("node-y", 0)), sel=B),
        ],
    ),
    PreFilterCase(
        "different labelSelectors - complex pods",
        pod(
            labels={"foo": "", "bar": ""}, constraints=[spread(1, "zone", DNS, F), spread(1, "node", DNS, B)]
        ),
        [zoned("node-a", "zone1"), zoned("node-b", "zone1"), zoned("node-y", "zone2")],
        [
            ep("p-a1", "node-a", foo=""),
            ep("p-a2", "node-a", foo="", bar=""),
            ep("p-b1", "node-b", foo=""),
            ep("p-y1", "node-y", foo=""),
            ep("p-y2", "node-y", foo="", bar=""),
            ep("p-y3", "node-y", foo=""),
            ep("p-y4", "node-y", foo="", bar=""),
        ],
        want=[
            zone_c({"zone1": 3, "zone2": 4}, (("zone1", 3), ("zone2", 4))),
            node_c({"node-a": 1, "node-b": 0, "node-y": 2}, (("node-b", 0), ("node-a", 1)), sel=B),
        ],
    ),
    PreFilterCase(
        "two spreadConstraints, and with podAffinity",
        pod(
            labels={"foo": ""},
            affinity_not_in=("node", ["node-x"]),
            constraints=[spread(1, "zone", DNS, F), spread(1, "node", DNS, F)],
        ),
        four_nodes(),
        SEVEN_PODS,
        want=[
            zone_c({"zone1": 3, "zone2": 4}, (("zone1", 3), ("zone2", 4))),
            node_c({"node-a": 2, "node-b": 1, "node-y": 4}, (("node-b", 1), ("node-a", 2))),
        ],
    ),
    PreFilterCase(
        "default constraints and a service",
        pod(labels={"foo": "bar", "baz": "kar"}),
        defaults=[spread(3, "node", DNS), spread(2, "node", SA), spread(5, "rack", DNS)],
        services=[{"foo": "bar"}],
        want=[
            Want((3, "node", {"matchLabels": {"foo": "bar"}}, 1, True, False), {}, NEW_PATHS),
            Want((5, "rack", {"matchLabels": {"foo": "bar"}}, 1, True, False), {}, NEW_PATHS),
        ],
    ),
    PreFilterCase(
        "default constraints and a service that doesn't match",
        pod(labels={"foo": "bar"}),
        defaults=[spread(3, "node", DNS)],
        services=[{"baz": "kep"}],
    ),
    PreFilterCase(
        "default constraints and a service, but pod has constraints",
        pod(
            labels={"foo": "bar", "baz": "tar"},
            constraints=[
                spread(1, "zone", DNS, {"matchLabels": {"baz": "tar"}}),
                spread(2, "planet", SA, {"matchLabels": {"fot": "rok"}}),
            ],
        ),
        defaults=[spread(2, "node", DNS)],
        services=[{"foo": "bar"}],
        want=[Want((1, "zone", {"matchLabels": {"baz": "tar"}}, 1, True, False), {}, NEW_PATHS)],
    ),
    PreFilterCase(
        "default soft constraints and a service",
        pod(labels={"foo": "bar"}),
        defaults=[spread(2, "node", SA)],
        services=[{"foo": "bar"}],
    ),
    PreFilterCase(
        "TpKeyToDomainsNum is calculated when MinDomains is enabled",
        pod(labels={"foo": ""}, constraints=[spread(1, "zone", DNS, F), spread(1, "node", DNS, F)]),
        four_nodes(),
        SEVEN_PODS,
        want=[
            zone_c({"zone1": 3, "zone2": 4}, (("zone1", 3), ("zone2", 4))),
            node_c({"node-a": 2, "node-b": 1, "node-x": 0, "node-y": 4}, (("node-x", 0), ("node-b", 1))),
        ],
    ),
    PreFilterCase(
        "NodeAffinityPolicy honored with labelSelectors",
        pod(labels={"foo": ""}, node_selector={"foo": ""}, constraints=[spread(1, "node", DNS, B)]),
        ABC_NODES,
        ABC_PODS,
        want=[node_c({"node-a": 1, "node-b": 2}, (("node-a", 1), ("node-b", 2)), sel=B)],
    ),
    PreFilterCase(
        "NodeAffinityPolicy ignored with labelSelectors",
        pod(
            labels={"foo": ""},
            node_selector={"foo": ""},
            constraints=[spread(1, "node", DNS, B, None, IGNORE)],
        ),
        ABC_NODES,
        ABC_PODS,
        want=[
            node_c({"node-a": 1, "node-b": 2, "node-c": 0}, (("node-c", 0), ("node-a", 1)), sel=B, aff=False)
        ],
    ),
    PreFilterCase(
        "NodeAffinityPolicy honored with nodeAffinity",
        pod(labels={"foo": ""}, affinity_in=("foo", [""]), constraints=[spread(1, "node", DNS, B)]),
        ABC_NODES,
        [
            ep("p-a", "node-a", bar=""),
            ep("p-c", "node-b", bar=""),
            ep("p-d", "node-b", bar=""),
            ep("p-e", "node-c"),
        ],
        want=[node_c({"node-a": 1, "node-b": 2}, (("node-a", 1), ("node-b", 2)), sel=B)],
    ),
    PreFilterCase(
        "NodeAffinityPolicy ignored with nodeAffinity",
        pod(
            labels={"foo": ""},
            affinity_in=("foo", [""]),
            constraints=[spread(1, "node", DNS, B, None, IGNORE)],
        ),
        ABC_NODES,
        ABC_PODS,
        want=[
            node_c({"node-a": 1, "node-b": 2, "node-c": 0}, (("node-c", 0), ("node-a", 1)), sel=B, aff=False)
        ],
    ),
    PreFilterCase(
        "NodeTaintsPolicy ignored",
        pod(labels={"foo": ""}, constraints=[spread(1, "node", DNS, B)]),
        TAINT_NODES,
        ABC_PODS,
        want=[node_c({"node-a": 1, "node-b": 2, "node-c": 0}, (("node-c", 0), ("node-a", 1)), sel=B)],
    ),
    PreFilterCase(
        "NodeTaintsPolicy honored",
        pod(labels={"foo": ""}, constraints=[spread(1, "node", DNS, B, None, None, HONOR)]),
        TAINT_NODES,
        ABC_PODS,
        want=[node_c({"node-a": 1, "node-b": 2}, (("node-a", 1), ("node-b", 2)), sel=B, taints=True)],
    ),
    PreFilterCase(
        "NodeTaintsPolicy honored with tolerated taints",
        pod(
            labels={"foo": ""},
            tolerations=[UNSCHED],
            constraints=[spread(1, "node", DNS, B, None, None, HONOR)],
        ),
        TAINT_NODES,
        ABC_PODS,
        want=[
            node_c(
                {"node-a": 1, "node-b": 2, "node-c": 0}, (("node-c", 0), ("node-a", 1)), sel=B, taints=True
            )
        ],
    ),
    PreFilterCase(
        "two node inclusion Constraints, zone: honor/ignore, node: ignore/ignore",
        pod(
            labels={"foo": ""},
            node_selector={"foo": ""},
            constraints=[spread(1, "zone", DNS, F), spread(1, "node", DNS, F, None, IGNORE)],
        ),
        [zoned("node-a", "zone1", foo=""), zoned("node-b", "zone1"), zoned("node-x", "zone2", foo="")],
        [ep("p-b1", "node-b", foo=""), ep("p-b2", "node-b", foo=""), ep("p-x1", "node-x", foo="")],
        want=[
            zone_c({"zone1": 0, "zone2": 1}, (("zone1", 0), ("zone2", 1))),
            node_c({"node-a": 0, "node-b": 2, "node-x": 1}, (("node-a", 0), ("node-x", 1)), aff=False),
        ],
    ),
    PreFilterCase(
        "two node inclusion Constraints, zone: honor/honor, node: honor/ignore",
        pod(
            labels={"foo": ""},
            constraints=[spread(1, "zone", DNS, F, None, None, HONOR), spread(1, "node", DNS, F)],
        ),
        [
            zoned("node-a", "zone1", foo=""),
            node("node-b", {"zone": "zone1", "node": "node-b"}, tainted=True),
            zoned("node-x", "zone2", foo=""),
        ],
        [ep("p-b1", "node-b", foo=""), ep("p-b2", "node-b", foo=""), ep("p-x1", "node-x", foo="")],
        want=[
            zone_c({"zone1": 0, "zone2": 1}, (("zone1", 0), ("zone2", 1)), taints=True),
            node_c({"node-a": 0, "node-b": 2, "node-x": 1}, (("node-a", 0), ("node-x", 1))),
        ],
    ),
    PreFilterCase(
        "two node inclusion Constraints, zone: honor/ignore, node: honor/ignore",
        pod(
            labels={"foo": ""},
            node_selector={"foo": ""},
            constraints=[spread(1, "zone", DNS, F), spread(1, "node", DNS, F)],
        ),
        [
            zoned("node-a", "zone1"),
            node("node-b", {"zone": "zone1", "node": "node-b", "foo": ""}, tainted=True),
            zoned("node-x", "zone2", foo=""),
            zoned("node-y", "zone2"),
        ],
        [
            ep("p-a1", "node-a", foo=""),
            ep("p-a2", "node-a", foo=""),
            ep("p-x1", "node-x", foo=""),
            ep("p-y1", "node-y", foo=""),
        ],
        want=[
            zone_c({"zone1": 0, "zone2": 1}, (("zone1", 0), ("zone2", 1))),
            node_c({"node-b": 0, "node-x": 1}, (("node-b", 0), ("node-x", 1))),
        ],
    ),
    PreFilterCase(
        "two node inclusion Constraints, zone: ignore/ignore, node: honor/honor",
        pod(
            labels={"foo": ""},
            node_selector={"foo": ""},
            constraints=[
                spread(1, "zone", DNS, F, None, IGNORE),
                spread(1, "node", DNS, F, None, None, HONOR),
            ],
        ),
        [
            zoned("node-a", "zone1"),
            node("node-b", {"zone": "zone1", "node": "node-b", "foo": ""}, tainted=True),
            zoned("node-x", "zone2", foo=""),
            zoned("node-y", "zone2", foo=""),
        ],
        [
            ep("p-a1", "node-a", foo=""),
            ep("p-a2", "node-a", foo=""),
            ep("p-x1", "node-x", foo=""),
            ep("p-x2", "node-x", foo=""),
            ep("p-y1", "node-y", foo=""),
        ],
        want=[
            zone_c({"zone1": 2, "zone2": 3}, (("zone1", 2), ("zone2", 3)), aff=False),
            node_c({"node-x": 2, "node-y": 1}, (("node-y", 1), ("node-x", 2)), taints=True),
        ],
    ),
    PreFilterCase(
        "matchLabelKeys ANDed with LabelSelector when LabelSelector isn't empty",
        pod(
            labels={"foo": "", "bar": "a"}, constraints=[spread(1, "zone", DNS, F, match_label_keys=["bar"])]
        ),
        four_nodes(),
        [
            ep("p-a1", "node-a", foo=""),
            ep("p-a2", "node-a", foo="", bar="a"),
            ep("p-b1", "node-b", foo=""),
            ep("p-y1", "node-y", foo="", bar="a"),
            ep("p-y2", "node-y", bar=""),
        ],
        want=[
            zone_c(
                {"zone1": 1, "zone2": 1},
                (("zone2", 1), ("zone1", 1)),
                sel={"matchLabels": {"bar": "a"}, "matchExpressions": F["matchExpressions"]},
            )
        ],
    ),
    PreFilterCase(
        "matchLabelKeys ANDed with LabelSelector when LabelSelector is empty",
        pod(labels={"foo": "a"}, constraints=[spread(1, "zone", DNS, {}, match_label_keys=["foo"])]),
        four_nodes(),
        FOO_A_PODS,
        want=[
            zone_c({"zone1": 3, "zone2": 2}, (("zone2", 2), ("zone1", 3)), sel={"matchLabels": {"foo": "a"}})
        ],
    ),
    PreFilterCase(
        "key in matchLabelKeys is ignored when LabelSelector is nil when feature gate enabled",
        pod(labels={"foo": ""}, constraints=[spread(1, "zone", DNS, None, match_label_keys=["bar"])]),
        four_nodes(),
        FOO_A_PODS,
        want=[zone_c({"zone1": 0, "zone2": 0}, (("zone2", 0), ("zone1", 0)), sel=None)],
    ),
    PreFilterCase(
        # Upstream runs this with the gate off; the expectation is the same with it on.
        "no pod is matched when LabelSelector is nil when feature gate disabled",
        pod(labels={"foo": ""}, constraints=[spread(1, "zone", DNS, None, match_label_keys=["bar"])]),
        four_nodes(),
        FOO_A_PODS,
        want=[zone_c({"zone1": 0, "zone2": 0}, (("zone2", 0), ("zone1", 0)), sel=None)],
    ),
    PreFilterCase(
        "key in matchLabelKeys is ignored when it isn't exist in pod.labels",
        pod(labels={"foo": ""}, constraints=[spread(1, "zone", DNS, F, match_label_keys=["bar"])]),
        four_nodes(),
        FOO_A_PODS,
        want=[zone_c({"zone1": 3, "zone2": 2}, (("zone2", 2), ("zone1", 3)))],
    ),
    PreFilterCase(
        "two spreadConstraints with the same topologyKey",
        pod(
            labels={"foo": "", "bar": ""}, constraints=[spread(1, "zone", DNS, F), spread(1, "zone", DNS, B)]
        ),
        four_nodes(),
        [
            ep("p-a1", "node-a", foo="", bar=""),
            ep("p-b1", "node-b", foo=""),
            ep("p-x1", "node-x", bar=""),
            ep("p-y1", "node-y", foo="", bar=""),
            ep("p-y2", "node-y", bar=""),
        ],
        want=[
            zone_c({"zone1": 2, "zone2": 1}, (("zone2", 1), ("zone1", 2))),
            zone_c({"zone1": 1, "zone2": 3}, (("zone1", 1), ("zone2", 3)), sel=B),
        ],
    ),
    PreFilterCase(
        "skip if not specified",
        pod(labels={"foo": ""}),
        [zoned("node-a", "zone1")],
    ),
]


def _services(selectors: list[dict[str, str]]) -> dict[str, Service]:
    return {
        f"default/svc-{i}": msgspec.convert(
            {"metadata": {"name": f"svc-{i}", "namespace": "default"}, "spec": {"selector": sel}}, Service
        )
        for i, sel in enumerate(selectors)
    }


def _sorted_paths(paths: tuple[tuple[str, int], tuple[str, int]]) -> tuple[tuple[str, int], tuple[str, int]]:
    """Upstream's comparer: values tied on the count are compared in name order."""
    (v0, n0), (v1, n1) = paths
    if n0 == n1 and v0 > v1:
        v0, v1 = v1, v0
    return (v0, n0), (v1, n1)


def assert_state(got: PreFilterState, want: list[Want]) -> None:
    assert len(got.constraints) == len(want)
    for c, d, w in zip(got.constraints, got.domains, want, strict=True):
        max_skew, key, sel, min_domains, aff, taints = w.spec
        assert (c.max_skew, c.topology_key, c.min_domains) == (max_skew, key, min_domains)
        assert (c.honor_node_affinity, c.honor_node_taints) == (aff, taints)
        assert c.key == sel_key(sel)
        assert d.as_dict() == w.counts
        assert _sorted_paths(d.paths.as_tuple()) == _sorted_paths(w.paths)


def run_pre_filter(
    case_pod: Pod,
    nodes: list[Node],
    existing: list[Pod],
    *,
    indexed: bool = True,
    defaults: list[dict[str, Any]] | None = None,
    services: list[dict[str, str]] | None = None,
) -> tuple[Any, CycleState, Snapshot, Any]:
    snap = Snapshot.build(nodes, existing)
    snap.objects.services = _services(services or [])
    plugin = make_plugin(snap, [constraint(**_kwargs(d)) for d in defaults or []])
    cs = CycleState()
    node_list = snap.nodes if indexed else list(reversed(snap.nodes))
    _, status = plugin.pre_filter(cs, PodInfo(case_pod), node_list)
    return plugin, cs, snap, status


def _kwargs(d: dict[str, Any]) -> dict[str, Any]:
    return {"max_skew": d["maxSkew"], "key": d["topologyKey"], "when": d["whenUnsatisfiable"]}


@pytest.mark.parametrize("indexed", [True, False], ids=["indexed", "node-by-node"])
@pytest.mark.parametrize("case", PRE_FILTER_CASES, ids=lambda c: c.name)
def test_pre_filter_state(case: PreFilterCase, indexed: bool) -> None:
    _, cs, _, status = run_pre_filter(
        case.pod, case.nodes, case.existing, indexed=indexed, defaults=case.defaults, services=case.services
    )
    if case.want is None:
        assert status is not None and status.code == Code.SKIP
        return
    assert status is None
    got = cs.read(PRE_FILTER_STATE_KEY)
    assert isinstance(got, PreFilterState)
    assert_state(got, case.want)


# --- AddPod / RemovePod ------------------------------------------------------------------------------

ZONE_F = spread(1, "zone", DNS, F)
NODE_F = spread(1, "node", DNS, F)
AB_NODES = [zoned("node-a", "zone1"), zoned("node-b", "zone1")]
AX_NODES = [zoned("node-a", "zone1"), zoned("node-x", "zone2")]
ABX_NODES = [zoned("node-a", "zone1"), zoned("node-b", "zone1"), zoned("node-x", "zone2")]
FOOBAR_AB = [
    node("node-a", {"zone": "zone1", "node": "node-a", "foo": "bar"}),
    node("node-b", {"zone": "zone2", "node": "node-b", "foo": ""}),
]
TAINTED_AB = [node("node-a", {"zone": "zone1", "node": "node-a"}, tainted=True), zoned("node-b", "zone2")]


@dataclass
class UpdateCase:
    name: str
    preemptor: Pod
    changed: Pod
    existing: list[Pod]
    node_idx: int
    nodes: list[Node]
    want: list[Want]


ADD_POD_CASES = [
    UpdateCase(
        "node a and b both impact current min match",
        pod(labels={"foo": ""}, constraints=[NODE_F]),
        ep("p-a1", "node-a", foo=""),
        [],
        0,
        AB_NODES,
        [node_c({"node-a": 1, "node-b": 0}, (("node-b", 0), ("node-a", 1)))],
    ),
    UpdateCase(
        "only node a impacts current min match",
        pod(labels={"foo": ""}, constraints=[NODE_F]),
        ep("p-a1", "node-a", foo=""),
        [ep("p-b1", "node-b", foo="")],
        0,
        AB_NODES,
        [node_c({"node-a": 1, "node-b": 1}, (("node-a", 1), ("node-b", 1)))],
    ),
    UpdateCase(
        "add a pod in a different namespace doesn't change topologyKeyToMinPodsMap",
        pod(labels={"foo": ""}, constraints=[NODE_F]),
        ep("p-a1", "node-a", "ns1", foo=""),
        [ep("p-b1", "node-b", foo="")],
        0,
        AB_NODES,
        [node_c({"node-a": 0, "node-b": 1}, (("node-a", 0), ("node-b", 1)))],
    ),
    UpdateCase(
        "add pod on non-critical node won't trigger re-calculation",
        pod(labels={"foo": ""}, constraints=[NODE_F]),
        ep("p-b2", "node-b", foo=""),
        [ep("p-b1", "node-b", foo="")],
        1,
        AB_NODES,
        [node_c({"node-a": 0, "node-b": 2}, (("node-a", 0), ("node-b", 2)))],
    ),
    UpdateCase(
        "node a and x both impact topologyKeyToMinPodsMap on zone and node",
        pod(labels={"foo": ""}, constraints=[ZONE_F, NODE_F]),
        ep("p-a1", "node-a", foo=""),
        [],
        0,
        AX_NODES,
        [
            zone_c({"zone1": 1, "zone2": 0}, (("zone2", 0), ("zone1", 1))),
            node_c({"node-a": 1, "node-x": 0}, (("node-x", 0), ("node-a", 1))),
        ],
    ),
    UpdateCase(
        "only node a impacts topologyKeyToMinPodsMap on zone and node",
        pod(labels={"foo": ""}, constraints=[ZONE_F, NODE_F]),
        ep("p-a1", "node-a", foo=""),
        [ep("p-x1", "node-x", foo="")],
        0,
        AX_NODES,
        [
            zone_c({"zone1": 1, "zone2": 1}, (("zone1", 1), ("zone2", 1))),
            node_c({"node-a": 1, "node-x": 1}, (("node-a", 1), ("node-x", 1))),
        ],
    ),
    UpdateCase(
        "node a impacts topologyKeyToMinPodsMap on node, node x impacts topologyKeyToMinPodsMap on zone",
        pod(labels={"foo": ""}, constraints=[ZONE_F, NODE_F]),
        ep("p-a1", "node-a", foo=""),
        [ep("p-b1", "node-b", foo=""), ep("p-b2", "node-b", foo=""), ep("p-x1", "node-x", foo="")],
        0,
        ABX_NODES,
        [
            zone_c({"zone1": 3, "zone2": 1}, (("zone2", 1), ("zone1", 3))),
            node_c({"node-a": 1, "node-b": 2, "node-x": 1}, (("node-a", 1), ("node-x", 1))),
        ],
    ),
    UpdateCase(
        "Constraints hold different labelSelectors, node a impacts topologyKeyToMinPodsMap on zone",
        pod(labels={"foo": "", "bar": ""}, constraints=[ZONE_F, spread(1, "node", DNS, B)]),
        ep("p-a1", "node-a", foo=""),
        [
            ep("p-b1", "node-b", foo="", bar=""),
            ep("p-x1", "node-x", foo="", bar=""),
            ep("p-x2", "node-x", bar=""),
        ],
        0,
        ABX_NODES,
        [
            zone_c({"zone1": 2, "zone2": 1}, (("zone2", 1), ("zone1", 2))),
            node_c({"node-a": 0, "node-b": 1, "node-x": 2}, (("node-a", 0), ("node-b", 1)), sel=B),
        ],
    ),
    UpdateCase(
        "Constraints hold different labelSelectors, node a impacts topologyKeyToMinPodsMap on both zone "
        "and node",
        pod(labels={"foo": "", "bar": ""}, constraints=[ZONE_F, spread(1, "node", DNS, B)]),
        ep("p-a1", "node-a", foo="", bar=""),
        [ep("p-b1", "node-b", bar=""), ep("p-x1", "node-x", foo="", bar=""), ep("p-x2", "node-x", bar="")],
        0,
        ABX_NODES,
        [
            zone_c({"zone1": 1, "zone2": 1}, (("zone1", 1), ("zone2", 1))),
            node_c({"node-a": 1, "node-b": 1, "node-x": 2}, (("node-a", 1), ("node-b", 1)), sel=B),
        ],
    ),
    UpdateCase(
        "add a pod when scheduling node affinity unmatched pod with NodeInclusionPolicy enabled",
        pod(labels={"foo": ""}, affinity_not_in=("foo", ["bar"]), constraints=[ZONE_F]),
        ep("p-a1", "node-a", foo="", zone="zone1"),
        [ep("p-a2", "node-a", foo="", zone="zone1"), ep("p-b1", "node-b", foo="", zone="zone2")],
        0,
        FOOBAR_AB,
        [zone_c({"zone2": 1}, (("zone2", 1), ("", MAX_INT32)))],
    ),
    UpdateCase(
        "add a pod when scheduling node affinity matched pod with NodeInclusionPolicy enabled",
        pod(labels={"foo": ""}, constraints=[ZONE_F]),
        ep("p-b1", "node-b", foo="", zone="zone2"),
        [ep("p-a1", "node-a", foo="", zone="zone1"), ep("p-b2", "node-b", foo="", zone="zone2")],
        1,
        FOOBAR_AB,
        [zone_c({"zone1": 1, "zone2": 2}, (("zone1", 1), ("zone2", 2)))],
    ),
    UpdateCase(
        "add a label selector not matched pod when with NodeInclusionPolicy enabled",
        pod(labels={"foo": ""}, constraints=[ZONE_F]),
        ep("p-b1", "node-b", zone="zone2"),
        [ep("p-a1", "node-a", foo="", zone="zone1"), ep("p-b2", "node-b", foo="", zone="zone2")],
        1,
        FOOBAR_AB,
        [zone_c({"zone1": 1, "zone2": 1}, (("zone1", 1), ("zone2", 1)))],
    ),
    # Upstream runs this one with the gate off; nodeTaintsPolicy defaults to Ignore, so it holds with it on.
    UpdateCase(
        "add a pod when scheduling taint untolerated pod with NodeInclusionPolicy disabled",
        pod(labels={"foo": ""}, constraints=[ZONE_F]),
        ep("p-b1", "node-b", foo="", zone="zone2"),
        [ep("p-a1", "node-a", foo="", zone="zone1"), ep("p-b2", "node-b", foo="", zone="zone2")],
        1,
        TAINTED_AB,
        [zone_c({"zone1": 1, "zone2": 2}, (("zone1", 1), ("zone2", 2)))],
    ),
    UpdateCase(
        "add a pod when scheduling taint tolerated pod with NodeInclusionPolicy enabled",
        pod(labels={"foo": ""}, tolerations=[UNSCHED], constraints=[ZONE_F]),
        ep("p-b1", "node-b", foo="", zone="zone2"),
        [ep("p-a1", "node-a", foo="", zone="zone1"), ep("p-b2", "node-b", foo="", zone="zone2")],
        1,
        TAINTED_AB,
        [zone_c({"zone1": 1, "zone2": 2}, (("zone1", 1), ("zone2", 2)))],
    ),
]

FOUR_ZONED_1111 = [
    ep("p-a1", "node-a", foo=""),
    ep("p-b1", "node-b", foo=""),
    ep("p-x1", "node-x", foo=""),
    ep("p-y1", "node-y", foo=""),
]

# ``changed`` is the removed pod and ``existing`` the whole cluster. Upstream's table removes
# ``existingPods[deletedPodIdx]`` (index 0 when unset), which the last two cases below reproduce.
_R_A1 = ep("p-a1", "node-a", foo="")
_R_X1 = ep("p-x1", "node-x", foo="")
_R_A0 = ep("p-a0", "node-a", bar="")
_R_A2Z = ep("p-a2", "node-a", foo="", zone="zone1")
_R_A1Z = ep("p-a1", "node-a", foo="", zone="zone1")
REMOVE_POD_CASES = [
    UpdateCase(
        "one spreadConstraint on zone, topologyKeyToMinPodsMap unchanged",
        pod(labels={"foo": ""}, constraints=[ZONE_F]),
        _R_A1,
        [_R_A1, ep("p-b1", "node-b", foo=""), ep("p-x1", "node-x", foo="")],
        0,
        ABX_NODES,
        [zone_c({"zone1": 1, "zone2": 1}, (("zone1", 1), ("zone2", 1)))],
    ),
    UpdateCase(
        "one spreadConstraint on node, topologyKeyToMinPodsMap changed",
        pod(labels={"foo": ""}, constraints=[ZONE_F]),
        FOUR_ZONED_1111[0],
        FOUR_ZONED_1111,
        0,
        four_nodes(),
        [zone_c({"zone1": 1, "zone2": 2}, (("zone1", 1), ("zone2", 2)))],
    ),
    UpdateCase(
        "delete an irrelevant pod won't help",
        pod(labels={"foo": ""}, constraints=[ZONE_F]),
        _R_A0,
        [_R_A0, *FOUR_ZONED_1111],
        0,
        four_nodes(),
        [zone_c({"zone1": 2, "zone2": 2}, (("zone1", 2), ("zone2", 2)))],
    ),
    UpdateCase(
        "two spreadConstraints",
        pod(labels={"foo": ""}, constraints=[ZONE_F, NODE_F]),
        _R_X1,
        [
            ep("p-a1", "node-a", foo=""),
            ep("p-a2", "node-a", foo=""),
            ep("p-b1", "node-b", foo=""),
            _R_X1,
            ep("p-x2", "node-x", foo=""),
        ],
        2,
        ABX_NODES,
        [
            zone_c({"zone1": 3, "zone2": 1}, (("zone2", 1), ("zone1", 3))),
            node_c({"node-a": 2, "node-b": 1, "node-x": 1}, (("node-b", 1), ("node-x", 1))),
        ],
    ),
    UpdateCase(
        "remove a pod when scheduling node affinity unmatched pod with NodeInclusionPolicy enabled",
        pod(labels={"foo": ""}, affinity_not_in=("foo", ["bar"]), constraints=[ZONE_F]),
        _R_A2Z,
        [_R_A2Z, ep("p-b1", "node-b", foo="", zone="zone2")],
        0,
        FOOBAR_AB,
        [zone_c({"zone2": 1}, (("zone2", 1), ("", MAX_INT32)))],
    ),
    UpdateCase(
        "remove a pod when scheduling node affinity matched pod with NodeInclusionPolicy enabled",
        pod(labels={"foo": ""}, constraints=[ZONE_F]),
        _R_A1Z,
        [_R_A1Z, ep("p-b2", "node-b", foo="", zone="zone2")],
        1,
        FOOBAR_AB,
        [zone_c({"zone1": 1, "zone2": 0}, (("zone2", 0), ("zone1", 1)))],
    ),
]


@pytest.mark.parametrize("case", ADD_POD_CASES, ids=lambda c: c.name)
def test_pre_filter_state_add_pod(case: UpdateCase) -> None:
    plugin, cs, snap, status = run_pre_filter(case.preemptor, case.nodes, case.existing)
    assert status is None
    ni = snap.get(case.nodes[case.node_idx].metadata.name)
    assert plugin.add_pod(cs, PodInfo(case.preemptor), PodInfo(case.changed), ni) is None
    got = cs.read(PRE_FILTER_STATE_KEY)
    assert isinstance(got, PreFilterState)
    assert_state(got, case.want)


@pytest.mark.parametrize("case", REMOVE_POD_CASES, ids=lambda c: c.name)
def test_pre_filter_state_remove_pod(case: UpdateCase) -> None:
    plugin, cs, snap, status = run_pre_filter(case.preemptor, case.nodes, case.existing)
    assert status is None
    ni = snap.get(case.nodes[case.node_idx].metadata.name)
    assert plugin.remove_pod(cs, PodInfo(case.preemptor), PodInfo(case.changed), ni) is None
    got = cs.read(PRE_FILTER_STATE_KEY)
    assert isinstance(got, PreFilterState)
    assert_state(got, case.want)


def test_remove_pod_delete_a_non_existing_pod_wont_help() -> None:
    """Upstream "delete a non-existing pod won't help": removing an unmatched pod changes nothing."""
    preemptor = pod(labels={"foo": ""}, constraints=[ZONE_F])
    plugin, cs, snap, _ = run_pre_filter(preemptor, four_nodes(), FOUR_ZONED_1111)
    gone = PodInfo(ep("p-a0", "node-a", bar=""))
    assert plugin.remove_pod(cs, PodInfo(preemptor), gone, snap.get("node-a")) is None
    got = cs.read(PRE_FILTER_STATE_KEY)
    assert isinstance(got, PreFilterState)
    assert_state(got, [zone_c({"zone1": 2, "zone2": 2}, (("zone1", 2), ("zone2", 2)))])


def test_state_clone_is_independent() -> None:
    preemptor = pod(labels={"foo": ""}, constraints=[ZONE_F])
    plugin, cs, snap, _ = run_pre_filter(preemptor, four_nodes(), FOUR_ZONED_1111)
    copy = cs.clone()
    plugin.add_pod(copy, PodInfo(preemptor), PodInfo(ep("p-new", "node-a", foo="")), snap.get("node-a"))
    original = cs.read(PRE_FILTER_STATE_KEY)
    cloned = copy.read(PRE_FILTER_STATE_KEY)
    assert isinstance(original, PreFilterState) and isinstance(cloned, PreFilterState)
    assert original.domains[0].as_dict() == {"zone1": 2, "zone2": 2}
    assert cloned.domains[0].as_dict() == {"zone1": 3, "zone2": 2}


# --- Filter -------------------------------------------------------------------------------------------


@dataclass
class FilterCase:
    name: str
    pod: Pod
    nodes: list[Node]
    existing: list[Pod]
    want: dict[str, Code]


def _codes(nodes: list[Node], *codes: Code) -> dict[str, Code]:
    return {n.metadata.name: c for n, c in zip(nodes, codes, strict=True)}


AB_X_Y = four_nodes()
A1A2B1Y3 = [
    ep("p-a1", "node-a", foo=""),
    ep("p-a2", "node-a", foo=""),
    ep("p-b1", "node-b", foo=""),
    ep("p-y1", "node-y", foo=""),
    ep("p-y2", "node-y", foo=""),
    ep("p-y3", "node-y", foo=""),
]
ABC_BY_NODE = nodes_by_label("node-a", "node-b", "node-c")
AB2C1 = [
    ep("p-a1", "node-a", foo=""),
    ep("p-a2", "node-a", foo=""),
    ep("p-b1", "node-b", foo=""),
    ep("p-b2", "node-b", foo=""),
    ep("p-c1", "node-c", foo=""),
]
FOO_NODES = [
    node("node-a", {"node": "node-a", "foo": ""}),
    node("node-b", {"node": "node-b", "foo": ""}),
    node("node-x", {"node": "node-x", "foo": ""}),
    node("node-y", {"node": "node-y"}),
]
FOO_NODES_TAINTED_Y = [*FOO_NODES[:3], node("node-y", {"node": "node-y"}, tainted=True)]
B1A_B2B_Y1Y = [ep("p-b1", "node-a", foo=""), ep("p-b2", "node-b", foo=""), ep("p-y1", "node-y", foo="")]

SINGLE_CONSTRAINT_CASES = [
    FilterCase(
        "no existing pods",
        pod(labels={"foo": ""}, constraints=[ZONE_F]),
        AB_X_Y,
        [],
        _codes(AB_X_Y, S, S, S, S),
    ),
    FilterCase(
        "no existing pods, incoming pod doesn't match itself",
        pod(labels={"foo": ""}, constraints=[spread(1, "zone", DNS, B)]),
        AB_X_Y,
        [],
        _codes(AB_X_Y, S, S, S, S),
    ),
    FilterCase(
        "existing pods in a different namespace do not count",
        pod(labels={"foo": ""}, constraints=[ZONE_F]),
        AB_X_Y,
        [
            ep("p-a1", "node-a", "ns1", foo=""),
            ep("p-b1", "node-a", "ns2", foo=""),
            ep("p-x1", "node-x", foo=""),
            ep("p-y1", "node-y", foo=""),
        ],
        _codes(AB_X_Y, S, S, U, U),
    ),
    FilterCase(
        "existing pods do not match null selector",
        pod(labels={"foo": ""}, constraints=[spread(1, "zone", DNS, None)]),
        AB_X_Y,
        [ep("p-x1", "node-x", foo=""), ep("p-y1", "node-y", foo="")],
        _codes(AB_X_Y, S, S, S, S),
    ),
    FilterCase(
        "pods spread across zones as 3/3, all nodes fit",
        pod(labels={"foo": ""}, constraints=[ZONE_F]),
        AB_X_Y,
        A1A2B1Y3,
        _codes(AB_X_Y, S, S, S, S),
    ),
    FilterCase(
        "pods spread across zones as 1/2 due to absence of label 'zone' on node-b",
        pod(labels={"foo": ""}, constraints=[ZONE_F]),
        [
            zoned("node-a", "zone1"),
            node("node-b", {"zon": "zone1", "node": "node-b"}),
            zoned("node-x", "zone2"),
            zoned("node-y", "zone2"),
        ],
        [
            ep("p-a1", "node-a", foo=""),
            ep("p-b1", "node-b", foo=""),
            ep("p-x1", "node-x", foo=""),
            ep("p-y1", "node-y", foo=""),
        ],
        {"node-a": S, "node-b": UU, "node-x": U, "node-y": U},
    ),
    FilterCase(
        "pod cannot be scheduled as all nodes don't have label 'rack'",
        pod(labels={"foo": ""}, constraints=[spread(1, "rack", DNS, F)]),
        [zoned("node-a", "zone1"), zoned("node-x", "zone2")],
        [],
        {"node-a": UU, "node-x": UU},
    ),
    FilterCase(
        "pods spread across nodes as 2/1/0/3, only node-x fits",
        pod(labels={"foo": ""}, constraints=[NODE_F]),
        AB_X_Y,
        A1A2B1Y3,
        _codes(AB_X_Y, U, U, S, U),
    ),
    FilterCase(
        "pods spread across nodes as 2/1/0/3, maxSkew is 2, node-b and node-x fit",
        pod(labels={"foo": ""}, constraints=[spread(2, "node", DNS, F)]),
        AB_X_Y,
        A1A2B1Y3,
        _codes(AB_X_Y, U, S, S, U),
    ),
    FilterCase(
        "pods spread across nodes as 2/1/0/3, but pod doesn't match itself",
        pod(labels={"bar": ""}, constraints=[NODE_F]),
        AB_X_Y,
        A1A2B1Y3,
        _codes(AB_X_Y, U, S, S, U),
    ),
    FilterCase(
        "incoming pod has nodeAffinity, pods spread as 2/~1~/~0~/3, hence node-a fits",
        pod(labels={"foo": ""}, affinity_in=("node", ["node-a", "node-y"]), constraints=[NODE_F]),
        AB_X_Y,
        A1A2B1Y3,
        _codes(AB_X_Y, S, S, S, U),
    ),
    FilterCase(
        "terminating Pods should be excluded",
        pod(labels={"foo": ""}, constraints=[NODE_F]),
        nodes_by_label("node-a", "node-b"),
        [ep("p-a", "node-a", terminating=True, foo=""), ep("p-b", "node-b", foo="")],
        {"node-a": S, "node-b": U},
    ),
    FilterCase(
        "incoming pod has nodeAffinity, pods spread as 0/~2~/0/1, hence node-a fits",
        pod(labels={"foo": ""}, affinity_not_in=("node", ["node-b"]), constraints=[ZONE_F]),
        AB_X_Y,
        [ep("p-b1", "node-b", foo=""), ep("p-b2", "node-b", foo=""), ep("p-y1", "node-y", foo="")],
        _codes(AB_X_Y, S, S, U, U),
    ),
    FilterCase(
        "pods spread across nodes as 2/2/1, maxSkew is 2, and the number of domains < minDomains, then the "
        "third node fits",
        pod(labels={"foo": ""}, constraints=[spread(2, "node", DNS, F, 4)]),
        ABC_BY_NODE,
        AB2C1,
        _codes(ABC_BY_NODE, U, U, S),
    ),
    FilterCase(
        "pods spread across nodes as 2/2/1, maxSkew is 2, and the number of domains > minDomains, then the "
        "all nodes fit",
        pod(labels={"foo": ""}, constraints=[spread(2, "node", DNS, F, 2)]),
        ABC_BY_NODE,
        AB2C1,
        _codes(ABC_BY_NODE, S, S, S),
    ),
    FilterCase(
        "pods spread across zone as 2/1, maxSkew is 2 and the number of domains < minDomains, then the third "
        "and fourth nodes fit",
        pod(labels={"foo": ""}, constraints=[spread(2, "zone", DNS, F, 3)]),
        AB_X_Y,
        [ep("p-b1", "node-a", foo=""), ep("p-b2", "node-b", foo=""), ep("p-y1", "node-y", foo="")],
        _codes(AB_X_Y, U, U, S, S),
    ),
    FilterCase(
        "pods spread across zone as 2/1, maxSkew is 2 and the number of domains > minDomains, then the all "
        "nodes fit",
        pod(labels={"foo": ""}, constraints=[spread(2, "zone", DNS, F, 1)]),
        AB_X_Y,
        [ep("p-b1", "node-a", foo=""), ep("p-b2", "node-b", foo=""), ep("p-y1", "node-y", foo="")],
        _codes(AB_X_Y, S, S, S, S),
    ),
    FilterCase(
        "NodeAffinityPolicy honored with labelSelectors",
        pod(labels={"foo": ""}, node_selector={"foo": ""}, constraints=[NODE_F]),
        FOO_NODES,
        B1A_B2B_Y1Y,
        _codes(FOO_NODES, U, U, S, S),
    ),
    FilterCase(
        "NodeAffinityPolicy ignored with labelSelectors",
        pod(
            labels={"foo": ""},
            node_selector={"foo": ""},
            constraints=[spread(1, "node", DNS, F, None, IGNORE)],
        ),
        FOO_NODES,
        B1A_B2B_Y1Y,
        _codes(FOO_NODES, U, U, S, U),
    ),
    FilterCase(
        "NodeAffinityPolicy honored with nodeAffinity",
        pod(labels={"foo": ""}, affinity_in=("foo", [""]), constraints=[NODE_F]),
        FOO_NODES,
        B1A_B2B_Y1Y,
        _codes(FOO_NODES, U, U, S, S),
    ),
    FilterCase(
        "NodeAffinityPolicy ignored with labelSelectors",
        pod(
            labels={"foo": ""},
            affinity_in=("foo", [""]),
            constraints=[spread(1, "node", DNS, F, None, IGNORE)],
        ),
        FOO_NODES,
        B1A_B2B_Y1Y,
        _codes(FOO_NODES, U, U, S, U),
    ),
    FilterCase(
        "NodeTaintsPolicy honored",
        pod(labels={"foo": ""}, constraints=[spread(1, "node", DNS, F, None, None, HONOR)]),
        FOO_NODES_TAINTED_Y,
        B1A_B2B_Y1Y,
        _codes(FOO_NODES, U, U, S, S),
    ),
    FilterCase(
        "NodeTaintsPolicy ignored",
        pod(labels={"foo": ""}, constraints=[NODE_F]),
        FOO_NODES_TAINTED_Y,
        B1A_B2B_Y1Y,
        _codes(FOO_NODES, U, U, S, U),
    ),
]

FB = {"foo": "", "bar": ""}
ZONE_FOO_NODES = [
    zoned("node-a", "zone1", foo=""),
    zoned("node-b", "zone1", foo=""),
    zoned("node-x", "zone2", foo=""),
    zoned("node-y", "zone2"),
]
ZONE_FOO_TAINTED_Y = [*ZONE_FOO_NODES[:3], node("node-y", {"zone": "zone2", "node": "node-y"}, tainted=True)]
ZONE_MIXED = [
    zoned("node-a", "zone1", foo=""),
    zoned("node-b", "zone1"),
    zoned("node-x", "zone2", foo=""),
    node("node-y", {"zone": "zone2", "node": "node-y", "foo": ""}, tainted=True),
]
A1B1Y1 = [ep("p-a1", "node-a", foo=""), ep("p-b1", "node-b", foo=""), ep("p-y1", "node-y", foo="")]
TWO_ZONE_PODS = [
    ep("p-a1", "node-a", foo="", bar=""),
    ep("p-a2", "node-a", foo=""),
    ep("p-b1", "node-b", foo="", bar=""),
    ep("p-y1", "node-y", foo=""),
    ep("p-y2", "node-y", foo="", bar=""),
    ep("p-y3", "node-y", foo=""),
]

MULTIPLE_CONSTRAINTS_CASES = [
    FilterCase(
        "two Constraints on zone and node, spreads = [3/3, 2/1/0/3]",
        pod(labels={"foo": ""}, constraints=[ZONE_F, NODE_F]),
        AB_X_Y,
        A1A2B1Y3,
        _codes(AB_X_Y, U, U, S, U),
    ),
    FilterCase(
        "two Constraints on zone and node, spreads = [3/4, 2/1/0/4]",
        pod(labels={"foo": ""}, constraints=[ZONE_F, NODE_F]),
        AB_X_Y,
        [*A1A2B1Y3, ep("p-y4", "node-y", foo="")],
        _codes(AB_X_Y, U, U, U, U),
    ),
    FilterCase(
        "Constraints hold different labelSelectors, spreads = [1/0, 1/0/0/1]",
        pod(labels=FB, constraints=[ZONE_F, spread(1, "node", DNS, B)]),
        AB_X_Y,
        [ep("p-a1", "node-a", foo=""), ep("p-y1", "node-y", bar="")],
        _codes(AB_X_Y, U, U, S, U),
    ),
    FilterCase(
        "Constraints hold different labelSelectors, spreads = [1/0, 0/0/1/1]",
        pod(labels=FB, constraints=[ZONE_F, spread(1, "node", DNS, B)]),
        AB_X_Y,
        [ep("p-a1", "node-a", foo=""), ep("p-x1", "node-x", bar=""), ep("p-y1", "node-y", bar="")],
        _codes(AB_X_Y, U, U, U, U),
    ),
    FilterCase(
        "Constraints hold different labelSelectors, spreads = [2/3, 1/0/0/1]",
        pod(labels=FB, constraints=[ZONE_F, spread(1, "node", DNS, B)]),
        AB_X_Y,
        [
            ep("p-a1", "node-a", foo=""),
            ep("p-a2", "node-a", foo="", bar=""),
            ep("p-y1", "node-y", foo=""),
            ep("p-y2", "node-y", foo="", bar=""),
            ep("p-y3", "node-y", foo=""),
        ],
        _codes(AB_X_Y, U, S, U, U),
    ),
    FilterCase(
        "Constraints hold different labelSelectors but pod doesn't match itself on 'zone' constraint",
        pod(labels={"bar": ""}, constraints=[ZONE_F, spread(1, "node", DNS, B)]),
        AB_X_Y,
        [ep("p-a1", "node-a", foo=""), ep("p-x1", "node-x", bar=""), ep("p-y1", "node-y", bar="")],
        _codes(AB_X_Y, S, S, U, U),
    ),
    FilterCase(
        "two Constraints on zone and node, absence of label 'node' on node-x, spreads = [1/1, 1/0/0/1]",
        pod(labels={"foo": ""}, constraints=[ZONE_F, NODE_F]),
        [
            zoned("node-a", "zone1"),
            zoned("node-b", "zone1"),
            node("node-x", {"zone": "zone2"}),
            zoned("node-y", "zone2"),
        ],
        [ep("p-a1", "node-a", foo=""), ep("p-y3", "node-y", foo="")],
        {"node-a": U, "node-b": S, "node-x": UU, "node-y": U},
    ),
    FilterCase(
        "two node inclusion Constraints, zone: honor/ignore, node: ignore/ignore",
        pod(
            labels={"foo": ""},
            node_selector={"foo": ""},
            constraints=[ZONE_F, spread(1, "node", DNS, F, None, IGNORE)],
        ),
        ZONE_FOO_NODES,
        A1B1Y1,
        _codes(AB_X_Y, U, U, S, U),
    ),
    FilterCase(
        "two node inclusion Constraints, zone: honor/honor, node: honor/ignore",
        pod(labels={"foo": ""}, constraints=[spread(1, "zone", DNS, F, None, None, HONOR), NODE_F]),
        ZONE_FOO_TAINTED_Y,
        A1B1Y1,
        _codes(AB_X_Y, U, U, S, U),
    ),
    FilterCase(
        "two node inclusion Constraints, zone: honor/ignore, node: honor/ignore",
        pod(labels={"foo": ""}, node_selector={"foo": ""}, constraints=[ZONE_F, NODE_F]),
        ZONE_MIXED,
        A1B1Y1,
        _codes(AB_X_Y, U, S, S, U),
    ),
    FilterCase(
        "two node inclusion Constraints, zone: honor/honor, node: ignore/ignore",
        pod(
            labels={"foo": ""},
            node_selector={"foo": ""},
            constraints=[
                spread(1, "zone", DNS, F, None, None, HONOR),
                spread(1, "node", DNS, F, None, IGNORE),
            ],
        ),
        ZONE_MIXED,
        A1B1Y1,
        _codes(AB_X_Y, U, U, S, U),
    ),
    FilterCase(
        "two Constraints on zone, spreads = [3/3, 2/1]",
        pod(labels=FB, constraints=[spread(1, "zone", DNS, B), ZONE_F]),
        AB_X_Y,
        TWO_ZONE_PODS,
        _codes(AB_X_Y, U, U, S, S),
    ),
    FilterCase(
        "two Constraints on zone, spreads = [3/4, 2/1]",
        pod(labels=FB, constraints=[spread(1, "zone", DNS, B), ZONE_F]),
        AB_X_Y,
        [*TWO_ZONE_PODS, ep("p-y4", "node-y", foo="")],
        _codes(AB_X_Y, U, U, U, U),
    ),
]


def _check_filter(case: FilterCase) -> None:
    plugin, cs, snap, status = run_pre_filter(case.pod, case.nodes, case.existing)
    assert status is None
    pi = PodInfo(case.pod)
    got = {}
    for ni in snap.nodes:
        st = plugin.filter(cs, pi, ni)
        got[ni.name] = Code.SUCCESS if st is None else st.code
        if st is not None:
            reason = (
                "node(s) didn't match pod topology spread constraints (missing required label)"
                if st.code == UU
                else "node(s) didn't match pod topology spread constraints"
            )
            assert st.reasons == (reason,)
    assert got == case.want
    rows = np.arange(len(snap.nodes), dtype=np.intp)
    batch = plugin.filter_batch(cs, pi, snap, rows)
    assert batch.tolist() == [got[ni.name] == Code.SUCCESS for ni in snap.nodes]


@pytest.mark.parametrize("case", SINGLE_CONSTRAINT_CASES, ids=lambda c: c.name)
def test_single_constraint(case: FilterCase) -> None:
    _check_filter(case)


@pytest.mark.parametrize("case", MULTIPLE_CONSTRAINTS_CASES, ids=lambda c: c.name)
def test_multiple_constraints(case: FilterCase) -> None:
    _check_filter(case)


def test_pre_filter_disabled() -> None:
    """Filter without PreFilter state is an Error, as upstream's TestPreFilterDisabled."""
    snap = Snapshot.build([node("n")], [])
    plugin = make_plugin(snap)
    st = plugin.filter(CycleState(), PodInfo(pod()), snap.nodes[0])
    assert st is not None and st.code == Code.ERROR
    assert 'reading "PreFilterPodTopologySpread" from cycleState' in st.message
