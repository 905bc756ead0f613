"""PodGroupPodsCount (gate TopologyAwareWorkloadScheduling): a placement score plugin favouring the
placements of a pod group that hold more of its pods (upstream ``plugins/podgrouppodscount``).

ksched implements the plugin; the placement algorithm that would call it (TopologyPlacementGenerator
and the placement cycle) is not implemented (docs/gang.md)."""

from __future__ import annotations

from typing import Any

from ksched.framework.cycle_state import CycleState
from ksched.framework.handle import Handle
from ksched.framework.interfaces import MAX_NODE_SCORE, MIN_NODE_SCORE, PlacementScorePlugin
from ksched.framework.podgroups import GroupKey, PlacementScore, PodGroupAssignments
from ksched.framework.status import Status

NAME = "PodGroupPodsCount"


class PodGroupPodsCount:
    name = NAME

    def __init__(self, handle: Handle) -> None:
        self.handle = handle

    def score_placement(
        self, state: CycleState, group: GroupKey, placement: PodGroupAssignments
    ) -> tuple[int, Status | None]:
        """The group's scheduled pods (assumed or bound) plus the placement's proposed ones: counting
        both keeps the differences between placements relatively small. A ksched snapshot holds placed
        pods only, so a group none of whose pods is placed has no state there: none is scheduled
        (upstream's cache would know its pending pods and say the same)."""
        group_state = self.handle.snapshot_pod_group_states.get(*group)
        scheduled = group_state.scheduled_pods_count() if group_state is not None else 0
        return scheduled + len(placement.proposed), None

    def normalize_placement_score(
        self, state: CycleState, group: GroupKey, scores: list[PlacementScore]
    ) -> Status | None:
        """Scaled by the largest count (not by minCount, so close counts stay close)."""
        most = max((s.score for s in scores), default=0)
        if most == 0:
            return Status.as_error("no pods from pod group are assigned to any of the candidate placements")
        for s in scores:
            s.score = MIN_NODE_SCORE + s.score * (MAX_NODE_SCORE - MIN_NODE_SCORE) // most
        return None


_PLACEMENT_SCORE: type[PlacementScorePlugin] = PodGroupPodsCount


def new(args: Any, handle: Handle) -> PodGroupPodsCount:
    return PodGroupPodsCount(handle)
