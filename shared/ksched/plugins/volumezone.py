"""VolumeZone (upstream ``volume_zone.go``): the zone/region labels of the PVs bound to a pod's
claims must match the node's (GA or deprecated failure-domain keys); unbound claims of a
WaitForFirstConsumer class are left to VolumeBinding."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ksched.api.core import PersistentVolume, PersistentVolumeClaim, Pod
from ksched.api.storage import StorageClass
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
from ksched.framework.interfaces import EnqueueExtensions, FilterPlugin, PreFilterPlugin
from ksched.framework.nodeinfo import NodeInfo
from ksched.framework.podinfo import PodInfo
from ksched.framework.results import PreFilterResult
from ksched.framework.status import Status
from ksched.plugins.helper.storage import (
    BINDING_WAIT_FOR_FIRST_CONSUMER,
    LABEL_BETA_REGION,
    LABEL_BETA_ZONE,
    LABEL_REGION,
    LABEL_ZONE,
    claim_class,
    label_zones,
    pvc_key,
)

NAME = "VolumeZone"
PRE_FILTER_STATE_KEY = "PreFilter" + NAME
ERR_REASON_CONFLICT = "node(s) had no available volume zone"

#: PV/node label keys compared, in upstream's order
TOPOLOGY_LABELS = (LABEL_BETA_ZONE, LABEL_BETA_REGION, LABEL_ZONE, LABEL_REGION)
_GA_OF_BETA = {LABEL_BETA_REGION: LABEL_REGION, LABEL_BETA_ZONE: LABEL_ZONE}

PVTopology = tuple[str, str, frozenset[str]]
"""(PV name, label key, allowed values)."""


class PreFilterState:
    __slots__ = ("topologies",)

    def __init__(self, topologies: list[PVTopology]) -> None:
        self.topologies = topologies

    def clone(self) -> PreFilterState:
        return self


def pv_topologies(pv: PersistentVolume) -> list[PVTopology]:
    """Upstream ``getPVTopologies``: one entry per topology label (unparsable values are ignored)."""
    out: list[PVTopology] = []
    for key in TOPOLOGY_LABELS:
        value = pv.metadata.labels.get(key)
        if value is None:
            continue
        zones = label_zones(value)
        if zones is not None:
            out.append((pv.metadata.name, key, zones))
    return out


def pod_claim_names(pod: Pod) -> list[str]:
    return [v.persistent_volume_claim.claim_name for v in pod.spec.volumes if v.persistent_volume_claim]


class VolumeZone:
    name = NAME

    def __init__(self, handle: Handle, *, scheduling_queue_hints: bool = True) -> None:
        self._handle = handle
        self.scheduling_queue_hints = scheduling_queue_hints

    # --- events ----------------------------------------------------------------------------------
    def events_to_register(self) -> list[ClusterEventWithHint]:
        node_actions = ActionType.ADD | ActionType.UPDATE_NODE_LABEL
        if not self.scheduling_queue_hints:
            node_actions |= ActionType.UPDATE_NODE_TAINT
        return [
            ClusterEventWithHint(
                ClusterEvent(EventResource.STORAGE_CLASS, ActionType.ADD), self.hint_storage_class_added
            ),
            ClusterEventWithHint(ClusterEvent(EventResource.NODE, node_actions)),
            ClusterEventWithHint(
                ClusterEvent(EventResource.PERSISTENT_VOLUME_CLAIM, ActionType.ADD | ActionType.UPDATE),
                self.hint_pvc_change,
            ),
            ClusterEventWithHint(
                ClusterEvent(EventResource.PERSISTENT_VOLUME, ActionType.ADD | ActionType.UPDATE),
                self.hint_pv_change,
            ),
        ]

    @staticmethod
    def hint_pvc_change(pod: Pod, old: object, new: object) -> QueueingHint:
        """Queue when a claim the pod refers to was created or updated."""
        _, pvc = as_typed(old, new, PersistentVolumeClaim)
        if pvc is None or pvc.metadata.namespace != pod.metadata.namespace:
            return QueueingHint.QUEUE_SKIP
        return QueueingHint.QUEUE if pvc.metadata.name in pod_claim_names(pod) else QueueingHint.QUEUE_SKIP

    @staticmethod
    def hint_storage_class_added(pod: Pod, old: object, new: object) -> QueueingHint:
        """Queue only for a new WaitForFirstConsumer class."""
        _, sc = as_typed(None, new, StorageClass)
        if sc is None:
            raise TypeError("unexpected objects in isSchedulableAfterStorageClassAdded: None")
        if sc.volume_binding_mode != BINDING_WAIT_FOR_FIRST_CONSUMER:
            return QueueingHint.QUEUE_SKIP
        return QueueingHint.QUEUE

    @staticmethod
    def hint_pv_change(pod: Pod, old: object, new: object) -> QueueingHint:
        """Queue for a new PV, or when a PV's topology labels changed."""
        old_pv, new_pv = as_typed(old, new, PersistentVolume)
        if new_pv is None:
            raise TypeError("unexpected objects in isSchedulableAfterPersistentVolumeChange: None")
        if old_pv is None:
            return QueueingHint.QUEUE
        return (
            QueueingHint.QUEUE if pv_topologies(old_pv) != pv_topologies(new_pv) else QueueingHint.QUEUE_SKIP
        )

    # --- PreFilter / Filter ----------------------------------------------------------------------
    def _topologies(self, pod: Pod) -> tuple[list[PVTopology], Status | None]:
        """Upstream ``getPVbyPod``: the topologies of the PVs bound to the pod's claims."""
        objects = self._handle.snapshot.objects
        out: list[PVTopology] = []
        for name in pod_claim_names(pod):
            if not name:
                return [], Status.unresolvable("PersistentVolumeClaim had no name")
            pvc = objects.persistent_volume_claims.get(pvc_key(pod.metadata.namespace, name))
            if pvc is None:
                return [], Status.unresolvable(f'persistentvolumeclaim "{name}" not found')
            pv_name = pvc.spec.volume_name
            if not pv_name:
                class_name = claim_class(pvc)
                if not class_name:
                    return [], Status.unresolvable(
                        "PersistentVolumeClaim had no pv name and storageClass name"
                    )
                sc = objects.storage_classes.get(class_name)
                if sc is None:
                    return [], Status.unresolvable(f'storageclass.storage.k8s.io "{class_name}" not found')
                if sc.volume_binding_mode is None:
                    return [], Status.unresolvable(
                        f'VolumeBindingMode not set for StorageClass "{class_name}"'
                    )
                if sc.volume_binding_mode == BINDING_WAIT_FOR_FIRST_CONSUMER:
                    continue  # unbound claims are VolumeBinding's business
                return [], Status.unresolvable("PersistentVolume had no name")
            pv = objects.persistent_volumes.get(pv_name)
            if pv is None:
                return [], Status.unresolvable(f'persistentvolume "{pv_name}" not found')
            out.extend(pv_topologies(pv))
        return out, None

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        topologies, status = self._topologies(pod.pod)
        if status is not None:
            return None, status
        if not topologies:
            return None, Status.skip()
        state.write(PRE_FILTER_STATE_KEY, PreFilterState(topologies))
        return None, None

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        if not pod.pod.spec.volumes:
            return None
        st = state.get(PRE_FILTER_STATE_KEY, PreFilterState)
        if st is not None:
            topologies = st.topologies
        else:
            topologies, status = self._topologies(pod.pod)  # PreFilter did not run: compute here
            if status is not None:
                return status
        labels = node.labels
        if not any(key in labels for key in TOPOLOGY_LABELS):
            return None  # a node without topology labels (single-zone cluster) fits any volume
        for _pv_name, key, values in topologies:
            value = labels.get(key)
            if value is None:
                value = labels.get(_GA_OF_BETA.get(key, key))
            if value is None or value not in values:
                return Status.unresolvable(ERR_REASON_CONFLICT)
        return None


# The extension points VolumeZone implements, checked by mypy against ksched.framework.interfaces
# (upstream's ``var _ fwk.<Point>Plugin = &VolumeZone{}`` lines).
_ENQUEUE_EXTENSIONS: type[EnqueueExtensions] = VolumeZone
_PRE_FILTER: type[PreFilterPlugin] = VolumeZone
_FILTER: type[FilterPlugin] = VolumeZone


def new(args: Any, handle: Handle) -> VolumeZone:
    return VolumeZone(handle)
