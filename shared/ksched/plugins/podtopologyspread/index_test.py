"""SpreadIndex: per-row counts stay exact across snapshot changes; appended pods take the fast path."""

from __future__ import annotations

import numpy as np
import pytest

from ksched.framework.snapshot import Snapshot
from ksched.plugins.podtopologyspread.common import DO_NOT_SCHEDULE, Constraint, filter_constraints
from ksched.plugins.podtopologyspread.index import SpreadIndex
from ksched.plugins.podtopologyspread.testing import exists, node, pod, spread


def _constraint() -> Constraint:
    (c,) = filter_constraints(
        pod(constraints=[spread(1, "zone", DO_NOT_SCHEDULE, exists("foo"))]).spec.topology_spread_constraints,
        {},
        DO_NOT_SCHEDULE,
    )
    return c


def _fresh_counts(snap: Snapshot, c: Constraint) -> list[int]:
    index = SpreadIndex()
    index.sync(snap)
    counts: list[int] = index.counts("default", c).tolist()
    return counts


def _cluster() -> Snapshot:
    nodes = [node(f"n{i}", {"zone": f"z{i % 2}"}) for i in range(4)]
    return Snapshot.build(
        nodes, [pod("a", labels={"foo": ""}, node="n0"), pod("b", labels={"bar": ""}, node="n1")]
    )


def test_appended_pods_update_only_their_nodes(monkeypatch: pytest.MonkeyPatch) -> None:
    snap = _cluster()
    c = _constraint()
    index = SpreadIndex()
    index.sync(snap)
    assert index.counts("default", c).tolist() == [1, 0, 0, 0]
    snap.add_pod(pod("c", labels={"foo": ""}), "n2")
    snap.add_pod(pod("d", labels={"foo": "x"}), "n2")
    snap.add_pod(pod("e", "other", labels={"foo": ""}), "n3")
    snap.add_pod(pod("f", labels={"foo": ""}), "not-yet-a-node")

    def no_full_scan(src: object) -> None:
        raise AssertionError("appending pods must not rescan every row")

    monkeypatch.setattr(index, "_sync_rows", no_full_scan)
    index.sync(snap)
    assert index.counts("default", c).tolist() == [1, 0, 2, 0] == _fresh_counts(snap, c)


@pytest.mark.parametrize(
    "change",
    [
        "remove",
        "replace-labels",
        "terminating",
        "relabel-node",
        "remove-node",
        "add-node",
        "append-then-remove",
    ],
)
def test_other_changes_fall_back_to_a_row_scan(change: str) -> None:
    snap = _cluster()
    c = _constraint()
    index = SpreadIndex()
    index.sync(snap)
    index.counts("default", c)  # a live view, updated incrementally from now on
    a = snap.pod_locations[next(iter(snap.pod_locations))][0].pod
    if change == "remove":
        snap.remove_pod(a.metadata.uid)
    elif change == "replace-labels":
        snap.add_pod(pod("a", labels={"bar": ""}, node="n0", uid=a.metadata.uid))
    elif change == "terminating":  # a preemption's victim: no longer counted (sequences-s9502-400)
        snap.add_pod(pod("a", labels={"foo": ""}, node="n0", uid=a.metadata.uid, terminating=True))
    elif change == "relabel-node":
        snap.upsert_node(node("n0", {"zone": "z9"}))
    elif change == "remove-node":
        snap.remove_node("n0")
    elif change == "add-node":
        snap.upsert_node(node("n9", {"zone": "z0"}))
        snap.add_pod(pod("g", labels={"foo": ""}), "n9")
    elif change == "append-then-remove":
        snap.add_pod(pod("g", labels={"foo": ""}), "n1")
        snap.remove_pod(a.metadata.uid)
    index.sync(snap)
    assert index.counts("default", c).tolist() == _fresh_counts(snap, c)
    topo = index.topology("zone")
    want = [
        topo.value_ids.get(ni.labels.get("zone", ""), -1) if "zone" in ni.labels else -1 for ni in snap.nodes
    ]
    assert topo.ids[: index.size].tolist() == want


def test_reset_snapshot_is_resynced() -> None:
    snap = _cluster()
    c = _constraint()
    index = SpreadIndex()
    index.sync(snap)
    assert sum(index.counts("default", c).tolist()) == 1
    snap.reset()
    for i in range(4):
        snap.upsert_node(node(f"n{i}", {"zone": "z0"}))
    snap.add_pod(pod("x", labels={"foo": ""}), "n3")
    index.sync(snap)
    assert index.counts("default", c).tolist() == [0, 0, 0, 1]


def test_affinity_and_taint_masks_follow_node_changes() -> None:
    from ksched.framework.podinfo import PodInfo

    snap = Snapshot.build([node("n0", {"foo": ""}), node("n1", {}, tainted=True)], [])
    index = SpreadIndex()
    index.sync(snap)
    pi = PodInfo(pod(node_selector={"foo": ""}))
    aff = index.affinity_mask(pi)
    taints = index.taints_mask(pi.pod)
    assert aff is not None and aff.tolist() == [True, False]
    assert taints is not None and taints.tolist() == [True, False]
    snap.upsert_node(node("n1", {"foo": ""}))
    index.sync(snap)
    aff = index.affinity_mask(pi)
    assert aff is not None and np.array_equal(aff, [True, True])
    assert index.taints_mask(pi.pod) is None
