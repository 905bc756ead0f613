"""The search for feasible nodes examines rows in chunks: twice what it needs when every filter is
vectorized, only what it still needs when a filter runs node by node (DynamicResources' allocator),
and either way it decides on the same nodes, in the same order, with the same rotation."""

from __future__ import annotations

import pytest

from ksched.framework.algorithm import ScheduleAlgorithm, num_feasible_nodes_to_find
from ksched.framework.cycle_state import CycleState
from ksched.framework.nodeinfo import NodeInfo
from ksched.framework.podinfo import PodInfo
from ksched.framework.runtime import Framework, PluginsByPoint
from ksched.framework.testing import make_node, make_pod, make_snapshot
from tests.scheduler.test_plugin_evaluations import BatchPicker, NodePicker

NODES = [f"n{i:03d}" for i in range(500)]
REJECTED = {name for i, name in enumerate(NODES) if i % 7 == 3}


class Flat:
    """A Score plugin (so that the search looks for more than one feasible node)."""

    name = "Flat"

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        return 0


def search(picker: NodePicker) -> tuple[list[str], int, dict[str, str]]:
    """The feasible nodes found, the next start index, and the rejected nodes with their messages."""
    fw = Framework("p1", make_snapshot([make_node(n) for n in NODES]))
    fw.set_plugins(PluginsByPoint(filter=[picker], score=[(Flat(), 1)]))
    alg = ScheduleAlgorithm(seed=1)
    alg.next_start_node_index = 480  # wraps around the end
    feasible, diagnosis = alg._find_nodes_that_fit(fw, CycleState(), PodInfo(make_pod("p")), explain=True)
    names = [fw.snapshot.nodes[r].name for r in feasible.tolist()]
    return names, alg.next_start_node_index, {name: st.message for name, st in diagnosis.node_to_status}


def test_a_node_by_node_filter_runs_on_about_as_many_nodes_as_needed() -> None:
    to_find = num_feasible_nodes_to_find(0, len(NODES))
    per_node, batch = NodePicker(REJECTED), BatchPicker(REJECTED)
    found, rotated, rejected = search(per_node)
    assert (found, rotated, rejected) == search(batch)  # the same decision either way
    assert len(found) == to_find == 230
    examined = len(found) + len(rejected)
    # a few more than the search needed (the last chunk's rows past the last feasible node), where
    # chunks of twice what is needed ran it on 460
    assert examined <= per_node.calls < 1.25 * examined
    assert rotated == (480 + examined) % len(NODES)


@pytest.mark.parametrize("reject_every", [2, 3, 50])
def test_the_same_nodes_whatever_the_share_rejected(reject_every: int) -> None:
    rejected = {name for i, name in enumerate(NODES) if i % reject_every == 1}
    per_node = NodePicker(rejected)
    found, rotated, refused = search(per_node)
    assert (found, rotated, refused) == search(BatchPicker(rejected))
    assert len(refused) < len(rejected)  # the search stopped before the end
    examined = len(found) + len(refused)
    assert examined <= per_node.calls < 1.25 * examined + 16
