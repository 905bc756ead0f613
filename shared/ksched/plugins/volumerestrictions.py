"""VolumeRestrictions (upstream ``volume_restrictions.go``): in-tree disks that cannot be mounted
twice (GCE PD, AWS EBS, RBD, ISCSI) and ReadWriteOncePod claims already in use by another pod."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from ksched.api.core import PersistentVolumeClaim, Pod, Volume
from ksched.apimachinery.typed import as_typed
from ksched.framework.cycle_state import CycleState
from ksched.framework.events import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    EventResource,
    QueueingHint,
)
from ksched.framework.handle import Handle
from ksched.framework.interfaces import EnqueueExtensions, FilterPlugin, PreFilterExtensions, PreFilterPlugin
from ksched.framework.nodeinfo import NodeInfo
from ksched.framework.podinfo import PodInfo
from ksched.framework.results import PreFilterResult
from ksched.framework.status import Status
from ksched.plugins.helper.storage import READ_WRITE_ONCE_POD, pvc_key

NAME = "VolumeRestrictions"
PRE_FILTER_STATE_KEY = "PreFilter" + NAME
ERR_REASON_DISK_CONFLICT = "node(s) had no available disk"
ERR_REASON_RWOP_CONFLICT = (
    "node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod access mode"
    " already in-use by another pod"
)


class PreFilterState:
    """The pod's ReadWriteOncePod claim names and how many scheduled pods use them."""

    __slots__ = ("conflicting_pvc_ref_count", "rwop_pvcs")

    def __init__(self, rwop_pvcs: frozenset[str], conflicting_pvc_ref_count: int) -> None:
        self.rwop_pvcs = rwop_pvcs
        self.conflicting_pvc_ref_count = conflicting_pvc_ref_count

    def clone(self) -> PreFilterState:
        return PreFilterState(self.rwop_pvcs, self.conflicting_pvc_ref_count)

    def update_with_pod(self, pod: Pod, multiplier: int) -> None:
        uses = sum(
            1
            for v in pod.spec.volumes
            if v.persistent_volume_claim is not None
            and v.persistent_volume_claim.claim_name in self.rwop_pvcs
        )
        self.conflicting_pvc_ref_count += multiplier * uses


def needs_restrictions_check(volume: Volume) -> bool:
    return (
        volume.gce_persistent_disk is not None
        or volume.aws_elastic_block_store is not None
        or volume.rbd is not None
        or volume.iscsi is not None
    )


def is_volume_conflict(volume: Volume, pod: Pod) -> bool:
    """Upstream ``isVolumeConflict``: ``volume`` cannot be mounted next to ``pod``'s volumes."""
    for existing in pod.spec.volumes:
        gce, egce = volume.gce_persistent_disk, existing.gce_persistent_disk
        if gce and egce and gce.pd_name == egce.pd_name and not (gce.read_only and egce.read_only):
            return True
        ebs, eebs = volume.aws_elastic_block_store, existing.aws_elastic_block_store
        if ebs is not None and eebs is not None and ebs.volume_id == eebs.volume_id:
            return True
        iscsi, eiscsi = volume.iscsi, existing.iscsi
        if iscsi and eiscsi and iscsi.iqn == eiscsi.iqn and not (iscsi.read_only and eiscsi.read_only):
            return True
        rbd, erbd = volume.rbd, existing.rbd
        if (
            rbd is not None
            and erbd is not None
            and set(rbd.monitors) & set(erbd.monitors)
            and rbd.pool == erbd.pool
            and rbd.image == erbd.image
            and not (rbd.read_only and erbd.read_only)
        ):
            return True
    return False


def satisfies_volume_conflicts(pod: Pod, existing_pods: Iterable[Pod]) -> bool:
    checked = [v for v in pod.spec.volumes if needs_restrictions_check(v)]
    if not checked:
        return True
    pods = list(existing_pods)
    return not any(is_volume_conflict(v, other) for v in checked for other in pods)


class VolumeRestrictions:
    name = NAME

    def __init__(self, handle: Handle, *, scheduling_queue_hints: bool = True) -> None:
        self._handle = handle
        self.scheduling_queue_hints = scheduling_queue_hints

    # --- events ----------------------------------------------------------------------------------
    def events_to_register(self) -> list[ClusterEventWithHint]:
        node_actions = ActionType.ADD
        if not self.scheduling_queue_hints:
            node_actions |= ActionType.UPDATE_NODE_TAINT | ActionType.UPDATE_NODE_LABEL
        return [
            ClusterEventWithHint(ClusterEvent(EventResource.POD, ActionType.DELETE), self.hint_pod_deleted),
            ClusterEventWithHint(ClusterEvent(EventResource.NODE, node_actions)),
            ClusterEventWithHint(
                ClusterEvent(EventResource.PERSISTENT_VOLUME_CLAIM, ActionType.ADD), self.hint_pvc_added
            ),
        ]

    @staticmethod
    def hint_pvc_added(pod: Pod, old: object, new: object) -> QueueingHint:
        """Queue when a claim the pod refers to was created."""
        _, pvc = as_typed(old, new, PersistentVolumeClaim)
        if pvc is None:
            raise TypeError("unexpected objects in isSchedulableAfterPersistentVolumeClaimChange: None")
        if pvc.metadata.namespace != pod.metadata.namespace:
            return QueueingHint.QUEUE_SKIP
        for volume in pod.spec.volumes:
            source = volume.persistent_volume_claim
            if source is not None and source.claim_name == pvc.metadata.name:
                return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    @staticmethod
    def hint_pod_deleted(pod: Pod, old: object, new: object) -> QueueingHint:
        """Queue when the deleted pod held a conflicting disk or one of the pod's claims."""
        deleted, _ = as_typed(old, new, Pod)
        if deleted is None:
            raise TypeError("unexpected objects in isSchedulableAfterPodDeleted: None")
        if deleted.metadata.namespace != pod.metadata.namespace:
            return QueueingHint.QUEUE_SKIP
        if not satisfies_volume_conflicts(pod, [deleted]):
            return QueueingHint.QUEUE
        claims = {v.persistent_volume_claim.claim_name for v in pod.spec.volumes if v.persistent_volume_claim}
        for volume in deleted.spec.volumes:
            if (
                volume.persistent_volume_claim is not None
                and volume.persistent_volume_claim.claim_name in claims
            ):
                return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    # --- PreFilter -------------------------------------------------------------------------------
    def _rwop_pvcs(self, pod: Pod) -> frozenset[str]:
        """Names of the pod's claims with the ReadWriteOncePod access mode (KeyError text if missing)."""
        claims = self._handle.snapshot.objects.persistent_volume_claims
        names: set[str] = set()
        for volume in pod.spec.volumes:
            source = volume.persistent_volume_claim
            if source is None:
                continue
            pvc = claims.get(pvc_key(pod.metadata.namespace, source.claim_name))
            if pvc is None:
                raise LookupError(f'persistentvolumeclaim "{source.claim_name}" not found')
            if READ_WRITE_ONCE_POD in pvc.spec.access_modes:
                names.add(pvc.metadata.name)
        return frozenset(names)

    def _pvcs_in_use(self, namespace: str, names: frozenset[str]) -> int:
        """How many of the claims some scheduled pod uses (upstream ``IsPVCUsedByPods``)."""
        if not names:
            return 0
        keys = {pvc_key(namespace, name) for name in names}
        used: set[str] = set()
        for ni in self._handle.snapshot.nodes:
            counts = ni.pvc_ref_counts
            if counts:
                used.update(k for k in keys if k in counts)
                if len(used) == len(keys):
                    break
        return len(used)

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        needs_check = any(needs_restrictions_check(v) for v in pod.pod.spec.volumes)
        try:
            rwop = self._rwop_pvcs(pod.pod)
        except LookupError as exc:
            return None, Status.unresolvable(str(exc.args[0]))
        st = PreFilterState(rwop, self._pvcs_in_use(pod.namespace, rwop))
        if not needs_check and st.conflicting_pvc_ref_count == 0:
            return None, Status.skip()
        state.write(PRE_FILTER_STATE_KEY, st)
        return None, None

    @staticmethod
    def _state(state: CycleState) -> PreFilterState:
        st = state.get(PRE_FILTER_STATE_KEY, PreFilterState)
        if st is None:
            raise KeyError(f'cannot read "{PRE_FILTER_STATE_KEY}" from cycleState')
        return st

    def add_pod(self, state: CycleState, pod: PodInfo, to_add: PodInfo, node: NodeInfo) -> Status | None:
        try:
            self._state(state).update_with_pod(to_add.pod, 1)
        except KeyError as exc:
            return Status.as_error(RuntimeError(exc.args[0]))
        return None

    def remove_pod(
        self, state: CycleState, pod: PodInfo, to_remove: PodInfo, node: NodeInfo
    ) -> Status | None:
        try:
            self._state(state).update_with_pod(to_remove.pod, -1)
        except KeyError as exc:
            return Status.as_error(RuntimeError(exc.args[0]))
        return None

    # --- Filter ----------------------------------------------------------------------------------
    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        if not satisfies_volume_conflicts(pod.pod, (p.pod for p in node.pods)):
            return Status.unschedulable(ERR_REASON_DISK_CONFLICT)
        try:
            st = self._state(state)
        except KeyError as exc:
            return Status.as_error(RuntimeError(exc.args[0]))
        if st.conflicting_pvc_ref_count > 0:
            return Status.unschedulable(ERR_REASON_RWOP_CONFLICT)
        return None


# The extension points VolumeRestrictions implements, checked by mypy against ksched.framework.interfaces
# (upstream's ``var _ fwk.<Point>Plugin = &VolumeRestrictions{}`` lines).
_ENQUEUE_EXTENSIONS: type[EnqueueExtensions] = VolumeRestrictions
_PRE_FILTER: type[PreFilterPlugin] = VolumeRestrictions
_PRE_FILTER_EXTENSIONS: type[PreFilterExtensions] = VolumeRestrictions
_FILTER: type[FilterPlugin] = VolumeRestrictions


def new(args: Any, handle: Handle) -> VolumeRestrictions:
    return VolumeRestrictions(handle)
