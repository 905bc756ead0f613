"""VolumeBinding (upstream ``volume_binding.go``): a pod's PVCs must be bound to PVs the node can
use, or bindable / provisionable there (WaitForFirstConsumer); Reserve assumes the decisions,
PreBind writes them to the API and waits for the PV controller."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ksched.api.core import CSIVolumeSource, PersistentVolumeClaim, Pod
from ksched.api.storage import CSIDriver, CSINode, CSIStorageCapacity, StorageClass
from ksched.apimachinery.quantity import parse_quantity
from ksched.apimachinery.typed import as_typed
from ksched.client.rest import Client
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
    EnqueueExtensions,
    FilterPlugin,
    PreBindPlugin,
    PreFilterPlugin,
    PreScorePlugin,
    ReservePlugin,
    ScorePlugin,
)
from ksched.framework.nodeinfo import NodeInfo
from ksched.framework.podinfo import PodInfo
from ksched.framework.results import PreFilterResult
from ksched.framework.status import Status
from ksched.plugins.args.types import VolumeBindingArgs
from ksched.plugins.args.validation import STORAGE_CAPACITY_SCORING, validate_volume_binding_args
from ksched.plugins.helper.shape_score import MAX_UTILIZATION, BrokenLinearFunction, scale_shape
from ksched.plugins.helper.storage import (
    ANN_MIGRATED_PLUGINS,
    CLAIM_LOST,
    StorageError,
    check_ephemeral_owner,
    claim_name_of,
    pvc_key,
    requested_storage,
)
from ksched.plugins.volumebinding import state as vbstate
from ksched.plugins.volumebinding.binder import (
    BinderError,
    PodVolumes,
    StorageResource,
    VolumeBinder,
    volume_limit,
)
from ksched.plugins.volumebinding.prebind import (
    DEFAULT_POLL_INTERVAL,
    PreBindError,
    VolumeApi,
    bind_pod_volumes,
)
from ksched.plugins.volumebinding.state import STATE_KEY, VolumeBindingState

NAME = "VolumeBinding"
ERR_UNBOUND_IMMEDIATE = "pod has unbound immediate PersistentVolumeClaims"


@dataclass(frozen=True)
class VolumeBindingFeatures:
    """Feature gates VolumeBinding reads, with their kube-scheduler 1.36 defaults."""

    storage_capacity_scoring: bool = STORAGE_CAPACITY_SCORING
    scheduling_queue_hints: bool = True


ClassResources = dict[str, StorageResource]


#: the shape upstream defaults to when StorageCapacityScoring is on: prefer the least utilized
DEFAULT_SHAPE = ((0, 10), (100, 0))


def build_scorer(args: VolumeBindingArgs) -> BrokenLinearFunction:
    """Upstream ``buildScorerFunction``'s shape: configured 0..10 scores scaled to 0..100."""
    points = [(p.utilization, p.score) for p in args.shape] or list(DEFAULT_SHAPE)
    return BrokenLinearFunction(scale_shape(points))


def capacity_score(shape: BrokenLinearFunction, resources: ClassResources) -> int:
    """Mean over storage classes of shape(requested/capacity %), rounded half away from zero."""
    if not resources:
        return 0
    total = 0
    for res in resources.values():
        if res.capacity == 0 or res.requested > res.capacity:
            total += shape(MAX_UTILIZATION)
        else:
            total += shape(res.requested * MAX_UTILIZATION // res.capacity)
    mean = total / len(resources)  # Go's math.Round: half away from zero (scores are never negative)
    return math.floor(mean + 0.5)


class VolumeBinding:
    name = NAME

    def __init__(
        self,
        handle: Handle,
        args: VolumeBindingArgs | None = None,
        features: VolumeBindingFeatures | None = None,
        *,
        poll_interval: float = DEFAULT_POLL_INTERVAL,
    ) -> None:
        self.args = args if args is not None else VolumeBindingArgs()
        self.features = features if features is not None else VolumeBindingFeatures()
        self._handle = handle
        self.binder = VolumeBinder(lambda: handle.snapshot.objects)
        self.scorer = build_scorer(self.args) if self.features.storage_capacity_scoring else None
        #: seconds between PreBind's checks of the API objects (upstream: 1s)
        self.poll_interval = poll_interval

    # --- events ----------------------------------------------------------------------------------
    def events_to_register(self) -> list[ClusterEventWithHint]:
        node_actions = ActionType.ADD | ActionType.UPDATE_NODE_LABEL
        if not self.features.scheduling_queue_hints:
            node_actions |= ActionType.UPDATE_NODE_TAINT
        return [
            ClusterEventWithHint(
                ClusterEvent(EventResource.STORAGE_CLASS, ActionType.ADD | ActionType.UPDATE),
                self.hint_storage_class_change,
            ),
            ClusterEventWithHint(
                ClusterEvent(EventResource.PERSISTENT_VOLUME_CLAIM, ActionType.ADD | ActionType.UPDATE),
                self.hint_pvc_change,
            ),
            ClusterEventWithHint(
                ClusterEvent(EventResource.PERSISTENT_VOLUME, ActionType.ADD | ActionType.UPDATE)
            ),
            ClusterEventWithHint(ClusterEvent(EventResource.NODE, node_actions)),
            ClusterEventWithHint(
                ClusterEvent(EventResource.CSI_NODE, ActionType.ADD | ActionType.UPDATE),
                self.hint_csi_node_change,
            ),
            ClusterEventWithHint(
                ClusterEvent(EventResource.CSI_DRIVER, ActionType.UPDATE), self.hint_csi_driver_change
            ),
            ClusterEventWithHint(
                ClusterEvent(EventResource.CSI_STORAGE_CAPACITY, ActionType.ADD | ActionType.UPDATE),
                self.hint_capacity_change,
            ),
        ]

    @staticmethod
    def hint_csi_node_change(pod: Pod, old: object, new: object) -> QueueingHint:
        """Queue for a new CSINode, or when its migrated-plugins annotation changed."""
        if old is None:
            return QueueingHint.QUEUE
        old_node, new_node = as_typed(old, new, CSINode)
        if old_node is None or new_node is None:
            raise TypeError("expected CSINode, but got None")
        before = old_node.metadata.annotations.get(ANN_MIGRATED_PLUGINS, "")
        after = new_node.metadata.annotations.get(ANN_MIGRATED_PLUGINS, "")
        return QueueingHint.QUEUE if before != after else QueueingHint.QUEUE_SKIP

    @staticmethod
    def hint_pvc_change(pod: Pod, old: object, new: object) -> QueueingHint:
        """Queue when a claim the pod uses (directly or as an ephemeral volume) was added or updated."""
        _, pvc = as_typed(old, new, PersistentVolumeClaim)
        if pvc is None:
            raise TypeError("expected PersistentVolumeClaim, but got None")
        if pod.metadata.namespace != pvc.metadata.namespace:
            return QueueingHint.QUEUE_SKIP
        for volume in pod.spec.volumes:
            ref = claim_name_of(pod, volume)
            if ref is not None and ref[0] == pvc.metadata.name:
                return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    @staticmethod
    def hint_storage_class_change(pod: Pod, old: object, new: object) -> QueueingHint:
        """Queue for a new StorageClass or a change of allowedTopologies."""
        old_sc, new_sc = as_typed(old, new, StorageClass)
        if new_sc is None:
            raise TypeError("expected StorageClass, but got None")
        if old_sc is None or old_sc.allowed_topologies != new_sc.allowed_topologies:
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    @staticmethod
    def hint_capacity_change(pod: Pod, old: object, new: object) -> QueueingHint:
        """Queue for a new CSIStorageCapacity or a larger volume limit."""
        old_cap, new_cap = as_typed(old, new, CSIStorageCapacity)
        if new_cap is None:
            raise TypeError("expected CSIStorageCapacity, but got None")
        if old_cap is None:
            return QueueingHint.QUEUE
        before, after = volume_limit(old_cap), volume_limit(new_cap)
        if after is not None and (before is None or after > before):
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    @staticmethod
    def hint_csi_driver_change(pod: Pod, old: object, new: object) -> QueueingHint:
        """Queue when a CSI driver of the pod's inline CSI volumes stopped tracking capacity."""
        old_driver, new_driver = as_typed(old, new, CSIDriver)
        if old_driver is None or new_driver is None:
            raise TypeError("expected CSIDriver, but got None")
        for volume in pod.spec.volumes:
            inline: CSIVolumeSource | None = volume.csi
            if inline is None or inline.driver != new_driver.metadata.name:
                continue
            if old_driver.spec.storage_capacity and not new_driver.spec.storage_capacity:
                return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    # --- PreFilter -------------------------------------------------------------------------------
    def _pod_claims_problem(self, pod: Pod) -> tuple[bool, str | None]:
        """Upstream ``podHasPVCs``: (has a PVC, the first problem with one)."""
        claims = self._handle.snapshot.objects.persistent_volume_claims
        has_pvc = False
        for volume in pod.spec.volumes:
            ref = claim_name_of(pod, volume)
            if ref is None:
                continue
            name, ephemeral = ref
            has_pvc = True
            pvc = claims.get(pvc_key(pod.metadata.namespace, name))
            if pvc is None:
                if ephemeral:
                    waiting = "waiting for ephemeral volume controller to create the persistentvolumeclaim"
                    return True, f'{waiting} "{name}"'
                return True, f'persistentvolumeclaim "{name}" not found'
            if pvc.status.phase == CLAIM_LOST:
                lost = f'bound to non-existent persistentvolume "{pvc.spec.volume_name}"'
                return True, f'persistentvolumeclaim "{name}" {lost}'
            if pvc.metadata.deletion_timestamp is not None:
                return True, f'persistentvolumeclaim "{name}" is being deleted'
            if ephemeral:
                problem = check_ephemeral_owner(pod, pvc)
                if problem is not None:
                    return True, problem
        return has_pvc, None

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        has_pvc, problem = self._pod_claims_problem(pod.pod)
        if problem is not None:
            return None, Status.unresolvable(problem)
        if not has_pvc:
            state.write(STATE_KEY, VolumeBindingState(skip=True))
            return None, Status.skip()
        try:
            claims = self.binder.get_pod_volume_claims(pod.pod)
        except (BinderError, StorageError) as exc:
            return None, Status.as_error(exc)
        if claims.unbound_claims_immediate:
            return None, Status.unresolvable(ERR_UNBOUND_IMMEDIATE)
        state.write(STATE_KEY, VolumeBindingState(claims=claims))
        return None, None

    @staticmethod
    def _state(state: CycleState) -> VolumeBindingState:
        return state.read_as(STATE_KEY, VolumeBindingState)

    # --- Filter ----------------------------------------------------------------------------------
    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        try:
            st = self._state(state)
        except (KeyError, TypeError) as exc:
            return Status.as_error(exc)
        if node.node is None:
            return Status.as_error(RuntimeError("node not found"))
        if st.claims is None:
            return None  # PreFilter skipped: the pod has no claims
        try:
            pod_volumes, reasons = self.binder.find_pod_volumes(pod.pod, st.claims, node.node)
        except (BinderError, StorageError) as exc:
            return Status.as_error(exc)
        if reasons:
            return Status.unresolvable(*reasons)
        st.pod_volumes_by_node[node.name] = pod_volumes
        st.has_static_bindings = st.has_static_bindings or bool(pod_volumes.static_bindings)
        return None

    # --- Score (only with StorageCapacityScoring) -----------------------------------------------
    def pre_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Status | None:
        if self.scorer is None:
            return Status.skip()
        try:
            st = self._state(state)
        except (KeyError, TypeError) as exc:
            return Status.as_error(exc)
        if st.has_static_bindings or self.features.storage_capacity_scoring:
            return None
        return Status.skip()

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        if self.scorer is None:
            return 0
        st = self._state(state)
        pod_volumes = st.pod_volumes_by_node.get(node.name)
        if pod_volumes is None:
            return 0
        return capacity_score(self.scorer, self._class_resources(pod_volumes))

    def _class_resources(self, pod_volumes: PodVolumes) -> ClassResources:
        resources: ClassResources = {}
        if pod_volumes.static_bindings or not self.features.storage_capacity_scoring:
            for binding in pod_volumes.static_bindings or []:
                res = resources.setdefault(binding.storage_class_name(), StorageResource(0, 0))
                got = binding.storage_resource()
                res.requested += got.requested
                res.capacity += got.capacity
            return resources
        for provision in pod_volumes.dynamic_provisions or []:
            if provision.node_capacity is None:
                continue
            class_name = provision.pvc.spec.storage_class_name or ""
            res = resources.setdefault(class_name, StorageResource(0, 0))
            res.capacity = volume_limit_value(provision.node_capacity)
            res.requested += requested_storage(provision.pvc).value()
        return resources

    # --- Reserve / Unreserve ---------------------------------------------------------------------
    def reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        try:
            st = self._state(state)
        except (KeyError, TypeError) as exc:
            return Status.as_error(exc)
        st.reserved_node = node_name
        pod_volumes = st.pod_volumes_by_node.get(node_name)
        if pod_volumes is None:
            st.all_bound = True  # the pod references no PVC
            return None
        try:
            st.all_bound = self.binder.assume_pod_volumes(pod.pod, node_name, pod_volumes)
        except (BinderError, StorageError) as exc:
            return Status.as_error(exc)
        return None

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        st = state.get(STATE_KEY, VolumeBindingState)
        if st is None:
            return
        pod_volumes = st.pod_volumes_by_node.get(node_name)
        if pod_volumes is not None:
            self.binder.revert_assumed_pod_volumes(pod_volumes)

    # --- binder-process hand-over ---------------------------------------------------------------
    def export_state(self, state: CycleState) -> bytes:
        """The cycle's decisions for PreBind / Unreserve in another process (after Reserve)."""
        return vbstate.export_state(self._state(state))

    def import_state(self, state: CycleState, data: bytes) -> None:
        """Put what :meth:`export_state` produced into ``state`` (before PreBind or Unreserve)."""
        state.write(STATE_KEY, vbstate.import_state(data))

    # --- PreBind ---------------------------------------------------------------------------------
    async def pre_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        try:
            st = self._state(state)
        except (KeyError, TypeError) as exc:
            return Status.as_error(exc)
        if st.all_bound:
            return None
        pod_volumes = st.pod_volumes_by_node.get(node_name)
        if pod_volumes is None:
            return Status.as_error(RuntimeError(f'no pod volume found for node "{node_name}"'))
        client = self._handle.client
        if not isinstance(client, Client):
            return Status.as_error(
                RuntimeError(
                    f"{NAME} PreBind needs an API client (ksched.client), got {type(client).__name__}"
                )
            )
        try:
            await bind_pod_volumes(
                VolumeApi(client),
                pod.pod,
                node_name,
                pod_volumes,
                timeout=float(self.args.bind_timeout_seconds),
                poll_interval=self.poll_interval,
            )
        except PreBindError as exc:
            return Status.as_error(exc)
        return None


# The extension points VolumeBinding implements, checked by mypy against ksched.framework.interfaces
# (upstream's ``var _ fwk.<Point>Plugin = &VolumeBinding{}`` lines).
_ENQUEUE_EXTENSIONS: type[EnqueueExtensions] = VolumeBinding
_PRE_FILTER: type[PreFilterPlugin] = VolumeBinding
_FILTER: type[FilterPlugin] = VolumeBinding
_PRE_SCORE: type[PreScorePlugin] = VolumeBinding
_SCORE: type[ScorePlugin] = VolumeBinding
_RESERVE: type[ReservePlugin] = VolumeBinding
_PRE_BIND: type[PreBindPlugin] = VolumeBinding


def volume_limit_value(capacity: CSIStorageCapacity) -> int:
    """``NodeCapacity.Capacity.Value()`` of a provision (0 when unset)."""
    if capacity.capacity is None:
        return 0
    return parse_quantity(capacity.capacity).value()


def new(args: Any, handle: Handle) -> VolumeBinding:
    if args is not None and not isinstance(args, VolumeBindingArgs):
        raise TypeError(f"want args to be of type VolumeBindingArgs, got {type(args).__name__}")
    if args is not None:
        errs = validate_volume_binding_args(args)
        if errs:
            raise ValueError("; ".join(errs))
    return VolumeBinding(handle, args)
