"""NodeResourcesFit: a node must have room for the pod's requests; nodes are scored by a
configurable strategy (upstream ``noderesources/fit.go``, 1.36.2).

Filter reports every resource the node lacks ("Too many pods", "Insufficient cpu", ...); the
status is UnschedulableAndUnresolvable when some request exceeds the node's allocatable
outright (preemption cannot help), else Unschedulable. Ignored extended resources (by name or
by group prefix) are not checked. Requests follow pod-level ``spec.resources``, sidecar
(restartable init) containers and overhead.

Scoring (LeastAllocated, MostAllocated, RequestedToCapacityRatio) compares the node's
non-zero requested cpu/memory with the pod's container requests plus the 100m/200Mi
defaults for requests left out; as in 1.36.2 the scorer ignores pod-level resources.

Extended resources backed by DRA (DRAExtendedResource): a resource some DeviceClass backs that a
node does not offer as allocatable is left to DynamicResources (not checked here), and scoring
counts the node's matching devices for it (``dra_scoring``).

Not modelled: in-place resize status resources of running pods in the scale-down queueing hint.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ksched.api.core import Node, Pod
from ksched.apimachinery.field import aggregate_message
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
from ksched.framework.interfaces import (
    BatchFilterPlugin,
    BatchScorePlugin,
    BoolArray,
    EnqueueExtensions,
    FilterPlugin,
    Int64Array,
    PreFilterPlugin,
    PreScorePlugin,
    Rows,
    ScorePlugin,
)
from ksched.framework.nodeinfo import NodeInfo
from ksched.framework.podinfo import PodInfo
from ksched.framework.resources import (
    CPU,
    EPHEMERAL_STORAGE,
    MEMORY,
    Resource,
    is_scalar_resource,
    pod_requests,
)
from ksched.framework.results import PreFilterResult
from ksched.framework.snapshot import Snapshot
from ksched.framework.status import Code, Status
from ksched.plugins.args.noderesources_validation import validate_fit_args
from ksched.plugins.args.types import (
    LEAST_ALLOCATED,
    MOST_ALLOCATED,
    REQUESTED_TO_CAPACITY_RATIO,
    NodeResourcesFitArgs,
    ScoringStrategy,
)
from ksched.plugins.dynamicresources.cel import CelCache
from ksched.plugins.dynamicresources.extended import (
    NO_CLASSES,
    DeviceClassResolver,
    is_dra_extended_resource_name,
    resolver_for,
)
from ksched.plugins.feature import DEFAULT_FEATURES, Features
from ksched.plugins.helper.shape_score import scale_shape
from ksched.plugins.noderesources import dra_scoring
from ksched.plugins.noderesources.dra_scoring import DRAScoring
from ksched.plugins.noderesources.fits import (
    FitRequest,
    IgnoredResources,
    fit_request_of,
    fits_request,
    fits_rows,
    pod_fit_request,
)
from ksched.plugins.noderesources.least_allocated import LeastAllocated
from ksched.plugins.noderesources.most_allocated import MostAllocated
from ksched.plugins.noderesources.requested_to_capacity_ratio import RequestedToCapacityRatio
from ksched.plugins.noderesources.resource_allocation import AllocationStrategy, ResourceAllocation, gathered

NAME = "NodeResourcesFit"
PRE_FILTER_STATE_KEY = "PreFilter" + NAME
PRE_SCORE_STATE_KEY = "PreScore" + NAME
ERR_SIDECARS_DISABLED = "Pod has a restartable init container and the SidecarContainers feature is disabled"
DEVICE_CLASS_RESOURCE_PREFIX = "deviceclass.resource.kubernetes.io/"


@dataclass(frozen=True, slots=True)
class FitFeatures:
    """Feature gates NodeResourcesFit reads, with their 1.36 defaults."""

    pod_level_resources: bool = True
    sidecar_containers: bool = True
    in_place_pod_vertical_scaling: bool = True
    scheduling_queue_hints: bool = True
    dra_extended_resource: bool = True


@dataclass(frozen=True, slots=True)
class PreScoreState:
    """The pod's request for each scored resource, in the configured order."""

    pod_requests: tuple[int, ...]
    #: device counts for scored extended resources backed by DRA (None: none is)
    dra: DRAScoring | None = None

    def clone(self) -> PreScoreState:
        return self


def scorer_for(strategy: ScoringStrategy) -> ResourceAllocation:
    """The scorer of a validated scoring strategy (upstream ``getScorer``)."""
    resources = [(r.name, r.weight) for r in strategy.resources]
    weights = [w for _, w in resources]
    impl: AllocationStrategy
    if strategy.type == LEAST_ALLOCATED:
        impl = LeastAllocated(weights)
    elif strategy.type == MOST_ALLOCATED:
        impl = MostAllocated(weights)
    elif strategy.type == REQUESTED_TO_CAPACITY_RATIO:
        if strategy.requested_to_capacity_ratio is None:
            raise ValueError("RequestedToCapacityRatio scoring needs requestedToCapacityRatio")
        points = [(p.utilization, p.score) for p in strategy.requested_to_capacity_ratio.shape]
        impl = RequestedToCapacityRatio(weights, scale_shape(points))
    else:
        raise ValueError(f"scoring strategy {strategy.type} is not supported")
    # The Fit scorer never enables pod-level resources (1.36.2 leaves the flag unset).
    return ResourceAllocation(strategy.type, resources, impl, use_requested=False, pod_level_resources=False)


def has_restartable_init_container(pod: Pod) -> bool:
    return any(c.restart_policy == "Always" for c in pod.spec.init_containers)


class Fit:
    """The NodeResourcesFit plugin: PreFilter, Filter, PreScore, Score and queueing hints."""

    name = NAME

    def __init__(
        self,
        args: NodeResourcesFitArgs | None = None,
        features: FitFeatures | None = None,
        handle: Handle | None = None,
    ) -> None:
        args = args if args is not None else NodeResourcesFitArgs()
        errors = validate_fit_args(args)
        if errors:
            raise ValueError(aggregate_message(errors))
        assert args.scoring_strategy is not None  # validated
        self.features = features if features is not None else FitFeatures()
        self.ignored = IgnoredResources(args.ignored_resources, args.ignored_resource_groups)
        self.scorer = scorer_for(args.scoring_strategy)
        self._handle = handle
        self._cel = CelCache()

    # --- DRA-backed extended resources -----------------------------------------------------------
    def _resolver(self) -> DeviceClassResolver:
        """Which DeviceClass backs which extended resource (none without the gate or a snapshot)."""
        if not self.features.dra_extended_resource or self._handle is None:
            return NO_CLASSES
        return resolver_for(self._handle.snapshot.objects.device_classes)

    def _dra_scoring(self) -> DRAScoring | None:
        resolver = self._resolver()
        if not resolver or self._handle is None:
            return None
        snapshot = self._handle.snapshot
        objects = snapshot.objects
        return dra_scoring.prepare(
            self.scorer.names,
            resolver,
            snapshot,
            lambda: objects.resource_claims,
            objects.resource_slices.values(),
            self._cel,
        )

    # --- PreFilter / Filter ----------------------------------------------------------------------
    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        if not self.features.sidecar_containers and has_restartable_init_container(pod.pod):
            return None, Status.unresolvable(ERR_SIDECARS_DISABLED)
        request = pod_fit_request(pod, pod_level_resources=self.features.pod_level_resources)
        resolver = self._resolver()
        if resolver:
            backed = dra_backed(request.scalars, resolver)
            if backed:
                request = dataclasses.replace(request, dra_backed=backed)
        state.write(PRE_FILTER_STATE_KEY, request)
        return None, None

    def _fit_request(self, state: CycleState) -> FitRequest | None:
        return state.get(PRE_FILTER_STATE_KEY, FitRequest)

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        request = self._fit_request(state)
        if request is None:
            return Status.as_error(f'error reading "{PRE_FILTER_STATE_KEY}" from cycleState: not found')
        insufficient = fits_request(request, node, self.ignored)
        if not insufficient:
            return None
        code = Code.UNSCHEDULABLE
        if any(r.unresolvable for r in insufficient):
            code = Code.UNSCHEDULABLE_AND_UNRESOLVABLE
        return Status(code, *(r.reason for r in insufficient))

    def filter_batch(self, state: CycleState, pod: PodInfo, snapshot: Snapshot, rows: Rows) -> BoolArray:
        request = self._fit_request(state)
        if request is None:
            raise RuntimeError(f'error reading "{PRE_FILTER_STATE_KEY}" from cycleState: not found')
        return fits_rows(request, snapshot.columns, rows, self.ignored)

    # --- PreScore / Score ------------------------------------------------------------------------
    def pre_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Status | None:
        state.write(PRE_SCORE_STATE_KEY, PreScoreState(self.scorer.pod_requests(pod), self._dra_scoring()))
        return None

    def _pre_score_state(self, state: CycleState, pod: PodInfo) -> PreScoreState:
        cached = state.get(PRE_SCORE_STATE_KEY, PreScoreState)
        if cached is None:
            cached = PreScoreState(self.scorer.pod_requests(pod), self._dra_scoring())
        return cached

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        st = self._pre_score_state(state, pod)
        return self.scorer.score(node, st.pod_requests, st.dra)

    def score_batch(self, state: CycleState, pod: PodInfo, snapshot: Snapshot, rows: Rows) -> Int64Array:
        st = self._pre_score_state(state, pod)
        block = gathered(state, snapshot, rows)
        return self.scorer.score_rows(snapshot.columns, rows, st.pod_requests, st.dra, snapshot.nodes, block)

    # --- queueing --------------------------------------------------------------------------------
    def events_to_register(self) -> list[ClusterEventWithHint]:
        pod_action = ActionType.DELETE
        if self.features.in_place_pod_vertical_scaling:
            pod_action |= ActionType.UPDATE_POD_SCALE_DOWN
        node_action = ActionType.ADD | ActionType.UPDATE_NODE_ALLOCATABLE
        if not self.features.scheduling_queue_hints:
            node_action |= ActionType.UPDATE_NODE_TAINT | ActionType.UPDATE_NODE_LABEL
        events = [
            ClusterEventWithHint(ClusterEvent(EventResource.POD, pod_action), self.hint_pod_event),
            ClusterEventWithHint(ClusterEvent(EventResource.NODE, node_action), self.hint_node_change),
        ]
        if self.features.dra_extended_resource:
            events.append(
                ClusterEventWithHint(
                    ClusterEvent(EventResource.DEVICE_CLASS, ActionType.ADD | ActionType.UPDATE),
                    self.hint_device_class_event,
                )
            )
        return events

    def hint_pod_event(self, pod: Pod, old: object, new: object) -> QueueingHint:
        """A scheduled pod deleted, or a pod scaled down in place, may free what ``pod`` needs."""
        original, modified = as_typed(old, new, Pod)
        if modified is None:
            unscheduled = original is not None and not original.spec.node_name
            if unscheduled and original is not None and not original.status.nominated_node_name:
                return QueueingHint.QUEUE_SKIP
            return QueueingHint.QUEUE
        if not self.features.in_place_pod_vertical_scaling:
            return QueueingHint.QUEUE_SKIP
        if original is None or _scaled_down_for(pod, original, modified):
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    def hint_node_change(self, pod: Pod, old: object, new: object) -> QueueingHint:
        """A node added or grown that now fits ``pod`` may make it schedulable."""
        original, modified = as_typed(old, new, Node)
        level = self.features.pod_level_resources
        resolver = self._resolver()
        if modified is None or not is_fit(pod, modified, pod_level_resources=level, resolver=resolver):
            return QueueingHint.QUEUE_SKIP  # it would not fit the node anyway
        if original is None:
            return QueueingHint.QUEUE
        if not requested_resources_increased(
            pod, original, modified, pod_level_resources=level, resolver=resolver
        ):
            return QueueingHint.QUEUE_SKIP
        return QueueingHint.QUEUE

    def hint_device_class_event(self, pod: Pod, old: object, new: object) -> QueueingHint:
        """A DeviceClass that newly maps a requested extended resource may make ``pod`` schedulable."""
        for obj in (old, new):
            if obj is not None and not hasattr(obj, "spec"):
                raise TypeError(f"expected a DeviceClass, got {type(obj).__name__}")
        if new is None:
            raise TypeError("expected a DeviceClass, got None")
        modified_name = _extended_resource_name(new)
        requests = pod_requests(pod)
        if old is not None:
            if _extended_resource_name(old) == modified_name:
                return QueueingHint.QUEUE_SKIP
        else:
            class_name = getattr(getattr(new, "metadata", None), "name", "")
            if DEVICE_CLASS_RESOURCE_PREFIX + class_name in requests:
                return QueueingHint.QUEUE
        if modified_name and modified_name in requests:
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP


# The extension points Fit implements, checked by mypy against ksched.framework.interfaces
# (upstream's ``var _ fwk.<Point>Plugin = &Fit{}`` lines).
_ENQUEUE_EXTENSIONS: type[EnqueueExtensions] = Fit
_PRE_FILTER: type[PreFilterPlugin] = Fit
_FILTER: type[FilterPlugin] = Fit
_BATCH_FILTER: type[BatchFilterPlugin] = Fit
_PRE_SCORE: type[PreScorePlugin] = Fit
_SCORE: type[ScorePlugin] = Fit
_BATCH_SCORE: type[BatchScorePlugin] = Fit


def _extended_resource_name(device_class: object) -> str:
    value = getattr(getattr(device_class, "spec", None), "extended_resource_name", None)
    return value if isinstance(value, str) else ""


def dra_backed(scalars: Iterable[tuple[str, int]], resolver: DeviceClassResolver) -> frozenset[str]:
    """The requested extended resources some DeviceClass backs (upstream ``shouldDelegateResourceToDRA``
    without the node's part)."""
    return frozenset(
        name
        for name, amount in scalars
        if amount != 0 and is_dra_extended_resource_name(name) and resolver.get(name) is not None
    )


def is_fit(
    pod: Pod,
    node: Node | None,
    *,
    pod_level_resources: bool = True,
    resolver: DeviceClassResolver = NO_CLASSES,
) -> bool:
    """Whether ``pod`` fits an empty ``node`` (upstream ``isFit``); False without a node."""
    if node is None:
        return False
    request = fit_request_of(pod, pod_level_resources=pod_level_resources)
    if resolver:
        request = dataclasses.replace(request, dra_backed=dra_backed(request.scalars, resolver))
    return not fits_request(request, NodeInfo(node))


def _max_resource(pod: Pod) -> FitRequest:
    return FitRequest.from_requests(pod_requests(pod))


def _scaled_down_for(target: Pod, original: Pod, modified: Pod) -> bool:
    """Whether the update of ``modified`` frees a resource ``target`` requests."""
    if modified.metadata.uid == target.metadata.uid:
        return True
    if not modified.spec.node_name:
        return False
    before, after = _max_resource(original), _max_resource(modified)
    before_scalars, after_scalars = dict(before.scalars), dict(after.scalars)
    for name, amount in pod_requests(target).items():
        if amount == 0:
            continue
        if name == CPU:
            freed = before.milli_cpu > after.milli_cpu
        elif name == MEMORY:
            freed = before.memory > after.memory
        elif name == EPHEMERAL_STORAGE:
            freed = before.ephemeral_storage > after.ephemeral_storage
        else:
            freed = is_scalar_resource(name) and before_scalars.get(name, 0) > after_scalars.get(name, 0)
        if freed:
            return True
    return False


def requested_resources_increased(
    pod: Pod,
    original: Node,
    modified: Node,
    *,
    pod_level_resources: bool = True,
    resolver: DeviceClassResolver = NO_CLASSES,
) -> bool:
    """Whether the node update grew the pod count or any resource the pod requests."""
    request = fit_request_of(pod, pod_level_resources=pod_level_resources)
    before = Resource.from_list(original.status.allocatable)
    after = Resource.from_list(modified.status.allocatable)
    if after.allowed_pod_number > before.allowed_pod_number:
        return True
    if request.empty:
        return False
    if (
        (request.milli_cpu > 0 and after.milli_cpu > before.milli_cpu)
        or (request.memory > 0 and after.memory > before.memory)
        or (request.ephemeral_storage > 0 and after.ephemeral_storage > before.ephemeral_storage)
    ):
        return True
    return any(
        amount != 0
        and (
            after.scalar.get(name, 0) > before.scalar.get(name, 0)
            # a resource DRA may provide there: the node update may have changed that
            or (after.scalar.get(name, 0) <= 0 and name in dra_backed(((name, amount),), resolver))
        )
        for name, amount in request.scalars
    )


def new(args: NodeResourcesFitArgs | None, handle: Handle, features: Features = DEFAULT_FEATURES) -> Fit:
    return Fit(args, FitFeatures(dra_extended_resource=features.enable_dra_extended_resource), handle)
