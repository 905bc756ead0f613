"""Property tests: the shortcuts agree with the framework path, the pod table agrees with a naive
walk after arbitrary snapshot changes, and the Go sort port behaves as Go's ``sort.Slice``."""

from __future__ import annotations

import random
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ksched.api.core import Node, Pod
from ksched.api.policy import PodDisruptionBudget
from ksched.framework.nominator import Nominator
from ksched.framework.podinfo import PodInfo
from ksched.framework.results import NodeToStatus
from ksched.framework.snapshot import Snapshot
from ksched.framework.status import Code, Status
from ksched.framework.testing import make_node
from ksched.plugins.defaultpreemption.candidates import DryRun
from ksched.plugins.defaultpreemption.gosort import go_sort_slice
from ksched.plugins.defaultpreemption.index import LowerPriorityIndex
from ksched.plugins.defaultpreemption.ordering import more_important, sort_by_importance
from ksched.plugins.defaultpreemption.resource_only import ResourceOnlyDryRun, resource_pre_check
from ksched.plugins.defaultpreemption.testing import epoch, framework, pdb, plugin_for, pod, prefiltered
from ksched.plugins.defaultpreemption.victims import VictimPolicy, select_victims_on_node
from ksched.plugins.noderesources.fit import Fit
from ksched.plugins.nodeunschedulable import NodeUnschedulable
from ksched.plugins.tainttoleration import TaintToleration

PRIORITIES = [-5, 0, 0, 10, 10, 100, 1000]
LABELS = [{}, {"app": "a"}, {"app": "b"}, {"app": "a", "tier": "x"}]
CPUS = ["0", "100m", "250m", "500m", "1", "1500m"]
MEMS = ["0", "64Mi", "256Mi", "1Gi"]


@st.composite
def clusters(draw: Any) -> dict[str, Any]:
    n_nodes = draw(st.integers(1, 5))
    nodes: list[Node] = []
    for i in range(n_nodes):
        alloc = {
            "cpu": draw(st.sampled_from(["1", "2", "3500m"])),
            "memory": draw(st.sampled_from(["1Gi", "2Gi", "4Gi"])),
            "pods": draw(st.sampled_from(["2", "4", "110"])),
        }
        if draw(st.booleans()):
            alloc["example.com/gpu"] = draw(st.sampled_from(["0", "1", "2"]))
        taints = (
            [{"key": "dedicated", "value": "x", "effect": "NoSchedule"}]
            if draw(st.integers(0, 5)) == 0
            else []
        )
        nodes.append(
            make_node(f"n{i}", allocatable=alloc, taints=taints, unschedulable=draw(st.integers(0, 7)) == 0)
        )
    pods: list[Pod] = []
    for j in range(draw(st.integers(0, 14))):
        requests = {"cpu": draw(st.sampled_from(CPUS)), "memory": draw(st.sampled_from(MEMS))}
        if draw(st.integers(0, 4)) == 0:
            requests["example.com/gpu"] = "1"
        start = draw(st.sampled_from([None, None, 1, 2, 3]))
        pods.append(
            pod(
                f"p{j}",
                node=f"n{draw(st.integers(0, n_nodes - 1))}",
                priority=draw(st.sampled_from(PRIORITIES)),
                requests=requests,
                labels=draw(st.sampled_from(LABELS)),
                start=epoch(start) if start is not None else None,
                terminating=draw(st.integers(0, 9)) == 0,
            )
        )
    pdbs: list[PodDisruptionBudget] = [
        pdb(f"pdb{k}", match_labels=draw(st.sampled_from(LABELS[1:])), allowed=draw(st.integers(0, 2)))
        for k in range(draw(st.integers(0, 2)))
    ]
    preemptor_requests = {"cpu": draw(st.sampled_from(CPUS)), "memory": draw(st.sampled_from(MEMS))}
    if draw(st.integers(0, 3)) == 0:
        preemptor_requests["example.com/gpu"] = "1"
    preemptor = pod(
        "preemptor",
        priority=draw(st.sampled_from([10, 100, 1000, 5000])),
        requests=preemptor_requests,
    )
    nominated = draw(
        st.lists(st.tuples(st.integers(0, n_nodes - 1), st.sampled_from(PRIORITIES)), max_size=2)
    )
    return {"nodes": nodes, "pods": pods, "pdbs": pdbs, "preemptor": preemptor, "nominated": nominated}


def build(c: dict[str, Any]) -> Any:
    nominator = Nominator()
    for k, (node_i, prio) in enumerate(c["nominated"]):
        nominator.add(PodInfo(pod(f"nom{k}", priority=prio, requests={"cpu": "250m"})), f"n{node_i}")
    fit, tt, nu = Fit(), TaintToleration(), NodeUnschedulable()
    return framework(
        c["nodes"], c["pods"], pre_filter=[fit], filter=[nu, tt, fit], pdbs=c["pdbs"], nominator=nominator
    )


def key(status: Status | None) -> tuple[int, tuple[str, ...]] | None:
    return None if status is None else (int(status.code), status.all_reasons())


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters())
def test_resource_only_dry_run_matches_the_framework_path(c: dict[str, Any]) -> None:
    fw = build(c)
    pl = plugin_for(fw)
    state, pi = prefiltered(fw, c["preemptor"])
    fast = ResourceOnlyDryRun.detect(fw, state, pi)
    assert fast is not None
    nodes = list(fw.snapshot.nodes)
    import numpy as np

    rows = np.array([n.index for n in nodes], dtype=np.intp)
    fast.prepare(fw.snapshot, rows)
    pdbs = pl._pdbs.compile(fw.snapshot.objects.pod_disruption_budgets.values())
    policy = VictimPolicy()
    pre = resource_pre_check(LowerPriorityIndex(), fw.snapshot, fast.request, pi.priority, rows)
    for pos, ni in enumerate(nodes):
        exact = select_victims_on_node(fw, state.clone(), pi, ni.clone(), pdbs, policy)
        exact_candidate = exact.status is None and bool(exact.victims)
        if pre.no_victims[pos]:
            assert key(exact.status) == (
                int(Code.UNSCHEDULABLE_AND_UNRESOLVABLE),
                ("No preemption victims found for incoming pod",),
            )
        if pre.cannot_fit[pos]:
            assert not exact_candidate
        if fast.has_nominated_pods(ni):
            continue
        got = fast.select_victims(ni, pdbs)
        if got is None:
            assert not exact_candidate
            continue
        assert [v.uid for v in got.victims] == [v.uid for v in exact.victims]
        assert got.num_pdb_violations == exact.num_pdb_violations
        assert key(got.status) == key(exact.status)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters(), st.integers(0, 4), st.integers(1, 100), st.integers(1, 3))
def test_post_filter_is_the_same_with_and_without_shortcuts(
    c: dict[str, Any], offset: int, percentage: int, absolute: int
) -> None:
    from ksched.plugins.args.types import DefaultPreemptionArgs

    args = DefaultPreemptionArgs(
        min_candidate_nodes_percentage=percentage, min_candidate_nodes_absolute=absolute
    )
    outcomes = []
    for shortcuts in (True, False):
        fw = build(c)
        pl = plugin_for(fw, args)
        pl.shortcuts = shortcuts
        state, pi = prefiltered(fw, c["preemptor"])
        statuses = NodeToStatus(absent=Status(Code.UNSCHEDULABLE))
        index = pl._index if shortcuts else None
        pdbs = pl._pdbs.compile(fw.snapshot.objects.pod_disruption_budgets.values())
        run = DryRun(fw, state, pi, pdbs, pl.policy(), index)
        nodes = list(fw.snapshot.nodes)
        run.prepare(nodes)
        out = run.run(nodes, offset % len(nodes), pl.get_offset_and_num_candidates(len(nodes))[1])
        result, status = pl.post_filter(state, pi, statuses)
        outcomes.append(
            (
                [
                    (cand.node_name, [v.uid for v in cand.victims], cand.num_pdb_violations)
                    for cand in out.candidates
                ],
                # statuses matter (for the message) only when there is no candidate
                [] if out.candidates else sorted((name, key(st_)) for name, st_ in out.statuses),
                None if result is None else (result.nominated_node_name, [v.uid for v in result.victims]),
                key(status),
            )
        )
    assert outcomes[0] == outcomes[1]


# --- the pod table ------------------------------------------------------------------------------
def naive_totals(snapshot: Snapshot, priority: int) -> tuple[list[int], list[list[int]]]:
    counts, totals = [], []
    for ni in snapshot.nodes:
        lower = [pi for pi in ni.pods if pi.priority < priority]
        counts.append(len(lower))
        totals.append(
            [
                sum(p.requests.milli_cpu for p in lower),
                sum(p.requests.memory for p in lower),
                sum(p.requests.ephemeral_storage for p in lower),
            ]
        )
    return counts, totals


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.tuples(st.sampled_from(["add", "remove", "node"]), st.integers(0, 50)), max_size=60),
    st.integers(0, 2**16),
)
def test_index_follows_snapshot_changes(ops: list[tuple[str, int]], seed: int) -> None:
    rng = random.Random(seed)
    snapshot = Snapshot.build([make_node(f"n{i}", allocatable={"cpu": "4"}) for i in range(4)], [])
    index = LowerPriorityIndex()
    live: list[str] = []
    for op, k in ops:
        if op == "add":
            p = pod(
                f"p{k}-{len(live)}",
                node=f"n{rng.randrange(len(snapshot.nodes))}" if snapshot.nodes else "n0",
                priority=rng.choice(PRIORITIES),
                requests={"cpu": rng.choice(CPUS), "memory": rng.choice(MEMS), "ephemeral-storage": "1Gi"},
            )
            snapshot.add_pod(p)
            live.append(p.metadata.uid)
        elif op == "remove" and live:
            snapshot.remove_pod(live.pop(k % len(live)))
        elif op == "node":
            name = f"n{k % 6}"
            if name in snapshot.node_map and k % 2:
                snapshot.remove_node(name)
            else:
                snapshot.upsert_node(make_node(name, allocatable={"cpu": "4"}))
        for priority in (0, 11, 10_000):
            index.sync(snapshot)
            counts, totals = index.lower_priority_totals(priority, len(snapshot.nodes))
            want_counts, want_totals = naive_totals(snapshot, priority)
            assert counts.tolist() == want_counts
            assert totals.tolist() == want_totals


# --- Go's sort.Slice ----------------------------------------------------------------------------
@given(st.lists(st.integers(0, 20), max_size=200))
def test_go_sort_with_a_strict_order_sorts(values: list[int]) -> None:
    items = list(values)
    go_sort_slice(items, lambda a, b: a < b)
    assert items == sorted(values)


@given(st.lists(st.tuples(st.integers(0, 3), st.integers()), max_size=300))
def test_go_sort_is_a_permutation_ordered_by_key(values: list[tuple[int, int]]) -> None:
    items = list(values)
    go_sort_slice(items, lambda a, b: a[0] < b[0])
    assert sorted(items) == sorted(values)
    assert [k for k, _ in items] == sorted(k for k, _ in values)


def test_go_sort_reverses_ties_when_less_is_always_true_on_them() -> None:
    # What upstream's MoreImportantPod does to pods of equal priority without a start time.
    items = [(1, "a"), (0, "b"), (1, "c"), (0, "d"), (1, "e")]
    go_sort_slice(items, lambda a, b: a[0] > b[0] or a[0] == b[0])
    assert items == [(1, "e"), (1, "c"), (1, "a"), (0, "d"), (0, "b")]


def test_go_sort_known_go_result_for_a_long_input() -> None:
    # 60 elements take pdqsort's partitioning path; a strict order must still come out sorted and
    # the always-true-on-ties comparator must still group by key.
    values = [(i * 37) % 7 for i in range(60)]
    items = [(v, i) for i, v in enumerate(values)]
    go_sort_slice(items, lambda a, b: a[0] > b[0] or a[0] == b[0])
    assert [k for k, _ in items] == sorted(values, reverse=True)


@given(
    st.lists(
        st.tuples(st.sampled_from([0, 1, 5]), st.sampled_from([None, 1, 2, 3])),
        max_size=14,
    )
)
def test_importance_key_sort_equals_go_sort(specs: list[tuple[int, int | None]]) -> None:
    pods = [
        PodInfo(pod(f"p{i}", priority=p, start=epoch(t) if t is not None else None))
        for i, (p, t) in enumerate(specs)
    ]
    by_key = list(pods)
    sort_by_importance(by_key)
    by_go = list(pods)
    go_sort_slice(by_go, more_important)
    assert [p.name for p in by_key] == [p.name for p in by_go]
