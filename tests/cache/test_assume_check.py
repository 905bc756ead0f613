"""The assume check (ClusterCache.assume with a profile): placements decided on an older snapshot
are accepted exactly when the profile's filters pass now, and the whole filter runs only when a
change since the decision can matter."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec
import pytest

from ksched.api.core import Namespace, Pod
from ksched.cache import assume_check
from ksched.cache.answers import AnswerLog
from ksched.cache.assume_check import FullCheck, spread_slack
from ksched.cache.changelog import ChangeLog, NodeChange, ObjectChange, PodChange, changed_label_keys
from ksched.cache.ledger import AssumeVerdict, ClusterCache
from ksched.config import default_config, load_config
from ksched.config.profile import build_frameworks
from ksched.framework.cycle_state import CycleState
from ksched.framework.nominator import Nominator
from ksched.framework.podinfo import PodInfo
from ksched.framework.testing import container, make_node, make_pod

ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"
EXISTING_ANTI = "InterPodAffinity: node(s) didn't satisfy existing pods anti-affinity rules"
OWN_ANTI = "InterPodAffinity: node(s) didn't match pod anti-affinity rules"
SPREAD = "PodTopologySpread: node(s) didn't match pod topology spread constraints"


def anti_affinity(key: str, app: str, *, preferred: bool = False) -> dict[str, Any]:
    term: dict[str, Any] = {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": key}
    rules: dict[str, Any]
    if preferred:
        rules = {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 10, "podAffinityTerm": term}]}
    else:
        rules = {"requiredDuringSchedulingIgnoredDuringExecution": [term]}
    return {"affinity": {"podAntiAffinity": rules}}


def affinity(key: str, app: str) -> dict[str, Any]:
    term = {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": key}
    return {"affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}}


def spread(key: str, app: str, max_skew: int = 1) -> dict[str, Any]:
    return {
        "topologySpreadConstraints": [
            {
                "maxSkew": max_skew,
                "topologyKey": key,
                "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchLabels": {"app": app}},
            }
        ]
    }


class Informer:
    """The informer's cache with the default profile over its snapshot."""

    def __init__(self, config_yaml: str | None = None) -> None:
        self.cache = ClusterCache()
        self.nominator = Nominator()
        config = load_config(config_yaml) if config_yaml else default_config()
        frameworks = build_frameworks(config, self.cache.snapshot, nominator=self.nominator)
        self.fw = frameworks["default-scheduler"]

    def node(self, name: str, zone: str, cpu: str = "4", **kw: Any) -> None:
        alloc = {"cpu": cpu, "memory": "8Gi", "pods": "110"}
        self.cache.upsert_node(make_node(name, labels={ZONE: zone}, allocatable=alloc, **kw))

    def pending(self, name: str, labels: Mapping[str, str] | None = None, **kw: Any) -> Pod:
        pod = make_pod(name, labels=labels, requests={"cpu": kw.pop("cpu", "100m")}, **kw)
        self.cache.upsert_pod(pod)
        return pod

    def bound(self, name: str, node: str, labels: Mapping[str, str] | None = None, **kw: Any) -> Pod:
        pod = make_pod(name, labels=labels, node_name=node, requests={"cpu": "100m"}, **kw)
        self.cache.upsert_pod(pod)
        return pod

    def assume(self, pod: Pod, node: str, generation: int, **kw: Any) -> AssumeVerdict:
        return self.cache.assume(pod, node, generation=generation, scheduler_id="s", profile=self.fw, **kw)


def zone_a() -> Informer:
    informer = Informer()
    informer.node("n1", "a")
    informer.node("n2", "a")
    informer.node("n3", "b")
    return informer


def second_of_two(
    first: Pod, first_node: str, second: Pod, second_node: str, informer: Informer
) -> AssumeVerdict:
    """Two replicas decided on one snapshot; the first placement is accepted: the second's verdict."""
    decided_at = informer.cache.generation
    assert informer.assume(first, first_node, decided_at).accepted
    return informer.assume(second, second_node, decided_at)


# --- the issue's case and the other anti-affinity rules ---------------------------------------------


def test_a_pod_without_constraints_is_refused_in_the_zone_of_a_pod_whose_anti_affinity_selects_it() -> None:
    informer = zone_a()
    a = informer.pending("a", spec=anti_affinity(ZONE, "x"))
    b = informer.pending("b", labels={"app": "x"})
    verdict = second_of_two(a, "n1", b, "n2", informer)
    assert verdict == AssumeVerdict(False, EXISTING_ANTI, FullCheck.ANTI_AFFINITY)
    assert informer.cache.snapshot.location(b.metadata.uid) is None
    assert b.metadata.uid in informer.cache.pending


NO: dict[str, Any] = {}
SECOND_OF_TWO = {
    # name: (first's labels, spec, node), (second's labels, spec, node), verdict
    "the issue's pod in another zone": (
        (NO, anti_affinity(ZONE, "x"), "n1"),
        ({"app": "x"}, NO, "n3"),
        AssumeVerdict(True),
    ),
    "an anti-affine pod next to a pod it selects": (
        ({"app": "x"}, NO, "n1"),
        (NO, anti_affinity(HOST, "x"), "n1"),
        AssumeVerdict(False, OWN_ANTI, FullCheck.ANTI_AFFINITY),
    ),
    "an anti-affine pod on another host": (
        ({"app": "x"}, NO, "n1"),
        (NO, anti_affinity(HOST, "x"), "n2"),
        AssumeVerdict(True),
    ),
    "a matching pod placed in the spread pod's zone": (
        ({"app": "s"}, NO, "n2"),
        ({"app": "s"}, spread(ZONE, "s"), "n1"),
        AssumeVerdict(False, SPREAD, FullCheck.REFUSED, ("PodTopologySpread",)),
    ),
    "a matching pod placed in another zone cannot raise the skew": (
        ({"app": "s"}, NO, "n3"),
        ({"app": "s"}, spread(ZONE, "s"), "n1"),
        AssumeVerdict(True),
    ),
    "the spread pod in the other zone": (
        ({"app": "s"}, NO, "n2"),
        ({"app": "s"}, spread(ZONE, "s"), "n3"),
        AssumeVerdict(True),
    ),
}


@pytest.mark.parametrize(("first", "second", "verdict"), SECOND_OF_TWO.values(), ids=SECOND_OF_TWO)
def test_the_second_of_two_decisions_on_one_snapshot(
    first: tuple[dict[str, str], dict[str, Any], str],
    second: tuple[dict[str, str], dict[str, Any], str],
    verdict: AssumeVerdict,
) -> None:
    informer = zone_a()
    one = informer.pending("one", labels=first[0], spec=first[1])
    two = informer.pending("two", labels=second[0], spec=second[1])
    assert second_of_two(one, first[2], two, second[2], informer) == verdict


def test_a_node_relabelled_into_the_zone_brings_its_anti_affine_pods() -> None:
    informer = zone_a()
    informer.bound("a", "n3", spec=anti_affinity(ZONE, "x"))
    b = informer.pending("b", labels={"app": "x"})
    decided_at = informer.cache.generation
    informer.node("n3", "a")  # n3 (with a) moves into zone a
    assert informer.assume(b, "n1", decided_at) == AssumeVerdict(
        False, EXISTING_ANTI, FullCheck.ANTI_AFFINITY
    )


def test_preferred_terms_never_make_the_check_run_the_filters() -> None:
    informer = zone_a()
    pref = informer.pending("pref", labels={"app": "x"}, spec=anti_affinity(ZONE, "x", preferred=True))
    decided_at = informer.cache.generation
    informer.bound("other", "n2", labels={"app": "x"}, spec=anti_affinity(HOST, "y", preferred=True))
    assert informer.assume(pref, "n1", decided_at) == AssumeVerdict(True)


# --- spread and affinity -----------------------------------------------------------------------------


def test_a_removed_pod_the_spread_counts_runs_the_spread_plugin_again() -> None:
    informer = zone_a()
    informer.bound("old", "n3", labels={"app": "s"})
    s1 = informer.pending("s1", labels={"app": "s"}, spec=spread(ZONE, "s"))
    decided_at = informer.cache.generation  # a: 0, b: 1 -> a is fine
    informer.cache.remove_pod(next(uid for uid in informer.cache.snapshot.pod_locations))
    verdict = informer.assume(s1, "n1", decided_at)  # a: 0, b: 0 -> still fine, but only the plugin knows
    assert verdict == AssumeVerdict(True, rerun=("PodTopologySpread",))


def test_a_counted_pod_that_starts_terminating_counts_as_removed() -> None:
    informer = zone_a()
    old = informer.bound("old", "n3", labels={"app": "s"})
    s1 = informer.pending("s1", labels={"app": "s"}, spec=spread(ZONE, "s"))
    decided_at = informer.cache.generation  # a: 0, b: 1
    meta = msgspec.structs.replace(old.metadata, deletion_timestamp="2026-01-01T00:00:00Z")
    informer.cache.upsert_pod(msgspec.structs.replace(old, metadata=meta))  # b: 0 (not counted)
    assert informer.assume(s1, "n1", decided_at) == AssumeVerdict(True, rerun=("PodTopologySpread",))


def test_a_label_change_that_keeps_a_pod_counted_is_no_change() -> None:
    informer = zone_a()
    old = informer.bound("old", "n2", labels={"app": "s"})
    s1 = informer.pending("s1", labels={"app": "s"}, spec=spread(ZONE, "s", max_skew=2))
    decided_at = informer.cache.generation
    meta = msgspec.structs.replace(old.metadata, labels={"app": "s", ZONE: "a"})  # as a binding adds
    informer.cache.upsert_pod(msgspec.structs.replace(old, metadata=meta))
    assert informer.assume(s1, "n1", decided_at, spread_slack=0) == AssumeVerdict(True)
    s2 = informer.pending("s2", labels={"app": "s"}, spec=spread(ZONE, "s", max_skew=2))
    informer.cache.upsert_pod(msgspec.structs.replace(old, metadata=msgspec.structs.replace(meta, labels={})))
    # No longer counted: a removal, which may lower the minimum.
    verdict = informer.assume(s2, "n1", decided_at, spread_slack=0)
    assert "PodTopologySpread" in verdict.rerun


def test_a_pod_relabelled_into_the_selector_counts_even_beside_a_label_it_does_not_read() -> None:
    informer = zone_a()
    old = informer.bound("old", "n2", labels={"app": "t"})  # not counted: the selector is app=s
    s1 = informer.pending("s1", labels={"app": "s"}, spec=spread(ZONE, "s"))
    decided_at = informer.cache.generation  # a: 0, b: 0
    meta = msgspec.structs.replace(old.metadata, labels={"app": "s", ZONE: "a"})  # counted now, in a
    informer.cache.upsert_pod(msgspec.structs.replace(old, metadata=meta))
    verdict = informer.assume(s1, "n1", decided_at, spread_slack=0)  # a: 2, b: 0 > maxSkew 1
    assert not verdict.accepted and verdict.rerun == ("PodTopologySpread",)


def test_changed_label_keys() -> None:
    same = {"app": "s"}
    assert changed_label_keys(same, same) == frozenset()
    assert changed_label_keys({"app": "s"}, {"app": "s", ZONE: "a"}) == {ZONE}
    assert changed_label_keys({"app": "s", "x": "1"}, {"app": "t"}) == {"app", "x"}
    assert changed_label_keys({"app": "s"}, {"app": "s"}) == frozenset()


def test_required_affinity_rechecks_when_a_pod_it_counts_leaves() -> None:
    informer = zone_a()
    informer.bound("web", "n3", labels={"app": "web"})
    fan = informer.pending("fan", spec=affinity(ZONE, "web"))
    decided_at = informer.cache.generation
    informer.cache.remove_pod(next(uid for uid in informer.cache.snapshot.pod_locations))
    verdict = informer.assume(fan, "n3", decided_at)
    # No pod matches any more and the pod does not match itself: upstream refuses every node.
    assert not verdict.accepted and verdict.full_check == FullCheck.REFUSED
    assert verdict.rerun == ("InterPodAffinity",)
    assert verdict.reason == "InterPodAffinity: node(s) didn't match pod affinity rules"


def test_a_placement_the_decision_counted_and_the_cache_refused_runs_the_plugin_again() -> None:
    informer = zone_a()
    first = informer.pending("s0", labels={"app": "s"})
    s1 = informer.pending("s1", labels={"app": "s"}, spec=spread(ZONE, "s"))
    decided_at = informer.cache.generation
    # The replica placed s0 on n3 (assume 1, not answered yet), then s1 on n1 counting it: b 1, a 0.
    # The cache refuses s0 (its node is gone), so a: 0 -> 1 while b stays 0: still a skew of 1
    # (fine), but the check cannot know that without the plugin.
    assert not informer.assume(first, "gone", decided_at, session="r", seq=1, basis_from=1).accepted
    verdict = informer.assume(s1, "n1", decided_at, session="r", seq=2, basis_from=1)
    assert verdict == AssumeVerdict(True, rerun=("PodTopologySpread",))
    # An assume the cache never received, or a refusal of a pod it could not name: the same.
    s2 = informer.pending("s2", labels={"app": "s"}, spec=spread(ZONE, "s"))
    assert informer.assume(s2, "n2", decided_at, session="r", seq=4, basis_from=3).rerun == (
        "PodTopologySpread",
    )


def test_matching_pods_placed_in_the_zone_within_the_decision_s_slack_need_no_plugin() -> None:
    informer = zone_a()
    s1 = informer.pending("s1", labels={"app": "s"}, spec=spread(ZONE, "s", max_skew=3))
    others = [informer.pending(f"o{i}", labels={"app": "s"}) for i in range(3)]
    decided_at = informer.cache.generation
    # On the replica's snapshot s1 on n1 had a skew of 1 (0 + 1 - 0): 2 below maxSkew.
    state = CycleState()
    informer.fw.run_pre_filter_plugins(state, PodInfo(s1))
    assert spread_slack(state, informer.cache.snapshot.node_map["n1"]) == 2
    for other, node in zip(others, ("n2", "n2", "n3"), strict=True):
        assert informer.assume(other, node, decided_at).accepted
    # Two matching pods landed in zone a since (on n2): the skew rose by at most 2.
    assert informer.assume(s1, "n1", decided_at, spread_slack=2) == AssumeVerdict(True)


def test_matching_pods_beyond_the_slack_run_the_spread_plugin_again() -> None:
    informer = zone_a()
    s1 = informer.pending("s1", labels={"app": "s"}, spec=spread(ZONE, "s", max_skew=3))
    others = [informer.pending(f"o{i}", labels={"app": "s"}) for i in range(2)]
    decided_at = informer.cache.generation
    for other in others:
        assert informer.assume(other, "n2", decided_at).accepted
    verdict = informer.assume(s1, "n1", decided_at, spread_slack=1)
    assert verdict == AssumeVerdict(True, rerun=("PodTopologySpread",))  # a: 2, b: 0 -> 2 + 1 - 0 <= 3


def test_more_changes_than_the_scan_limit_run_the_pod_s_own_plugins_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(assume_check, "SCAN_LIMIT", 2)
    informer = zone_a()
    s1 = informer.pending("s1", labels={"app": "s"}, spec=spread(ZONE, "s"))
    decided_at = informer.cache.generation
    for i in range(3):  # matching pods in the other zone: harmless, but not read
        informer.bound(f"b{i}", "n3", labels={"app": "s"})
    assert informer.assume(s1, "n1", decided_at) == AssumeVerdict(True, rerun=("PodTopologySpread",))


def test_many_anti_affine_pods_placed_since_run_inter_pod_affinity_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(assume_check, "SCAN_LIMIT", 1)
    informer = zone_a()
    b = informer.pending("b", labels={"app": "x"})
    decided_at = informer.cache.generation
    informer.bound("a1", "n3", spec=anti_affinity(HOST, "x"))
    informer.bound("a2", "n3", spec=anti_affinity(HOST, "y"))
    assert informer.assume(b, "n1", decided_at) == AssumeVerdict(True, rerun=("InterPodAffinity",))


def test_the_replica_s_own_anti_affine_placement_since_its_snapshot_is_no_change(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(assume_check, "SCAN_LIMIT", 0)  # any pod to read would run the plugin
    informer = zone_a()
    a = informer.pending("a", spec=anti_affinity(ZONE, "y"))
    b = informer.pending("b", labels={"app": "x"})
    decided_at = informer.cache.generation
    assert informer.assume(a, "n2", decided_at, session="r", seq=1, basis_from=1).accepted
    # Counted when b was decided: its anti-affinity, checked then, needs no look now.
    assert informer.assume(b, "n1", decided_at, session="r", seq=2, basis_from=1) == AssumeVerdict(True)
    c = informer.pending("c", labels={"app": "x"})
    assert "InterPodAffinity" in informer.assume(c, "n1", decided_at, session="other", seq=1).rerun


def test_the_replica_s_own_placements_since_its_snapshot_are_no_change() -> None:
    informer = zone_a()
    first = informer.pending("s0", labels={"app": "s"})
    s1 = informer.pending("s1", labels={"app": "s"}, spec=spread(ZONE, "s", max_skew=2))
    decided_at = informer.cache.generation
    # The replica placed s0 on n2 and then s1 on n1, counting s0 (skew 1 + 1 - 0 = 2: no slack).
    assert informer.assume(first, "n2", decided_at, session="r", seq=1, basis_from=1).accepted
    verdict = informer.assume(s1, "n1", decided_at, session="r", seq=2, basis_from=1, spread_slack=0)
    assert verdict == AssumeVerdict(True)  # s0 was in the state it decided on
    # The same placement from another replica is a change that may raise the skew.
    s2 = informer.pending("s2", labels={"app": "s"}, spec=spread(ZONE, "s", max_skew=3))
    verdict = informer.assume(s2, "n2", decided_at, session="other", seq=1, basis_from=1, spread_slack=0)
    assert "PodTopologySpread" in verdict.rerun


# --- the node, resources, the pod, objects, nominations, the bound ---------------------------------------


def test_the_replica_s_own_placements_on_the_node_need_no_resource_check() -> None:
    informer = Informer()
    informer.node("n", "a", cpu="1")
    a = informer.pending("a", cpu="400m")
    b = informer.pending("b", cpu="400m")
    decided_at = informer.cache.generation
    assert informer.assume(a, "n", decided_at, session="r", seq=1, basis_from=1).accepted
    assert informer.assume(b, "n", decided_at, session="r", seq=2, basis_from=1) == AssumeVerdict(True)


def test_the_node_s_pods_are_rechecked_by_the_resource_and_port_filters_alone() -> None:
    informer = Informer()
    informer.node("tight", "a", cpu="1")
    a = informer.pending("a", cpu="600m")
    b = informer.pending("b", cpu="600m")
    c = informer.pending("c", cpu="300m")
    decided_at = informer.cache.generation
    assert informer.assume(a, "tight", decided_at).accepted
    verdict = informer.assume(b, "tight", decided_at)
    node_pods = ("NodePorts", "NodeResourcesFit")
    assert verdict == AssumeVerdict(False, "NodeResourcesFit: Insufficient cpu", FullCheck.REFUSED, node_pods)
    assert informer.assume(c, "tight", decided_at) == AssumeVerdict(True, rerun=node_pods)


def test_host_ports_taken_after_the_decision() -> None:
    informer = zone_a()
    ports = {"containers": [container(host_ports=[(8080, "TCP", "")])]}
    a = informer.pending("a", spec=ports)
    b = informer.pending("b", spec=ports)
    decided_at = informer.cache.generation
    assert informer.assume(a, "n1", decided_at).accepted
    verdict = informer.assume(b, "n1", decided_at)
    assert verdict.reason == "NodePorts: node(s) didn't have free ports for the requested pod ports"


def test_a_changed_node_runs_the_whole_filter() -> None:
    informer = zone_a()
    p = informer.pending("p")
    decided_at = informer.cache.generation
    taint = {"key": "k", "value": "v", "effect": "NoSchedule"}
    informer.cache.upsert_node(
        make_node(
            "n1", labels={ZONE: "a"}, allocatable={"cpu": "4", "memory": "8Gi", "pods": "110"}, taints=[taint]
        )
    )
    verdict = informer.assume(p, "n1", decided_at)
    assert verdict == AssumeVerdict(
        False, "TaintToleration: node(s) had untolerated taint(s)", FullCheck.NODE
    )


def test_other_changes_run_the_filter_when_they_can_matter() -> None:
    informer = zone_a()
    p = informer.pending("p", labels={"app": "x"})
    decided_at = informer.cache.generation
    ns = msgspec.convert({"metadata": {"name": "default", "labels": {"team": "t"}}}, Namespace)
    informer.cache.upsert_object(ns)
    assert informer.assume(p, "n1", decided_at) == AssumeVerdict(True, full_check=FullCheck.OBJECT)
    q = informer.pending("q")
    assert informer.assume(q, "n1", decided_at, pod_changed=True).full_check == FullCheck.POD
    r = informer.pending("r")
    informer.nominator.add(PodInfo(make_pod("nominee", priority=10)), "n2")
    assert informer.assume(r, "n2", informer.cache.generation).full_check == FullCheck.NOMINATED
    pvc = {"volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "c"}}]}
    v = informer.pending("v", spec=pvc)
    assert informer.assume(v, "n1", informer.cache.generation).full_check == FullCheck.VOLUMES


def test_a_decision_older_than_the_log_runs_the_whole_filter() -> None:
    informer = zone_a()
    informer.cache.changes = ChangeLog(capacity=4)
    p = informer.pending("p")
    decided_at = informer.cache.generation
    for i in range(5):
        informer.bound(f"filler-{i}", "n3")
    assert informer.assume(p, "n1", decided_at) == AssumeVerdict(True, full_check=FullCheck.HISTORY)


def test_a_profile_with_an_unknown_filter_always_runs_it() -> None:
    informer = zone_a()
    informer.fw.plugins.filter = [*informer.fw.plugins.filter, _Refuses()]
    p = informer.pending("p")
    verdict = informer.assume(p, "n1", informer.cache.generation)
    assert verdict == AssumeVerdict(False, "Refuses: no", FullCheck.PROFILE)


class _Refuses:
    name = "Refuses"

    def filter(self, state: object, pod: object, node: object) -> Any:
        from ksched.framework.status import Status

        return Status.unschedulable("no")


def test_a_node_heartbeat_is_no_change() -> None:
    informer = zone_a()
    since = informer.cache.generation
    heartbeat = {
        "conditions": [{"type": "Ready", "status": "True", "lastHeartbeatTime": "2026-01-01T00:00:00Z"}]
    }
    alloc = {"cpu": "4", "memory": "8Gi", "pods": "110"}
    informer.cache.upsert_node(make_node("n1", labels={ZONE: "a"}, allocatable=alloc, status=heartbeat))
    assert informer.cache.generation > since  # replicas still get the new object
    assert informer.cache.changes.since(since) == []
    informer.node("n1", "b")
    assert informer.cache.changes.since(since) == [NodeChange(since + 2, "n1")]


def test_a_confirmed_assumption_is_no_change() -> None:
    informer = zone_a()
    p = informer.pending("p")
    assert informer.assume(p, "n1", informer.cache.generation).accepted
    after_assume = informer.cache.generation
    bound = msgspec.structs.replace(p, spec=msgspec.structs.replace(p.spec, node_name="n1"))
    informer.cache.upsert_pod(bound)  # the watch shows the binding
    assert informer.cache.generation > after_assume
    assert informer.cache.changes.since(after_assume) == []


# --- the change log ----------------------------------------------------------------------------------


def test_answers_name_the_refused_placements_a_later_decision_counted() -> None:
    log = AnswerLog(keep=4, sessions=2)
    a, b = PodInfo(make_pod("a")), PodInfo(make_pod("b"))
    log.answered("s", 1, accepted=True)
    log.answered("s", 2, accepted=False, pod=a)
    log.answered("s", 3, accepted=True)
    assert log.refused_between("s", 1, 4) == [a]
    assert log.refused_between("s", 3, 4) == [] and log.refused_between("s", 4, 4) == []
    assert log.refused_between("s", 1, 5) is None  # 4 not answered yet
    log.answered("s", 6, accepted=False, pod=b)  # 5 never arrived
    assert log.refused_between("s", 3, 5) is None and log.refused_between("s", 6, 7) == [b]
    log.answered("s", 7, accepted=False)  # a refusal of a version it could not name
    assert log.refused_between("s", 7, 8) is None
    assert log.refused_between("unknown", 1, 2) is None and log.refused_between("unknown", 2, 2) == []
    for seq in range(8, 12):
        log.answered("s", seq, accepted=False, pod=a)
    assert log.refused_between("s", 1, 4) is None  # dropped: more than 4 kept
    log.answered("t", 1, accepted=True)
    log.answered("u", 1, accepted=True)
    assert log.refused_between("s", 11, 12) is None  # the oldest session was dropped


def test_a_rolled_back_group_commit_is_refused_for_its_session() -> None:
    log = AnswerLog()
    log.answered("s", 1, accepted=True)
    log.answered("s", 2, accepted=True)  # members 1-2 of a group of 3 checked, then rolled back
    log.retract("s", range(1, 4))
    assert log.refused_between("s", 1, 4) is None  # refused, which pods not known
    log.answered("s", 4, accepted=True)
    assert log.refused_between("s", 4, 5) == []  # 3 counts as answered, not missing
    log.answered("s", 5, accepted=False, pod=None)
    log.retract("unknown", range(1, 2))  # a session never seen starts with the retraction
    assert log.refused_between("unknown", 2, 2) == []


def test_change_log_answers_only_what_it_holds() -> None:
    log = ChangeLog(capacity=3)
    pi = PodInfo(make_pod("p"))
    for gen in (1, 2, 2, 3):
        log.record(PodChange(gen, pi, "n", placed=True))
    assert [c.generation for c in log.since(1)] == [2, 2, 3]
    assert not log.covers(0) and log.covers(1)  # generation 1 was dropped
    assert log.count_since(1) == 3 and log.since(3) == []
    for gen in range(4, 20):
        log.record(NodeChange(gen, "n"))
    assert len(log) == 3 and [c.generation for c in log.since(16)] == [17, 18, 19]
    assert [c.generation for c in log.nodes_since(0)] == [17, 18, 19]


def test_change_log_tells_placements_on_a_node_by_others_from_one_replica_s_own() -> None:
    log = ChangeLog()
    pi = PodInfo(make_pod("p"))
    log.record(PodChange(1, pi, "n", placed=True))  # the watch
    log.record(PodChange(2, pi, "n", placed=True, origin="r"))
    log.record(PodChange(3, pi, "n", placed=True, origin="r"))
    assert log.placed_on_since("n", 1, "r") is False  # only r's since 1
    assert log.placed_on_since("n", 0, "r") and log.placed_on_since("n", 2, "other")
    log.record(PodChange(4, pi, "n", placed=True, origin="s"))
    assert log.placed_on_since("n", 3, "r") and not log.placed_on_since("n", 3, "s")
    assert not log.placed_on_since("m", 0)


def test_change_log_keeps_what_a_pod_without_constraints_needs_apart() -> None:
    log = ChangeLog()
    plain = PodInfo(make_pod("plain"))
    anti = PodInfo(make_pod("anti", spec=anti_affinity(HOST, "x")))
    log.record(PodChange(1, plain, "n1", placed=True))
    log.record(PodChange(2, anti, "n2", placed=True))
    log.record(PodChange(3, plain, "n1", placed=False))
    log.record(ObjectChange(4, "Namespace", "default"))
    log.record(NodeChange(5, "n3"))
    assert log.placed_on_since("n1", 0) and not log.placed_on_since("n1", 1)
    assert [c.pod for c in log.anti_affinity_placed_since(0)] == [anti]
    assert log.anti_affinity_placed_since(2) == []
    assert log.objects_since(3) == [ObjectChange(4, "Namespace", "default")] and log.objects_since(4) == []
    assert log.nodes_since(4) == [NodeChange(5, "n3")]


def test_change_log_drops_its_oldest_changes_in_one_go_past_its_slack() -> None:
    log = ChangeLog(capacity=4, slack=2)
    for gen in range(1, 7):
        log.record(NodeChange(gen, "n"))
    assert len(log) == 6 and log.covers(0)  # within the slack: nothing dropped yet
    log.record(NodeChange(7, "n"))
    assert len(log) == 4 and [c.generation for c in log.since(0)] == [4, 5, 6, 7]
    assert not log.covers(2) and log.covers(3)
    assert [c.generation for c in log.nodes_since(0)] == [4, 5, 6, 7]
