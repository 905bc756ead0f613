"""NodeUnschedulable's batch filter agrees with the per-node filter."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from ksched.framework.cycle_state import CycleState
from ksched.framework.podinfo import PodInfo
from ksched.framework.testing import make_node, make_pod, make_snapshot
from ksched.plugins.nodeunschedulable import NodeUnschedulable


@settings(max_examples=60, deadline=None)
@given(st.lists(st.booleans(), min_size=1, max_size=12), st.booleans())
def test_batch_matches_per_node(cordoned: list[bool], tolerates: bool) -> None:
    snap = make_snapshot([make_node(f"n{i}", unschedulable=c) for i, c in enumerate(cordoned)])
    tol = [{"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"}]
    pod = PodInfo(make_pod("p", spec={"tolerations": tol} if tolerates else None))
    pl = NodeUnschedulable()
    rows = np.arange(len(snap.nodes), dtype=np.intp)[::-1].copy()
    batch = pl.filter_batch(CycleState(), pod, snap, rows)
    per_node = [pl.filter(CycleState(), pod, snap.nodes[r]) is None for r in rows]
    assert batch.tolist() == per_node
    snap.upsert_node(make_node("n0", unschedulable=not cordoned[0]))
    batch = pl.filter_batch(CycleState(), pod, snap, rows)
    assert batch.tolist() == [pl.filter(CycleState(), pod, snap.nodes[r]) is None for r in rows]
