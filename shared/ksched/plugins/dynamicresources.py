"""DynamicResources: ResourceClaim (DRA) scheduling, as far as pods without claims go
(upstream ``dynamicresources/dynamicresources.go``, 1.36.2).

For a pod without ``spec.resourceClaims`` upstream does nothing visible but still takes part
in the cycle, and ksched reproduces exactly that:
- PreFilter records that the pod has no claims and returns Skip (so Filter does not run);
- Score returns 0 for every node (there is no PreScore to skip it), NormalizeScore keeps 0;
- PostFilter returns Unschedulable "no new claims to deallocate", which is why real
  FailedScheduling messages read "... no new claims to deallocate, preemption: ...".

Limitation: claim allocation is not implemented. A pod that references ResourceClaims is
rejected at PreFilter with UnschedulableAndUnresolvable (``ERR_CLAIMS_NOT_SUPPORTED``); no
ResourceClaim, ResourceSlice or DeviceClass is read, and Reserve/PreBind are not provided
(upstream skips them for pods without claims). DRA-backed extended resources are likewise
not considered.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ksched.api.core import Pod
from ksched.framework.cycle_state import CycleState
from ksched.framework.events import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    EventResource,
    QueueingHint,
)
from ksched.framework.handle import Handle
from ksched.framework.interfaces import (
    MAX_NODE_SCORE,
    BatchFilterPlugin,
    BatchScorePlugin,
    BoolArray,
    EnqueueExtensions,
    FilterPlugin,
    Int64Array,
    PostFilterPlugin,
    PreFilterPlugin,
    Rows,
    ScoreExtensions,
    ScorePlugin,
)
from ksched.framework.nodeinfo import NodeInfo
from ksched.framework.podinfo import PodInfo
from ksched.framework.results import NodeToStatus, PostFilterResult, PreFilterResult
from ksched.framework.snapshot import Snapshot
from ksched.framework.status import Status
from ksched.plugins.args.types import DynamicResourcesArgs
from ksched.plugins.helper.normalize import default_normalize_score

NAME = "DynamicResources"
STATE_KEY = NAME
MSG_NO_CLAIMS_TO_DEALLOCATE = "no new claims to deallocate"
MSG_STILL_NOT_SCHEDULABLE = "still not schedulable"
ERR_CLAIMS_NOT_SUPPORTED = "pod has ResourceClaims, which ksched does not schedule yet (DRA claim allocation)"


@dataclass(frozen=True, slots=True)
class DRAState:
    """What PreFilter learned about the pod's claims; read by PostFilter and Score."""

    has_claims: bool

    def clone(self) -> DRAState:
        return self


def has_resource_claims(pod: Pod) -> bool:
    return bool(pod.spec.resource_claims)


class DynamicResources:
    """The DynamicResources plugin for pods without ResourceClaims."""

    name = NAME

    def events_to_register(self) -> list[ClusterEventWithHint]:
        node_action = ActionType.ADD | ActionType.UPDATE_NODE_LABEL | ActionType.UPDATE_NODE_ALLOCATABLE
        add_or_update = ActionType.ADD | ActionType.UPDATE
        return [
            ClusterEventWithHint(ClusterEvent(EventResource.NODE, node_action)),
            ClusterEventWithHint(
                ClusterEvent(EventResource.RESOURCE_CLAIM, add_or_update), self.hint_claim_change
            ),
            ClusterEventWithHint(
                ClusterEvent(EventResource.POD, ActionType.UPDATE_POD_GENERATED_RESOURCE_CLAIM),
                self.hint_pod_change,
            ),
            ClusterEventWithHint(ClusterEvent(EventResource.DEVICE_CLASS, add_or_update)),
            ClusterEventWithHint(ClusterEvent(EventResource.RESOURCE_SLICE, add_or_update)),
        ]

    @staticmethod
    def hint_claim_change(pod: Pod, old: object, new: object) -> QueueingHint:
        """Claims are not modelled: any claim change may matter to a pod with claims."""
        return QueueingHint.QUEUE if has_resource_claims(pod) else QueueingHint.QUEUE_SKIP

    @staticmethod
    def hint_pod_change(pod: Pod, old: object, new: object) -> QueueingHint:
        """Only an update of the pod itself (its generated claim names) can help it."""
        if not isinstance(new, Pod):
            raise TypeError(f"expected Pod, got {type(new).__name__}")
        if new.metadata.uid != pod.metadata.uid:
            return QueueingHint.QUEUE_SKIP
        return QueueingHint.QUEUE

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        claims = has_resource_claims(pod.pod)
        state.write(STATE_KEY, DRAState(has_claims=claims))
        if not claims:
            return None, Status.skip()
        return None, Status.unresolvable(ERR_CLAIMS_NOT_SUPPORTED)

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        # Skipped for pods without claims; pods with claims were already rejected at PreFilter.
        return None

    def filter_batch(self, state: CycleState, pod: PodInfo, snapshot: Snapshot, rows: Rows) -> BoolArray:
        return np.ones(len(rows), dtype=np.bool_)

    def post_filter(
        self, state: CycleState, pod: PodInfo, statuses: NodeToStatus
    ) -> tuple[PostFilterResult | None, Status | None]:
        dra = state.get(STATE_KEY, DRAState)
        if dra is None:
            # PreFilter did not run for this pod (an earlier PreFilter rejected it): upstream
            # fails reading its cycle state the same way.
            return None, Status.as_error("not found")
        if not dra.has_claims:
            return None, Status.unschedulable(MSG_NO_CLAIMS_TO_DEALLOCATE)
        return None, Status.unschedulable(MSG_STILL_NOT_SCHEDULABLE)

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        return 0

    def score_batch(self, state: CycleState, pod: PodInfo, snapshot: Snapshot, rows: Rows) -> Int64Array:
        return np.zeros(len(rows), dtype=np.int64)

    def normalize_score(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo], scores: Int64Array
    ) -> Status | None:
        """Upstream ``DefaultNormalizeScore(MaxNodeScore, false, ...)``: scale the maximum to 100."""
        default_normalize_score(MAX_NODE_SCORE, False, scores)
        return None


# The extension points DynamicResources implements, checked by mypy against ksched.framework.interfaces
# (upstream's ``var _ fwk.<Point>Plugin = &DynamicResources{}`` lines).
_ENQUEUE_EXTENSIONS: type[EnqueueExtensions] = DynamicResources
_PRE_FILTER: type[PreFilterPlugin] = DynamicResources
_FILTER: type[FilterPlugin] = DynamicResources
_BATCH_FILTER: type[BatchFilterPlugin] = DynamicResources
_POST_FILTER: type[PostFilterPlugin] = DynamicResources
_SCORE: type[ScorePlugin] = DynamicResources
_BATCH_SCORE: type[BatchScorePlugin] = DynamicResources
_SCORE_EXTENSIONS: type[ScoreExtensions] = DynamicResources


def new(args: DynamicResourcesArgs | None, handle: Handle) -> DynamicResources:
    return DynamicResources()
