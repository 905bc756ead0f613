"""DynamicResources (upstream ``dynamicresources/dynamicresources.go``, 1.36.2): a pod's
ResourceClaims must exist and be allocatable on the node.

- PreEnqueue: every claim exists (a template's generated claim too), is not being deleted, and a
  generated claim belongs to the pod.
- PreFilter: Skip for pods without claims; otherwise checks the claims (in use, in flight, classes)
  and builds the allocator for the claims that still need devices.
- Filter: an allocated claim must be available on the node (its allocation's node selector); the
  allocator must find devices for the others (the result is kept per node).
- PostFilter: "no new claims to deallocate" without claims; an allocated claim that kept the pod
  off some node and is reserved for nobody else is deallocated.
- Score (firstAvailable only), Reserve/Unreserve (in-flight allocations), PreBind (in the binder:
  ``status.allocation`` and ``reservedFor``, then binding conditions; see ``prebind``).

Extended resources backed by DRA (DRAExtendedResource, ``extended``): a pod requesting an extended
resource some DeviceClass backs gets an in-memory claim with, per node whose device plugin does not
offer the resource, the requests the node must serve through DRA; PreBind creates it.

Not covered (docs/dra.md): PodGroup claims.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import msgspec
import numpy as np

from ksched.api.core import ContainerExtendedResourceRequest, Node, Pod
from ksched.api.resource import FIRST_AVAILABLE_MAX_SIZE, AllocationResult, ResourceClaim
from ksched.apimachinery.duration import seconds
from ksched.apimachinery.nodeselector import NodeSelector as NodeSelectorMatcher
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
    BatchScorePlugin,
    EnqueueExtensions,
    FilterPlugin,
    Int64Array,
    PlacementStatePlugin,
    PostFilterPlugin,
    PreBindPlugin,
    PreEnqueuePlugin,
    PreFilterPlugin,
    ReservePlugin,
    Rows,
    ScoreExtensions,
    ScorePlugin,
)
from ksched.framework.nodeinfo import NodeInfo
from ksched.framework.podinfo import PodInfo
from ksched.framework.resources import is_scalar_resource
from ksched.framework.results import NodeToStatus, PostFilterResult, PreFilterResult
from ksched.framework.snapshot import Snapshot
from ksched.framework.status import Status
from ksched.plugins.args.types import DynamicResourcesArgs
from ksched.plugins.dynamicresources import assumed, binding
from ksched.plugins.dynamicresources import extended as extended_resources
from ksched.plugins.dynamicresources import state as drastate
from ksched.plugins.dynamicresources.allocator import (
    AllocationError,
    AllocationTimeout,
    Allocator,
    Choice,
    NodeAllocationError,
    claim_ref,
)
from ksched.plugins.dynamicresources.cel import CelCache
from ksched.plugins.dynamicresources.claims import (
    ClaimError,
    ClaimStore,
    is_reserved_for,
    is_sub_request_ref,
    pod_claim_names,
    pod_claims,
    pod_reference,
)
from ksched.plugins.dynamicresources.cyclestate import FRESH, ClaimInfo, DRAState, Fresh, NodeAllocation
from ksched.plugins.dynamicresources.extended import DeviceClassResolver
from ksched.plugins.dynamicresources.features import DRAFeatures
from ksched.plugins.dynamicresources.pools import PoolCache
from ksched.plugins.dynamicresources.searchcache import SearchCache
from ksched.plugins.dynamicresources.tracker import ClaimTracker, shared_tracker
from ksched.plugins.feature import DEFAULT_FEATURES, Features
from ksched.plugins.helper.normalize import default_normalize_score

NAME = "DynamicResources"
STATE_KEY = NAME
MSG_NO_CLAIMS_TO_DEALLOCATE = "no new claims to deallocate"
MSG_STILL_NOT_SCHEDULABLE = "still not schedulable"
MSG_DEALLOCATED = "deallocation of ResourceClaim completed"
MSG_CANNOT_ALLOCATE = "cannot allocate all claims"
MSG_NOT_AVAILABLE = "resourceclaim not available on the node"
MSG_DELETED = "deletion of ResourceClaim completed"
MSG_EXTENDED_CLAIM_LEFT = "cannot schedule extended resource claim"
MSG_CANNOT_FIT_RESOURCE = "cannot fit resource"
DEFAULT_BINDING_TIMEOUT = 600.0


Deallocator = Callable[[ResourceClaim], None]
"""Writes a claim's deallocation (PostFilter) where the plugin's process may call the API."""
Deleter = Callable[[ResourceClaim], None]
"""Deletes a left-over extended-resource claim (PostFilter) where the plugin's process may call the API."""


log = logging.getLogger(__name__)


class DynamicResources:
    """The DynamicResources plugin (structured parameters, kube-scheduler 1.36)."""

    name = NAME

    def __init__(
        self,
        handle: Handle | None = None,
        args: DynamicResourcesArgs | None = None,
        features: DRAFeatures | None = None,
    ) -> None:
        self._handle = handle
        self.args = args if args is not None else DynamicResourcesArgs()
        self.features = features if features is not None else DRAFeatures()
        self.filter_timeout = seconds(self.args.filter_timeout) if self.args.filter_timeout else 0.0
        self.binding_timeout = (
            seconds(self.args.binding_timeout) if self.args.binding_timeout else DEFAULT_BINDING_TIMEOUT
        )
        self.cel_cache = CelCache()
        self.pool_cache = PoolCache()
        #: searches kept across pods (None: every node searched for every pod)
        self.search_cache: SearchCache[Choice] | None = SearchCache()
        self.tracker = (
            ClaimTracker(self._claims, self.features.consumable_capacity)
            if handle is None
            else shared_tracker(handle.snapshot, self._claims, self.features.consumable_capacity)
        )
        #: called with a claim to deallocate; the default applies it to the snapshot (simulation)
        self.deallocator: Deallocator = self._deallocate_in_snapshot
        #: called with a left-over extended-resource claim to delete; the default drops it from the
        #: snapshot (simulation)
        self.claim_deleter: Deleter = self._delete_in_snapshot
        #: seconds between PreBind's checks of binding conditions (upstream: 5 s)
        self.binding_poll_interval = binding.POLL_INTERVAL
        #: whether the handle's snapshot holds the cluster's ResourceClaims; the queue service's
        #: does not, so there PreEnqueue and the hints judge by the pod and the event alone
        self.claims_in_view = True
        #: PostFilter's choice among the claims it could deallocate (upstream: Go's random map order)
        self.rng = random.Random()

    def _claims(self) -> Mapping[str, ResourceClaim]:
        claims: Mapping[str, ResourceClaim] = self._objects().resource_claims
        return claims

    def _objects(self) -> Any:
        if self._handle is None:
            raise RuntimeError(f"{NAME} needs a framework handle")
        return self._handle.snapshot.objects

    # --- events ----------------------------------------------------------------------------------
    def events_to_register(self) -> list[ClusterEventWithHint]:
        node_action = ActionType.ADD | ActionType.UPDATE_NODE_LABEL | ActionType.UPDATE_NODE_ALLOCATABLE
        if not self.features.scheduling_queue_hints:
            node_action |= ActionType.UPDATE_NODE_TAINT
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

    def hint_claim_change(self, pod: Pod, old: object, new: object) -> QueueingHint:
        """Upstream ``isSchedulableAfterClaimChange``."""
        if not isinstance(new, ResourceClaim) or (old is not None and not isinstance(old, ResourceClaim)):
            raise TypeError(f"unexpected object in isSchedulableAfterClaimChange: {type(new).__name__}")
        try:
            uses = self._uses_claim(pod, new)
        except ClaimError:
            return QueueingHint.QUEUE_SKIP
        if old is not None and old.status.allocation is not None and new.status.allocation is None:
            return QueueingHint.QUEUE  # a deallocation frees devices for anyone
        if not uses:
            return QueueingHint.QUEUE_SKIP
        if old is None:
            return QueueingHint.QUEUE
        if old.status == new.status:
            return QueueingHint.QUEUE_SKIP
        return QueueingHint.QUEUE

    def _uses_claim(self, pod: Pod, claim: ResourceClaim) -> bool:
        """Whether ``claim`` is one of the pod's; ClaimError when one of them is not usable yet (with
        the claims in view; without, only a claim not generated yet counts)."""
        if not self.claims_in_view:
            meta = claim.metadata
            return meta.namespace == pod.metadata.namespace and any(
                name == meta.name for _, name, _ in pod_claim_names(pod)
            )
        claims = self._objects().resource_claims
        return any(c.metadata.uid == claim.metadata.uid for _, c in pod_claims(pod, claims))

    def _check_claims(self, pod: Pod) -> None:
        """ClaimError when the pod cannot use its claims now (upstream ``foreachPodResourceClaim``)."""
        if self.claims_in_view:
            pod_claims(pod, self._objects().resource_claims)
        else:
            pod_claim_names(pod)

    def hint_pod_change(self, pod: Pod, old: object, new: object) -> QueueingHint:
        """Upstream ``isSchedulableAfterPodChange``: the pod itself got its generated claims."""
        if not isinstance(new, Pod):
            raise TypeError(f"expected Pod, got {type(new).__name__}")
        if new.metadata.uid != pod.metadata.uid:
            return QueueingHint.QUEUE_SKIP
        try:
            self._check_claims(new)
        except ClaimError:
            return QueueingHint.QUEUE_SKIP
        return QueueingHint.QUEUE

    # --- PreEnqueue ------------------------------------------------------------------------------
    def pre_enqueue(self, pod: Pod) -> Status | None:
        if not pod.spec.resource_claims:
            return None
        try:
            self._check_claims(pod)
        except ClaimError as exc:
            return Status.unresolvable(str(exc))
        return None

    # --- PreFilter -------------------------------------------------------------------------------
    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        st = DRAState()
        state.write(STATE_KEY, st)
        objects = None
        claims: list[ResourceClaim] = []
        if pod.pod.spec.resource_claims:
            objects = self._objects()
            try:
                claims = [claim for _, claim in pod_claims(pod.pod, objects.resource_claims)]
            except ClaimError as exc:
                return None, Status.unresolvable(str(exc))
        extended = self._pre_filter_extended(pod, st)
        if not claims and extended is None:
            return None, Status.skip()
        if objects is None:
            objects = self._objects()
        store = ClaimStore.of(claims, extended)
        st.infos = [ClaimInfo() for _ in store.claims]
        to_allocate = 0
        for index, claim in store.all():
            allocation = claim.status.allocation
            if allocation is not None:
                if allocation.node_selector is not None:
                    matcher = NodeSelectorMatcher(allocation.node_selector)
                    if matcher.errors:
                        return None, Status.as_error("; ".join(matcher.errors))
                    st.infos[index].available_on_nodes = matcher
                continue
            to_allocate += 1
            if self.tracker.pending_allocation(claim.metadata.uid) is not None:
                return None, Status.unresolvable(
                    f"resource claim {claim_ref(claim)} is in the process of being allocated"
                )
            if claim is extended:
                continue  # its requests come per node in Filter
            problem = self._check_requests(claim, objects.device_classes)
            if problem is not None:
                return None, problem
        if to_allocate:
            st.allocator = Allocator(
                self.features,
                self.tracker.allocated_state(),
                objects.device_classes,
                list(objects.resource_slices.values()),
                self.cel_cache,
                self.pool_cache,
                self.search_cache,
            )
            if extended is None and to_allocate == len(store.claims):
                st.fresh_slots = [FRESH] * to_allocate
        st.claims = store
        return None, None

    def _resolver(self) -> DeviceClassResolver:
        if self._handle is None:
            return extended_resources.NO_CLASSES
        return extended_resources.resolver_for(self._objects().device_classes)

    def _pre_filter_extended(self, pod: PodInfo, st: DRAState) -> ResourceClaim | None:
        """Upstream ``preFilterExtendedResources``: for a pod requesting extended resources some
        DeviceClass backs, the claim left from an earlier cycle, else a new in-memory one."""
        if not self.features.extended_resource or self._handle is None:
            return None
        classes = self._objects().device_classes
        if not classes:
            return None
        resolver = self._resolver()
        wanted = extended_resources.mapped_extended_resources(pod.requests_map, resolver)
        if not wanted:
            return None
        st.resolver = resolver
        st.extended_requests = {
            name: amount for name, amount in pod.requests_map.items() if is_scalar_resource(name)
        }
        found = extended_resources.find_extended_resource_claim(
            pod.pod, self._objects().resource_claims.values()
        )
        return found if found is not None else extended_resources.new_special_claim(pod.pod)

    def _check_requests(self, claim: ResourceClaim, classes: Any) -> Status | None:
        """Every request names an existing class (upstream ``validateDeviceClass``)."""
        for request in claim.spec.devices.requests:
            if request.exactly is not None:
                wanted = [(request.exactly.device_class_name, request.name)]
            elif request.first_available:
                if not self.features.prioritized_list:
                    return Status.unresolvable(
                        f"resource claim {claim_ref(claim)}, request {request.name}: has subrequests, "
                        "but the DRAPrioritizedList feature is disabled"
                    )
                wanted = [
                    (sub.device_class_name, f"{request.name}/{sub.name}") for sub in request.first_available
                ]
            else:
                return Status.unresolvable(
                    f"resource claim {claim_ref(claim)}, request {request.name}: unknown request type"
                )
            for class_name, request_name in wanted:
                if not class_name:
                    return Status.as_error(f"request {request_name}: unsupported request type")
                if class_name not in classes:
                    return Status.unresolvable(
                        f"request {request_name}: device class {class_name} does not exist"
                    )
        return None

    @staticmethod
    def _state(state: CycleState) -> DRAState:
        return state.read_as(STATE_KEY, DRAState)

    @classmethod
    def _state_or_error(cls, state: CycleState) -> DRAState | Status:
        """The cycle's state, or the Error status upstream returns when PreFilter did not write it."""
        try:
            return cls._state(state)
        except (KeyError, TypeError) as exc:
            return Status.as_error(exc)

    # --- Filter ----------------------------------------------------------------------------------
    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        st = self._state_or_error(state)
        if isinstance(st, Status):
            return st
        if not st.has_claims:
            return None
        if node.node is None:
            return Status.as_error("node not found")
        return self._filter_node(st, pod, node)

    def _filter_extended(
        self, st: DRAState, pod: PodInfo, node: NodeInfo
    ) -> tuple[ResourceClaim | None, list[ContainerExtendedResourceRequest], Status | None]:
        """Upstream ``filterExtendedResources``: the extended-resource claim with the requests this
        node must serve through DRA (None: its device plugin serves them all, or no such claim)."""
        claim = st.claims.extended()
        if claim is None:
            return None, [], None
        if claim.spec.devices.requests:
            # left from an earlier cycle: PostFilter deletes it and the pod is tried anew
            return None, [], Status.unresolvable(MSG_EXTENDED_CLAIM_LEFT)
        resolver = st.resolver
        allocatable = node.allocatable.scalar
        wanted: dict[str, int] = {}
        for name, amount in st.extended_requests.items():
            if amount == 0 or not extended_resources.is_dra_extended_resource_name(name):
                continue
            offered = allocatable.get(name)
            if resolver.get(name) is not None and not offered:
                wanted[name] = amount
            elif offered is None:
                return None, [], Status.unresolvable(MSG_CANNOT_FIT_RESOURCE)
        if not wanted or claim.status.allocation is not None:
            return None, [], None
        requests, mappings = extended_resources.requests_and_mappings(pod.pod, wanted, resolver)
        devices = msgspec.structs.replace(claim.spec.devices, requests=requests)
        node_claim = msgspec.structs.replace(claim, spec=msgspec.structs.replace(claim.spec, devices=devices))
        return node_claim, mappings, None

    def _filter_node(self, st: DRAState, pod: PodInfo, node_info: NodeInfo) -> Status | None:
        node = node_info.node
        assert node is not None
        if st.fresh_slots is not None:
            # every claim is the pod's own and needs devices: nothing else to check per node
            found, status = self._search(st, node, st.claims.claims)
            if status is not None:
                return status
            st.node_allocations[node.metadata.name] = NodeAllocation(st.fresh_slots, found, st.claims.claims)
            return None
        node_claim, mappings, status = self._filter_extended(st, pod, node_info)
        if status is not None:
            return status
        if node_claim is None and st.claims.no_user_claim():
            return None  # the node's device plugin serves the pod's extended resources
        unavailable: list[int] = []
        for index, claim in st.claims.all():
            matcher = st.infos[index].available_on_nodes
            if matcher is not None and not matcher.matches_node(node):
                unavailable.append(index)
                continue
            if claim.status.allocation is None or not self.features.device_binding_and_status:
                continue
            try:
                ready = binding.claim_ready_for_binding(claim)
            except binding.BindingFailed:
                unavailable.append(index)
                continue
            if not ready and binding.claim_timed_out(claim, self.binding_timeout):
                unavailable.append(index)
        slots: list[AllocationResult | Fresh | None] = []
        choice: Choice | None = None
        to_allocate: list[ResourceClaim] = []
        if st.allocator is not None:
            extended_index = st.claims.extended_index
            for index, claim in st.claims.to_allocate():
                if index == extended_index:
                    if node_claim is None:
                        continue  # nothing to allocate for it on this node (see docs/dra.md)
                    claim = node_claim
                if st.infos[index].allocation is None:
                    to_allocate.append(claim)
            choice, status = self._search(st, node, to_allocate)
            if status is not None:
                return status
            for index, _ in st.claims.to_allocate():
                if index == extended_index and node_claim is None:
                    slots.append(None)
                    continue
                chosen = st.infos[index].allocation
                slots.append(chosen if chosen is not None else FRESH)
        if unavailable:
            st.unavailable_claims.update(unavailable)
            return Status.unresolvable(MSG_NOT_AVAILABLE)
        if st.allocator is not None:
            st.node_allocations[node.metadata.name] = NodeAllocation(
                slots, choice, to_allocate, node_claim, mappings
            )
        return None

    def _search(
        self, st: DRAState, node: Node, to_allocate: list[ResourceClaim]
    ) -> tuple[Choice | None, Status | None]:
        """The allocator's devices for ``to_allocate`` on ``node``, or why the node does not fit."""
        assert st.allocator is not None
        deadline = None
        if self.features.scheduler_filter_timeout and self.filter_timeout > 0:
            deadline = time.monotonic() + self.filter_timeout
        try:
            choice = st.allocator.search(node, to_allocate, deadline)
        except AllocationTimeout:
            return None, Status.as_error(f"node {node.metadata.name}: timed out trying to allocate devices")
        except NodeAllocationError as exc:
            return None, Status.unresolvable(str(exc))
        except AllocationError as exc:
            return None, Status.as_error(exc)
        if choice is None or len(choice.devices) != len(to_allocate):
            return None, Status.unresolvable(MSG_CANNOT_ALLOCATE)
        return choice, None

    # --- PostFilter ------------------------------------------------------------------------------
    def post_filter(
        self, state: CycleState, pod: PodInfo, statuses: NodeToStatus
    ) -> tuple[PostFilterResult | None, Status | None]:
        st = state.get(STATE_KEY, DRAState)
        if st is None:
            # PreFilter did not run for this pod (an earlier PreFilter rejected it): upstream
            # fails reading its cycle state the same way.
            return None, Status.as_error("not found")
        if not st.has_claims:
            return None, Status.unschedulable(MSG_NO_CLAIMS_TO_DEALLOCATE)
        # Upstream walks its map of unavailable claims in Go's random order and deallocates the
        # first one reserved for nobody else (or, meeting a created extended-resource claim, deletes
        # that): each such claim may be the one.
        extended_index = st.claims.extended_index
        left_over = st.claims.extended()
        if left_over is not None and extended_resources.is_special(left_over):
            left_over = None  # still in memory: nothing to delete
        candidates = []
        for index in sorted(st.unavailable_claims):
            if index == extended_index:
                if left_over is not None:
                    candidates.append(index)
                continue
            reserved = st.claims.claims[index].status.reserved_for
            if not reserved or (len(reserved) == 1 and reserved[0].uid == pod.uid):
                candidates.append(index)
        chosen = self.rng.choice(candidates) if candidates else extended_index
        if chosen is not None and chosen == extended_index and left_over is not None:
            try:
                self.claim_deleter(left_over)
            except Exception as exc:
                return None, Status.as_error(exc)
            return None, Status.unschedulable(MSG_DELETED)
        if chosen is None or not candidates:
            return None, Status.unschedulable(MSG_STILL_NOT_SCHEDULABLE)
        claim = st.claims.claims[chosen]
        try:
            self.deallocator(claim)
        except Exception as exc:
            return None, Status.as_error(exc)
        return None, Status.unschedulable(MSG_DEALLOCATED)

    def _deallocate_in_snapshot(self, claim: ResourceClaim) -> None:
        """Without an API: the claim as its deallocation would leave it (simulation)."""
        status = msgspec.structs.replace(claim.status, allocation=None, reserved_for=[], devices=[])
        self._objects().resource_claims[claim.key] = msgspec.structs.replace(claim, status=status)

    def _delete_in_snapshot(self, claim: ResourceClaim) -> None:
        """Without an API: the left-over extended-resource claim is gone (simulation)."""
        self._objects().resource_claims.pop(claim.key, None)

    # --- Score -----------------------------------------------------------------------------------
    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        if not self.features.prioritized_list:
            return 0
        st = self._state(state)
        if not st.has_claims:
            return 0
        allocations = st.node_allocations.get(node.name)
        if allocations is None:
            return 0
        return compute_score(st.claims.claims, allocations.results)

    def score_batch(self, state: CycleState, pod: PodInfo, snapshot: Snapshot, rows: Rows) -> Int64Array:
        st = state.get(STATE_KEY, DRAState)
        if st is None or not st.has_claims or not self.features.prioritized_list:
            return np.zeros(len(rows), dtype=np.int64)
        if not any(request.first_available for c in st.claims.claims for request in c.spec.devices.requests):
            return np.zeros(len(rows), dtype=np.int64)  # only subrequests score
        nodes = snapshot.nodes
        return np.fromiter(
            (self.score(state, pod, nodes[r]) for r in rows.tolist()), dtype=np.int64, count=len(rows)
        )

    def normalize_score(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo], scores: Int64Array
    ) -> Status | None:
        """Upstream ``DefaultNormalizeScore(MaxNodeScore, false, ...)``: scale the maximum to 100."""
        default_normalize_score(MAX_NODE_SCORE, False, scores)
        return None

    # --- Reserve / Unreserve ---------------------------------------------------------------------
    def reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        st = self._state_or_error(state)
        if isinstance(st, Status):
            return st
        st.node_name = node_name
        to_allocate = list(st.claims.to_allocate())
        if not to_allocate or st.allocator is None:
            return None
        extended_index = st.claims.extended_index
        allocations = st.node_allocations.get(node_name)
        if allocations is None or not allocations.results:
            if all(index == extended_index for index, _ in to_allocate):
                return None  # only the extended-resource claim, which the node's device plugin serves
            return Status.as_error("claim allocation not found for node")
        results = allocations.results
        if len(results) != len(to_allocate):
            return Status.as_error(
                f"internal error, have {len(results)} allocations, {len(to_allocate)} claims to "
                f"allocate, want {len(to_allocate)} claims"
            )
        for (index, claim), allocation in zip(to_allocate, results, strict=True):
            if allocation is None:
                continue  # the extended-resource claim is not needed on this node
            st.infos[index].allocation = allocation
            if index == extended_index:
                assert allocations.extended_claim is not None
                claim = allocations.extended_claim
                st.extended_claim, st.mappings = claim, list(allocations.mappings)
            self.tracker.signal_pending_allocation(
                claim.metadata.uid, drastate.with_allocation(claim, allocation)
            )
        return None

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        st = state.get(STATE_KEY, DRAState)
        if st is None or not st.has_claims:
            return
        for _, claim in st.claims.all_user_claims():
            self.tracker.maybe_remove_pending_allocation(claim.metadata.uid)
        if st.claims.extended() is not None:
            self.tracker.maybe_remove_pending_allocation(st.claims.initial_extended_uid)

    def bound_elsewhere(self, state: CycleState, pod: PodInfo) -> None:
        """The deciding replica saw the pod bound: the binder's PreBind wrote the allocations this
        Reserve put in flight, which end here, as upstream's PreBind ends them once written
        (``MaybeRemoveClaimPendingAllocation(uid, force)``). Left to the snapshot, one would end only
        when the replica's snapshot shows its claim allocated; a claim allocated, then deallocated (its
        pod deleted) between two looks would stay taken for as long as it exists."""
        st = state.get(STATE_KEY, DRAState)
        if st is None or not st.has_claims:
            return
        for _, claim in st.claims.all_user_claims():
            self.tracker.maybe_remove_pending_allocation(claim.metadata.uid, force=True)
        if st.claims.extended() is not None:
            self.tracker.maybe_remove_pending_allocation(st.claims.initial_extended_uid, force=True)

    async def unreserve_api(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        """Unreserve's API half, run by the binder when a binding cycle fails, with the state PreBind
        left: the pod is removed from the ``reservedFor`` of the claims PreBind reserved (upstream
        Unreserve; the in-flight allocations are dropped by the deciding replica's :meth:`unreserve`)."""
        st = state.get(STATE_KEY, DRAState)
        if st is None or not st.has_claims or self._handle is None:
            return
        try:
            api = binding.ClaimApi.of(self._handle.client)
        except binding.PreBindError:
            return
        for error in await binding.unreserve_claims(api, st, pod.pod):
            log.error("%s", error)

    # --- the informer's assume check (PlacementStatePlugin) ------------------------------------------
    def placement_conflict(self, data: bytes, node: NodeInfo) -> str:
        """Why the allocations a replica's placement carries may not be taken on the cache now."""
        if node.node is None:
            return f"node {node.name} is not known"
        slices = self._objects().resource_slices.values()
        claims = drastate.allocated_claims(data)
        return assumed.placement_conflict(self.tracker, claims, node.node, slices, self.features)

    def hold_placement(self, pod_uid: str, data: bytes) -> None:
        """An accepted placement's allocations are taken until the cache shows them."""
        self.tracker.hold(pod_uid, drastate.allocated_claims(data))

    def release_placement(self, pod_uid: str, dropped: bool) -> None:
        self.tracker.release(pod_uid, dropped)

    # --- hand-over to the binder -----------------------------------------------------------------
    def export_state(self, state: CycleState) -> bytes:
        """The cycle's claims and chosen allocations, for PreBind in the binder (after Reserve);
        nothing for a pod without claims (the binder then has nothing to do)."""
        st = self._state(state)
        return drastate.export_state(st) if st.has_claims else b""

    def import_state(self, state: CycleState, data: bytes) -> None:
        state.write(STATE_KEY, drastate.import_state(data))

    def objects_after_pre_bind(self, state: CycleState, pod: PodInfo) -> list[ResourceClaim]:
        """The pod's claims as PreBind leaves them (allocated as Reserve chose, reserved for the pod;
        the extended-resource claim created, named as the API server would): what ``ksched
        simulate`` applies to its snapshot when a pod is placed."""
        st = self._state(state)
        out = []
        extended_index = st.claims.extended_index
        for index, claim in st.claims.all():
            if is_reserved_for(pod.pod, claim):
                out.append(claim)
                continue
            allocation = st.infos[index].allocation
            if index == extended_index:
                if allocation is None or st.extended_claim is None:
                    continue  # not needed on the chosen node
                claim = st.extended_claim
                if extended_resources.is_special(claim):
                    name = extended_resources.simulated_name(claim)
                    claim = msgspec.structs.replace(
                        claim, metadata=msgspec.structs.replace(claim.metadata, name=name)
                    )
            bound = drastate.with_allocation(claim, allocation) if allocation is not None else claim
            status = msgspec.structs.replace(
                bound.status, reserved_for=[*bound.status.reserved_for, pod_reference(pod.pod)]
            )
            out.append(msgspec.structs.replace(bound, status=status))
        return out

    # --- PreBind ---------------------------------------------------------------------------------
    async def pre_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        st = state.get(STATE_KEY, DRAState)
        if st is None or not st.has_claims:
            return None  # no claims: the scheduler exported no state for this pod
        client = self._handle.client if self._handle is not None else None
        try:
            api = binding.ClaimApi.of(client)
            await binding.bind_claims(api, st, pod.pod, self.features)
            if self.features.device_binding_and_status and binding.has_binding_conditions(st.claims.claims):
                await binding.wait_for_binding_conditions(
                    api, st, self.binding_timeout, self.binding_poll_interval
                )
        except binding.PreBindError as exc:
            return Status.as_error(exc)
        return None


# The extension points DynamicResources implements, checked by mypy against ksched.framework.interfaces
# (upstream's ``var _ fwk.<Point>Plugin = &DynamicResources{}`` lines).
_PRE_ENQUEUE: type[PreEnqueuePlugin] = DynamicResources
_ENQUEUE_EXTENSIONS: type[EnqueueExtensions] = DynamicResources
_PRE_FILTER: type[PreFilterPlugin] = DynamicResources
_FILTER: type[FilterPlugin] = DynamicResources
_POST_FILTER: type[PostFilterPlugin] = DynamicResources
_SCORE: type[ScorePlugin] = DynamicResources
_BATCH_SCORE: type[BatchScorePlugin] = DynamicResources
_SCORE_EXTENSIONS: type[ScoreExtensions] = DynamicResources
_RESERVE: type[ReservePlugin] = DynamicResources
_PRE_BIND: type[PreBindPlugin] = DynamicResources
_PLACEMENT_STATE: type[PlacementStatePlugin] = DynamicResources


def compute_score(claims: Sequence[ResourceClaim], allocations: Sequence[AllocationResult | None]) -> int:
    """Upstream ``computeScore``: per chosen subrequest, 8 minus its position in ``firstAvailable``
    (``allocations``: one per claim without allocation, in order; None for one not allocated on
    this node, the extended-resource claim a device plugin makes unnecessary)."""
    score = 0
    pending = iter(allocations)
    for claim in claims:
        allocation = claim.status.allocation
        if allocation is None:
            try:
                allocation = next(pending)
            except StopIteration:
                raise RuntimeError(
                    "number of allocations is smaller than number of claims needing allocation"
                ) from None
            if allocation is None:
                continue
        chosen = {r.request for r in allocation.devices.results if is_sub_request_ref(r.request)}
        for request in claim.spec.devices.requests:
            if request.exactly is not None:
                continue
            for i, sub in enumerate(request.first_available):
                if f"{request.name}/{sub.name}" in chosen:
                    score += FIRST_AVAILABLE_MAX_SIZE - i
    return score


def new(
    args: DynamicResourcesArgs | None, handle: Handle, features: Features = DEFAULT_FEATURES
) -> DynamicResources:
    return DynamicResources(handle, args, DRAFeatures.from_features(features))
