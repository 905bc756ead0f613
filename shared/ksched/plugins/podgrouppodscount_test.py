"""PodGroupPodsCount tests ported from upstream 1.36 ``podgroup_pods_count_test.go``."""

from __future__ import annotations

import pytest

from ksched.api.core import Pod
from ksched.framework.cycle_state import CycleState
from ksched.framework.podgroups import PlacementScore, PodGroupAssignments, ProposedAssignment
from ksched.framework.snapshot import Snapshot
from ksched.framework.testing import FakeHandle, make_node, make_pod
from ksched.plugins.podgrouppodscount import PodGroupPodsCount

GROUP = "pg1"


def member(name: str, node: str = "") -> Pod:
    return make_pod(
        name, "default", uid=name, node_name=node, spec={"schedulingGroup": {"podGroupName": GROUP}}
    )


PROPOSED = PodGroupAssignments(
    proposed=[
        ProposedAssignment(member("proposed-pod-1"), "node1"),
        ProposedAssignment(member("proposed-pod-2"), "node2"),
    ]
)


@pytest.mark.parametrize(
    ("assigned", "assumed", "want"),
    [
        ([member("p2", "node2"), member("p3", "node3")], [member("p1", "node1")], 5),  # 1 + 2 + 2 proposed
        ([member("p1", "node1")], [], 3),
        ([], [member("p1", "node1")], 3),
        ([], [], 2),
    ],
    ids=[
        "existing assigned and assumed pods",
        "no assumed pods",
        "no assigned pods",
        "no assigned pods, no assumed pods",
    ],
)
def test_score_placement(assigned: list[Pod], assumed: list[Pod], want: int) -> None:
    snapshot = Snapshot()
    for name in ("node1", "node2", "node3"):
        snapshot.upsert_node(make_node(name))
    for pod in [*assigned, *assumed]:  # a snapshot holds bound and assumed pods alike
        snapshot.add_pod(pod)
    # The proposed pods are pending: known to the cache, not in the snapshot.
    score, status = PodGroupPodsCount(FakeHandle(snapshot)).score_placement(
        CycleState(), ("default", GROUP), PROPOSED
    )
    assert status is None
    assert score == want


@pytest.mark.parametrize(
    ("scores", "want"),
    [
        ([10, 50, 110], [9, 45, 100]),  # score * 100 / 110, integer division
        ([50, 50], [100, 100]),
        ([50], [100]),
        ([11, 100, 101, 102], [10, 98, 99, 100]),  # not spread evenly
    ],
    ids=["distinct scores", "equal scores", "single score", "some minimal score far from a close group"],
)
def test_normalize_placement_score(scores: list[int], want: list[int]) -> None:
    placements = [PlacementScore(score=s) for s in scores]
    assert (
        PodGroupPodsCount(FakeHandle()).normalize_placement_score(CycleState(), ("", GROUP), placements)
        is None
    )
    assert [p.score for p in placements] == want


def test_normalize_zero_scores_is_an_error() -> None:
    placements = [PlacementScore(score=0), PlacementScore(score=0)]
    status = PodGroupPodsCount(FakeHandle()).normalize_placement_score(CycleState(), ("", GROUP), placements)
    assert status is not None
    assert status.message == "no pods from pod group are assigned to any of the candidate placements"
