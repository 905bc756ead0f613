"""Property: the assume check's verdict (reading the changes since the decision) equals the
profile's whole PreFilter and Filter on the cache now, over random clusters, a pod decided on a
replica (with the replica's own unanswered placements), and random changes after the decision.

Each scenario has a focus (the decided pod plain, or with required anti-affinity, required
affinity, hard spread, or a random mix) and draws its changes mostly near the decided node and
with the labels the focus selects, so that changes which matter are common; changes of every
other kind (nodes, namespaces, nominations, terminating pods, refused placements) come too."""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass
from typing import Any
from unittest import mock

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ksched.api.core import Namespace, Node, Pod
from ksched.cache import assume_check
from ksched.cache.assume_check import check_placement, full_filter, spread_slack
from ksched.cache.ledger import ClusterCache
from ksched.cache.replica import SnapshotReplica, image_of
from ksched.config import default_config
from ksched.config.profile import build_frameworks
from ksched.framework.cycle_state import CycleState
from ksched.framework.nominator import Nominator
from ksched.framework.podinfo import PodInfo
from ksched.framework.runtime import Framework
from ksched.framework.snapshot import Snapshot, with_node_name
from ksched.framework.status import Status
from ksched.framework.testing import container, make_node, make_pod

ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"
KEYS = (ZONE, HOST)
NAMESPACES = {"default": {"team": "t1"}, "other": {"team": "t2"}}
CONFIG = default_config()


def _framework(snapshot: Snapshot, nominator: Nominator | None = None) -> Framework:
    return build_frameworks(CONFIG, snapshot, nominator=nominator)["default-scheduler"]


def _namespace(name: str, labels: dict[str, str]) -> Namespace:
    return msgspec.convert({"metadata": {"name": name, "labels": labels}}, Namespace)


def _node(name: str, zone: str, taint: bool = False) -> Node:
    taints = [{"key": "k", "value": "v", "effect": "NoSchedule"}] if taint else []
    alloc = {"cpu": "2", "memory": "8Gi", "pods": "110"}
    return make_node(name, labels={ZONE: zone}, allocatable=alloc, taints=taints)


def _app(r: random.Random) -> str:
    """Mostly one app, so that terms and pods often meet."""
    return "x" if r.random() < 0.75 else "y"


@dataclass(frozen=True)
class Focus:
    """What a scenario stresses: the decided pod's constraints and the odds of the changes."""

    name: str
    kinds: tuple[str, ...] | None
    """The decided pod's constraint kinds; None: a random mix."""
    others_anti: float = 0.0
    """Odds that another pod has required anti-affinity (the issue's case for a plain pod)."""
    namespace_selectors: float = 0.15
    """Odds that a term picks namespaces by label."""
    namespace_changes: float = 1.0
    label_changes: float = 1.0
    """Weight of pods relabelled or starting to terminate in place."""
    bound: tuple[int, int] = (0, 8)
    """How many pods the cluster starts with."""
    unanswered: tuple[int, ...] = (0, 0, 1, 2)
    refused: float = 0.2


FOCUS = (
    Focus("plain", (), others_anti=0.4),
    Focus("anti", ("anti",)),
    Focus("affinity", ("affinity",)),
    Focus("spread", ("spread",)),
    Focus("mixed", None),
    Focus("plain-namespaces", (), others_anti=0.5, namespace_selectors=0.9, namespace_changes=6),
    Focus("anti-namespaces", ("anti",), namespace_selectors=0.9, namespace_changes=6),
    Focus("affinity-unanswered", ("affinity",), unanswered=(1, 2, 3), refused=0.6),
    Focus("spread-unanswered", ("spread",), unanswered=(1, 2, 3), refused=0.6),
    Focus("spread-relabelled", ("spread",), label_changes=8, bound=(6, 16)),
    Focus("affinity-relabelled", ("affinity",), label_changes=8),
)


def _term(r: random.Random, selectors: float) -> dict[str, Any]:
    term: dict[str, Any] = {"labelSelector": {"matchLabels": {"app": _app(r)}}, "topologyKey": r.choice(KEYS)}
    scope = r.random()
    if scope < selectors:
        term["namespaceSelector"] = {"matchLabels": {"team": r.choice(("t1", "t2"))}}
    elif scope < selectors + 0.15:
        term["namespaces"] = ["default", "other"]
    return term


def _terms(kind: str, r: random.Random, selectors: float, *, preferred: bool = False) -> dict[str, Any]:
    key = "podAntiAffinity" if kind == "anti" else "podAffinity"
    if preferred:
        return {
            key: {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": 5, "podAffinityTerm": _term(r, selectors)}
                ]
            }
        }
    return {key: {"requiredDuringSchedulingIgnoredDuringExecution": [_term(r, selectors)]}}


def _spread(r: random.Random) -> dict[str, Any]:
    constraint: dict[str, Any] = {
        "maxSkew": r.choice((1, 1, 2)),
        "topologyKey": r.choice(KEYS),
        "whenUnsatisfiable": "DoNotSchedule" if r.random() < 0.85 else "ScheduleAnyway",
        "labelSelector": {"matchLabels": {"app": _app(r)}},
    }
    if constraint["whenUnsatisfiable"] == "DoNotSchedule" and r.random() < 0.2:
        constraint["minDomains"] = 3
    if r.random() < 0.2:
        constraint["nodeTaintsPolicy"] = "Honor"
    return {"topologySpreadConstraints": [constraint]}


def _spec(r: random.Random, kinds: tuple[str, ...], selectors: float) -> dict[str, Any]:
    """A pod spec with the given constraint kinds (anti, affinity, spread, preferred, ports, selector)."""
    spec: dict[str, Any] = {}
    aff: dict[str, Any] = {}
    for kind in kinds:
        if kind in ("anti", "affinity"):
            aff.update(_terms(kind, r, selectors))
        elif kind == "preferred":
            aff.update(_terms(r.choice(("anti", "affinity")), r, selectors, preferred=True))
        elif kind == "spread":
            spec.update(_spread(r))
        elif kind == "ports":
            spec["containers"] = [container(requests={"cpu": "100m"}, host_ports=[(8080, "TCP", "")])]
        elif kind == "selector":
            spec["nodeSelector"] = {ZONE: r.choice("abc")}
    if aff:
        spec["affinity"] = aff
    return spec


def _mix(r: random.Random) -> tuple[str, ...]:
    odds = {"anti": 0.3, "affinity": 0.15, "spread": 0.3, "preferred": 0.2, "ports": 0.15, "selector": 0.1}
    return tuple(k for k, p in odds.items() if r.random() < p)


class Cluster:
    """The informer's cache (with its profile and nominator), and random pods and changes."""

    def __init__(self, r: random.Random, focus: Focus) -> None:
        self.r = r
        self.focus = focus
        self.cache = ClusterCache()
        self.nominator = Nominator()
        self.fw = _framework(self.cache.snapshot, self.nominator)
        self._names = 0
        for name, labels in NAMESPACES.items():
            self.cache.upsert_object(_namespace(name, labels))
        zones = "abc"[: r.randint(2, 3)]
        for i in range(r.randint(3, 6)):
            self.cache.upsert_node(_node(f"n{i}", r.choice(zones)))
        for _ in range(r.randint(*focus.bound)):
            self.bind_new("")

    def pod(self, node: str = "", kinds: tuple[str, ...] = ()) -> Pod:
        r = self.r
        self._names += 1
        return make_pod(
            f"p{self._names}",
            "default" if r.random() < 0.85 else "other",
            labels={"app": _app(r)} if r.random() < 0.85 else None,
            node_name=node,
            priority=r.choice((0, 0, 10)),
            requests={"cpu": r.choice(("100m", "100m", "500m", "1"))},
            spec=_spec(r, kinds, self.focus.namespace_selectors),
        )

    def other_kinds(self) -> tuple[str, ...]:
        """Constraints of the other pods: anti-affinity at the focus' odds, else now and then anything."""
        if self.r.random() < self.focus.others_anti:
            return ("anti",)
        return _mix(self.r) if self.r.random() < 0.3 else ()

    def nodes(self) -> list[str]:
        return [ni.name for ni in self.cache.snapshot.nodes]

    def placed(self) -> list[Pod]:
        return [pi.pod for pi, _ in self.cache.snapshot.pod_locations.values()]

    def bind_new(self, near: str) -> None:
        """Bind a new pod, mostly on ``near`` or a node of its zone."""
        nodes, node_map = self.nodes(), self.cache.snapshot.node_map
        if not nodes:
            return
        where = self.r.choice(nodes)
        if near in node_map and self.r.random() < 0.6:
            zone = node_map[near].labels.get(ZONE)
            same_zone = [n for n in nodes if node_map[n].labels.get(ZONE) == zone]
            where = near if self.r.random() < 0.5 else self.r.choice(same_zone)
        self.cache.upsert_pod(self.pod(where, self.other_kinds()))

    def change(self, near: str) -> None:
        """One random change, as the watch (or an assume) brings it."""
        r, cache = self.r, self.cache
        kind = r.choices(
            (
                "bind",
                "remove",
                "relabel-pod",
                "relabel-unread",
                "terminating",
                "zone",
                "taint",
                "node+",
                "node-",
                "ns",
                "nominate",
            ),
            (
                8,
                4,
                self.focus.label_changes,
                self.focus.label_changes,
                self.focus.label_changes,
                1,
                0.5,
                1,
                0.5,
                self.focus.namespace_changes,
                1,
            ),
        )[0]
        placed, nodes = self.placed(), self.nodes()
        if kind == "bind":
            self.bind_new(near)
        elif kind == "remove" and placed:
            cache.remove_pod(r.choice(placed).metadata.uid)
        elif kind in ("relabel-pod", "relabel-unread", "terminating") and placed:
            meta = r.choice(placed).metadata
            if kind == "relabel-pod":
                meta = msgspec.structs.replace(meta, labels={"app": _app(r)})
            elif kind == "relabel-unread":  # a label no selector reads (a binding's zone label, say)
                meta = msgspec.structs.replace(meta, labels={**meta.labels, ZONE: r.choice("abc")})
            else:
                meta = msgspec.structs.replace(meta, deletion_timestamp="2026-01-01T00:00:00Z")
            pod = next(p for p in placed if p.metadata.uid == meta.uid)
            cache.upsert_pod(msgspec.structs.replace(pod, metadata=meta))
        elif kind in ("zone", "taint") and nodes:
            name = near if near in nodes and r.random() < 0.3 else r.choice(nodes)
            cache.upsert_node(_node(name, r.choice("abc"), taint=kind == "taint"))
        elif kind == "node+":
            cache.upsert_node(_node(f"m{r.randint(0, 99)}", r.choice("abc")))
        elif kind == "node-" and nodes:
            cache.remove_node(r.choice(nodes))
        elif kind == "ns":
            cache.upsert_object(_namespace(r.choice(list(NAMESPACES)), {"team": r.choice(("t1", "t2"))}))
        elif kind == "nominate" and nodes:
            self.nominator.add(PodInfo(self.pod()), near if r.random() < 0.3 else r.choice(nodes))


def _same(a: Status | None, b: Status | None) -> bool:
    if a is None or b is None:
        return a is b
    return (a.code, a.plugin, a.message) == (b.code, b.plugin, b.message)


def run_scenario(r: random.Random, focus: Focus) -> str:
    """One decision and its check; returns what happened (for the tally), '' when no node fit."""
    cluster = Cluster(r, focus)
    cache = cluster.cache
    pod = cluster.pod(kinds=_mix(r) if focus.kinds is None else focus.kinds)
    cache.upsert_pod(pod)
    unanswered = [cluster.pod(kinds=cluster.other_kinds()) for _ in range(r.choice(focus.unanswered))]
    for other in unanswered:
        cache.upsert_pod(other)
    decided_at = cache.generation
    # The replica: the cache's snapshot at the decision's generation plus its own unanswered placements.
    replica = SnapshotReplica()
    replica.load(image_of(cache.snapshot, "e", decided_at))
    where_of = {}
    for other in unanswered:  # the replica's assumes 1 .. k, in this order
        where = where_of[other.metadata.uid] = r.choice(cluster.nodes())
        replica.snapshot.add_pod(with_node_name(other, where), where)
    decider = _framework(replica.snapshot)
    feasible = [
        ni.name
        for ni in replica.snapshot.nodes
        if full_filter(decider, PodInfo(with_node_name(pod, ni.name)), ni) is None
    ]
    if not feasible:
        return ""
    node = r.choice(feasible)
    state = CycleState()  # the replica's PreFilter state: how far below maxSkew its spread stayed
    decider.run_pre_filter_plugins(state, PodInfo(with_node_name(pod, node)))
    slack = spread_slack(state, replica.snapshot.node_map[node]) if r.random() < 0.8 else None
    answers = list(enumerate(unanswered, start=1))  # answered in order, between other changes
    for _ in range(r.randint(0, 8)):
        if answers and r.random() < 0.3:
            seq, other = answers.pop(0)
            if r.random() >= focus.refused:  # accepted unless it no longer fits (no profile)
                where = where_of[other.metadata.uid]
                cache.assume(other, where, generation=decided_at, scheduler_id="r", session="r", seq=seq)
            else:
                cache.answers.answered("r", seq, accepted=False, pod=PodInfo(other))
        else:
            cluster.change(node)
    # Assumes still unanswered were lost on the way (the cache answers a session in order).
    ni = cache.snapshot.node_map.get(node)
    if ni is None:
        return "node gone"
    placed = PodInfo(with_node_name(pod, node))
    decision = cache.decision(decided_at, "r", len(unanswered) + 1, 1, slack)
    result = check_placement(cluster.fw, placed, ni, cache.changes, decision)
    expected = full_filter(cluster.fw, PodInfo(with_node_name(pod, node)), ni)
    assert _same(result.status, expected), (result, expected, pod, node)
    if result.full:
        return "rejected" if expected is not None else "full"
    return "plugins" if result.rerun else "skipped"


@pytest.mark.parametrize("focus", FOCUS, ids=lambda f: f.name)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(r=st.randoms(use_true_random=False))
def test_incremental_verdict_equals_the_whole_filter(focus: Focus, r: random.Random) -> None:
    run_scenario(r, focus)


@pytest.mark.parametrize("focus", FOCUS, ids=lambda f: f.name)
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(r=st.randoms(use_true_random=False))
def test_past_the_scan_limit_too(focus: Focus, r: random.Random) -> None:
    """When the changes since the decision are too many to read."""
    with mock.patch.object(assume_check, "SCAN_LIMIT", 1):
        run_scenario(r, focus)


def test_the_property_sees_every_outcome() -> None:
    """The scenarios are not vacuous: checks with nothing run, plugins run again alone, the whole
    filter run and passing, and refusals."""
    tally = Counter(run_scenario(random.Random(seed), FOCUS[seed % len(FOCUS)]) for seed in range(180))
    assert min(tally[k] for k in ("skipped", "plugins", "full", "rejected")) >= 10, tally
