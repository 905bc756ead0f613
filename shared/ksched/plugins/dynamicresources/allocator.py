"""The structured-parameters allocator (upstream ``structured/internal/incubating``, the variant
kube-scheduler 1.36 runs with its default feature gates).

For one node it allocates all claims of a pod or none: claim after claim, request after request,
device after device, trying the devices of the node's pools in their order (first fit, with
backtracking). Devices in use, not selected by the class's and the request's CEL selectors, tainted
without toleration, short of counters or capacity, or violating a constraint are skipped. A request
with ``firstAvailable`` takes its first subrequest that leads to a full solution.

``Allocator.search`` returns None when the claims do not fit on the node, raises
:class:`NodeAllocationError` for a reason specific to the node (allocation may succeed elsewhere)
and :class:`AllocationError` for a problem with the claims or classes (the cycle fails); the
:class:`Choice` it returns builds the allocation results.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from ksched.api.core import Node, NodeSelector, NodeSelectorRequirement, NodeSelectorTerm
from ksched.api.resource import (
    ALLOCATION_MODE_ALL,
    ALLOCATION_MODE_EXACT_COUNT,
    ALLOCATION_RESULTS_MAX_SIZE,
    TAINT_EFFECT_NO_EXECUTE,
    TAINT_EFFECT_NO_SCHEDULE,
    AllocationResult,
    CapacityRequirements,
    Device,
    DeviceAllocationConfiguration,
    DeviceAllocationResult,
    DeviceClass,
    DeviceRequest,
    DeviceRequestAllocationResult,
    DeviceSelector,
    DeviceSubRequest,
    DeviceToleration,
    ExactDeviceRequest,
    ResourceClaim,
    ResourceSlice,
)
from ksched.apimachinery.quantity import Quantity, parse_quantity
from ksched.plugins.dynamicresources.capacity import (
    CapacityError,
    consumed_from_request,
    request_over_capacity,
)
from ksched.plugins.dynamicresources.cel import CelCache, CelRuntimeError
from ksched.plugins.dynamicresources.constraints import Constraint, DistinctAttribute, MatchAttribute
from ksched.plugins.dynamicresources.devices import (
    AllocatedState,
    ConsumedCapacity,
    DeviceID,
    add_capacity,
    sub_capacity,
)
from ksched.plugins.dynamicresources.features import DRAFeatures
from ksched.plugins.dynamicresources.pools import Pool, PoolCache, PoolError, counters_left, node_matches
from ksched.plugins.dynamicresources.searchcache import SearchCache, SearchMemo
from ksched.plugins.dynamicresources.tolerations import tolerates

_Undo = Callable[[], None]
_ZERO = parse_quantity("0")
CONFIG_SOURCE_CLASS = "FromClass"
CONFIG_SOURCE_CLAIM = "FromClaim"


class AllocationError(RuntimeError):
    """Allocation cannot proceed for the pod (a claim or class is broken): the cycle fails."""


class NodeAllocationError(AllocationError):
    """Upstream ``ErrFailedAllocationOnNode``: only this node fails; the text is the reason."""


class AllocationTimeout(AllocationError):
    """The filter timeout passed while searching (DRASchedulerFilterTimeout)."""


class _MaxSizeExceeded(Exception):
    """A claim would get more than 32 devices: backtrack further
    (upstream ``errAllocationResultMaxSizeExceeded``)."""


def claim_ref(claim: ResourceClaim) -> str:
    """``klog.KObj(claim)``: ``namespace/name``."""
    return (
        f"{claim.metadata.namespace}/{claim.metadata.name}"
        if claim.metadata.namespace
        else claim.metadata.name
    )


@dataclass(frozen=True, slots=True)
class RequestView:
    """A request or a subrequest, read the same way (upstream ``requestAccessor``); an unset mode or
    count reads as the API server defaults them (ExactCount, 1)."""

    name: str
    class_name: str
    mode: str
    count: int
    admin_access: bool
    has_admin_access: bool
    selectors: list[DeviceSelector]
    tolerations: list[DeviceToleration]
    capacity: CapacityRequirements | None

    @classmethod
    def of_request(cls, request: DeviceRequest) -> RequestView:
        exactly = request.exactly
        if exactly is None:
            raise AllocationError(f"request {request.name}: unknown request type")
        return cls._of(request.name, exactly, bool(exactly.admin_access), exactly.admin_access is not None)

    @classmethod
    def of_sub_request(cls, sub: DeviceSubRequest) -> RequestView:
        return cls._of(sub.name, sub, False, False)

    @classmethod
    def _of(
        cls,
        name: str,
        spec: ExactDeviceRequest | DeviceSubRequest,
        admin_access: bool,
        has_admin_access: bool,
    ) -> RequestView:
        mode = spec.allocation_mode or ALLOCATION_MODE_EXACT_COUNT
        count = spec.count or (1 if mode == ALLOCATION_MODE_EXACT_COUNT else 0)
        return cls(
            name,
            spec.device_class_name,
            mode,
            count,
            admin_access,
            has_admin_access,
            spec.selectors,
            spec.tolerations,
            spec.capacity,
        )


class RequestKey(NamedTuple):
    claim: int
    request: int
    sub_request: int


class _Location(NamedTuple):
    pool: int = 0
    slice: int = 0
    device: int = 0


@dataclass(slots=True)
class _Candidate:
    device: Device
    id: DeviceID
    slice: ResourceSlice
    pool: Pool


@dataclass
class _RequestData:
    request: RequestView
    parent: RequestView | None
    device_class: DeviceClass | None = None
    num_devices: int = 0
    selected_sub_request: int = 0
    all_devices: list[_Candidate] = field(default_factory=list)

    def request_name(self) -> str:
        return f"{self.parent.name}/{self.request.name}" if self.parent is not None else self.request.name


@dataclass(slots=True)
class _DeviceResult:
    request: str
    parent: str
    candidate: _Candidate
    share_id: str | None = None
    consumed: ConsumedCapacity | None = None
    admin_access: bool | None = None

    def request_name(self) -> str:
        return f"{self.parent}/{self.request}" if self.parent else self.request


def taint_prevents_allocation(device: Device, tolerations: Sequence[DeviceToleration]) -> bool:
    """A NoSchedule or NoExecute taint that no toleration of the request tolerates."""
    for taint in device.taints:
        if taint.effect in (TAINT_EFFECT_NO_SCHEDULE, TAINT_EFFECT_NO_EXECUTE) and not any(
            tolerates(t, taint) for t in tolerations
        ):
            return True
    return False


class Allocator:
    """Upstream ``incubating.Allocator``: built once per pod (PreFilter), used for every node."""

    def __init__(
        self,
        features: DRAFeatures,
        allocated: AllocatedState,
        classes: Mapping[str, DeviceClass],
        slices: Sequence[ResourceSlice],
        cel_cache: CelCache,
        pool_cache: PoolCache | None = None,
        search_cache: SearchCache[Choice] | None = None,
    ) -> None:
        self.features = features
        self.allocated = allocated
        self.classes = classes
        self.cel_cache = cel_cache
        #: the nodes' pools, kept across pods by the plugin while the slices are the same objects
        self.pool_cache = pool_cache if pool_cache is not None else PoolCache()
        self.pool_cache.sync(slices, features)
        #: counters left in each pool (keyed by pool name, as upstream) after allocated devices
        self.available_counters: dict[str, dict[str, dict[str, Quantity]]] = {}
        #: calls of the search step, upstream's ``NumAllocateOneInvocations``
        self.steps = 0
        #: searches kept across pods (None: every node is searched)
        self.search_cache = search_cache
        self._memo_claims: Sequence[ResourceClaim] = ()
        self._memo: SearchMemo[Choice] | None = None

    def search(
        self, node: Node, claims: Sequence[ResourceClaim], deadline: float | None = None
    ) -> Choice | None:
        """The devices ``claims`` get on ``node`` (None when they do not all fit); the allocation
        results are built from it (:meth:`Choice.results`) for the node the pod gets. A search is
        kept across pods (the plugin's :class:`SearchCache`) while its node, the node's pools and
        the devices taken in them are the same and the claims ask for the same (same specs, same
        class objects)."""
        try:
            pools = self.pool_cache.pools(node)
        except PoolError as exc:
            raise AllocationError(f"gather pool information: {exc}") from None
        memo = self._memo_for(claims)
        if memo is None:
            return _Search(self, node, list(claims), pools, deadline).run()
        versions = _pool_versions(self.allocated.versions, pools)
        known = memo.get(node, pools, versions)
        if known is not None:
            return known[0]
        search = _Search(self, node, list(claims), pools, deadline)
        choice = search.run()
        if search.reusable():
            memo.put(node, pools, versions, choice)
        return choice

    def _memo_for(self, claims: Sequence[ResourceClaim]) -> SearchMemo[Choice] | None:
        if self.search_cache is None or self.allocated.versions is None:
            return None
        last = self._memo_claims
        if claims is last:
            return self._memo  # the plugin passes the pod's list of claims to every node
        if len(last) != len(claims) or any(a is not b for a, b in zip(last, claims, strict=True)):
            self._memo = self.search_cache.memo(claims, self.classes, self.features)
        self._memo_claims = claims
        return self._memo

    def available_counters_of(self, pool: Pool) -> dict[str, dict[str, Quantity]]:
        """The pool's counters minus those of devices already allocated (computed once per pool)."""
        known = self.available_counters.get(pool.name)
        if known is not None:
            return known
        available = counters_left(pool, self.allocated)
        self.available_counters[pool.name] = available
        return available


class _Search:
    """One ``Allocate`` call (upstream's ``allocator``)."""

    def __init__(
        self,
        owner: Allocator,
        node: Node,
        claims: list[ResourceClaim],
        pools: list[Pool],
        deadline: float | None,
    ) -> None:
        self.owner = owner
        self.features = owner.features
        self.node = node
        self.claims = claims
        self.deadline = deadline
        self.pools = pools
        self.request_data: dict[RequestKey, _RequestData] = {}
        self.constraints: list[list[Constraint]] = [[] for _ in claims]
        self.matches: dict[tuple[DeviceID, RequestKey], bool] = {}
        self.consumed_counters: dict[str, dict[str, dict[str, Quantity]]] = {}
        self.allocating_devices: dict[DeviceID, set[int]] = {}
        self.allocating_capacity: dict[DeviceID, ConsumedCapacity] = {}
        self.results: list[list[_DeviceResult]] = [[] for _ in claims]

    # --- setup ------------------------------------------------------------------------------------
    def run(self) -> Choice | None:
        for claim_index, claim in enumerate(self.claims):
            self._prepare_claim(claim_index, claim)
        try:
            done = self._allocate_one(RequestKey(0, 0, 0), 0, False, _Location())
        except _MaxSizeExceeded:
            raise AllocationError("allocation max size exceeded") from None
        if not done:
            if any(pool.is_invalid for pool in self.pools):
                raise NodeAllocationError("invalid resource pools were encountered")
            return None
        choice = Choice(
            self.node.metadata.name, self.results, self.request_data, self.features.device_binding_and_status
        )
        for claim_index, claim in enumerate(self.claims):
            # what building the result could refuse is refused now, for every node as upstream
            choice.node_selector(claim_index, claim)
        return choice

    def reusable(self) -> bool:
        """Whether the outcome depends only on what :class:`SearchCache` compares: not on the pools'
        counters (kept per pool name across the pod's nodes, as upstream) nor on random share IDs."""
        if any(pool.counter_sets for pool in self.pools):
            return False
        return not any(dr.share_id is not None for devices in self.results for dr in devices)

    def _prepare_claim(self, claim_index: int, claim: ResourceClaim) -> None:
        min_devices = 0
        for request_index, request in enumerate(claim.spec.devices.requests):
            has_subs = bool(request.first_available)
            if not self.features.prioritized_list and has_subs:
                raise AllocationError(
                    f"claim {claim_ref(claim)}, request {request.name}: has subrequests, but the "
                    "DRAPrioritizedList feature is disabled"
                )
            if not self.features.consumable_capacity and not self.features.stable_allocator:
                self._refuse_capacity_requests(claim, request)  # the stable one ignores them
            if has_subs:
                parent = _parent_view(request)
                fewest = None
                for sub_index, sub in enumerate(request.first_available):
                    key = RequestKey(claim_index, request_index, sub_index)
                    data = self._validate(RequestView.of_sub_request(sub), parent, key)
                    self.request_data[key] = data
                    fewest = data.num_devices if fewest is None else min(fewest, data.num_devices)
                min_devices += fewest or 0
            else:
                key = RequestKey(claim_index, request_index, 0)
                data = self._validate(RequestView.of_request(request), None, key)
                self.request_data[key] = data
                min_devices += data.num_devices
        if min_devices > ALLOCATION_RESULTS_MAX_SIZE:
            raise AllocationError(
                f"claim {claim_ref(claim)}: number of requested devices {min_devices} exceeds the claim "
                f"limit of {ALLOCATION_RESULTS_MAX_SIZE}"
            )
        constraints: list[Constraint] = []
        for i, constraint in enumerate(claim.spec.devices.constraints):
            if constraint.match_attribute is not None:
                constraints.append(MatchAttribute(constraint.requests, constraint.match_attribute))
            elif constraint.distinct_attribute is not None and not self.features.stable_allocator:
                constraints.append(DistinctAttribute(constraint.requests, constraint.distinct_attribute))
            else:
                raise AllocationError(
                    f"claim {claim_ref(claim)}, constraint #{i}: empty constraint "
                    "(unsupported constraint type?)"
                )
        self.constraints[claim_index] = constraints

    @staticmethod
    def _refuse_capacity_requests(claim: ResourceClaim, request: DeviceRequest) -> None:
        if request.exactly is not None and request.exactly.capacity is not None:
            raise AllocationError(
                f"claim {claim_ref(claim)}, request {request.name}: has capacity requests, but the "
                "DRAConsumableCapacity feature is disabled"
            )
        for sub in request.first_available:
            if sub.capacity is not None:
                raise AllocationError(
                    f"claim {claim_ref(claim)}, subrequest {sub.name}: has capacity requests, but the "
                    "DRAConsumableCapacity feature is disabled"
                )

    def _validate(self, request: RequestView, parent: RequestView | None, key: RequestKey) -> _RequestData:
        """Upstream ``validateDeviceRequest``: the class, and how many devices the request needs."""
        claim = self.claims[key.claim]
        data = _RequestData(request, parent)
        for i, selector in enumerate(request.selectors):
            if selector.cel is None:
                raise AllocationError(
                    f"claim {claim_ref(claim)}, request {request.name}, selector #{i}: CEL expression empty "
                    "(unsupported selector type?)"
                )
        if not self.features.admin_access and request.has_admin_access:
            raise AllocationError(
                f"claim {claim_ref(claim)}, request {request.name}: admin access is requested, but the "
                "feature is disabled"
            )
        if not request.class_name:
            raise AllocationError(
                f"claim {claim_ref(claim)}, request {request.name}: missing device class name "
                "(unsupported request type?)"
            )
        device_class = self.owner.classes.get(request.class_name)
        if device_class is None:
            raise AllocationError(
                f"claim {claim_ref(claim)}, request {request.name}: could not retrieve device class "
                f'{request.class_name}: deviceclass.resource.k8s.io "{request.class_name}" not found'
            )
        data.device_class = device_class
        if request.mode == ALLOCATION_MODE_EXACT_COUNT:
            data.num_devices = request.count
        elif request.mode == ALLOCATION_MODE_ALL:
            for pool in self.pools:
                if pool.is_incomplete:
                    raise AllocationError(
                        f"claim {claim_ref(claim)}, request {request.name}: asks for all devices, but "
                        f"resource pool {pool} is currently being updated"
                    )
                if pool.is_invalid:
                    raise AllocationError(
                        f"claim {claim_ref(claim)}, request {request.name}: asks for all devices, but "
                        f"resource pool {pool} is currently invalid"
                    )
                for slice_ in pool.slices_targeting_node:
                    for index, device in enumerate(slice_.spec.devices):
                        if not self._selectable(key, data, slice_, index):
                            continue
                        if self.features.consumable_capacity and not self._fits_capacity(
                            request, slice_, device
                        ):
                            continue
                        device_id = DeviceID(slice_.spec.driver, slice_.spec.pool.name, device.name)
                        data.all_devices.append(_Candidate(device, device_id, slice_, pool))
            data.num_devices = len(data.all_devices)
        else:
            raise AllocationError(
                f"claim {claim_ref(claim)}, request {request.name}: unsupported count mode {request.mode}"
            )
        return data

    # --- the search -------------------------------------------------------------------------------
    def _allocate_one(
        self, key: RequestKey, device_index: int, sub_request_mode: bool, start: _Location
    ) -> bool:
        """Upstream ``allocateOne``: find a device for position ``device_index`` of ``key``'s request
        and, recursively, for everything after it."""
        self.owner.steps += 1
        if self.deadline is not None and time.monotonic() > self.deadline:
            raise AllocationTimeout("filter operation aborted: context deadline exceeded")
        if key.claim >= len(self.claims):
            return True
        claim = self.claims[key.claim]
        if key.request >= len(claim.spec.devices.requests):
            try:
                return self._allocate_one(RequestKey(key.claim + 1, 0, 0), 0, False, _Location())
            except _MaxSizeExceeded:
                return False  # another subrequest of an earlier claim might need fewer devices
        data = self.request_data[key]
        if not sub_request_mode and data.parent is not None:
            return self._allocate_first_available(key)
        request = data.request
        all_mode = request.mode == ALLOCATION_MODE_ALL
        if all_mode and not data.all_devices:
            return False
        if device_index >= data.num_devices:
            return self._allocate_one(RequestKey(key.claim, key.request + 1, 0), 0, False, _Location())
        if len(self.results[key.claim]) + data.num_devices - device_index > ALLOCATION_RESULTS_MAX_SIZE:
            raise _MaxSizeExceeded
        if all_mode:
            candidate = data.all_devices[device_index]
            undo = self._allocate_device(key, candidate, must=True)
            if undo is None:
                return False
            try:
                done = self._allocate_one(key, device_index + 1, sub_request_mode, _Location())
            except BaseException:
                undo()
                raise
            if not done:
                undo()
            return done
        for pool_index in range(start.pool, len(self.pools)):
            pool = self.pools[pool_index]
            if pool.is_incomplete or pool.is_invalid:
                continue
            first_slice = start.slice if pool_index == start.pool else 0
            for slice_index in range(first_slice, len(pool.slices_targeting_node)):
                slice_ = pool.slices_targeting_node[slice_index]
                same_slice = pool_index == start.pool and slice_index == start.slice
                devices = slice_.spec.devices
                for index in range(start.device if same_slice else 0, len(devices)):
                    device = devices[index]
                    device_id = DeviceID(pool.driver, pool.name, device.name)
                    if request.admin_access:
                        if key.claim in self.allocating_devices.get(device_id, ()):
                            continue
                    elif self._in_use(device_id):
                        continue
                    if not self._selectable(key, data, slice_, index):
                        continue
                    if self.features.consumable_capacity and not self._fits_capacity(request, slice_, device):
                        continue
                    undo = self._allocate_device(key, _Candidate(device, device_id, slice_, pool), must=False)
                    if undo is None:
                        continue
                    try:
                        done = self._allocate_one(
                            key,
                            device_index + 1,
                            sub_request_mode,
                            _Location(pool_index, slice_index, index + 1),
                        )
                    except BaseException:
                        undo()
                        raise
                    if done:
                        return True
                    undo()
        return False

    def _allocate_first_available(self, key: RequestKey) -> bool:
        """Try the subrequests in order; the first that leads to a full solution is chosen."""
        all_exceeded = True
        sub_index = 0
        while True:
            sub_key = RequestKey(key.claim, key.request, sub_index)
            if sub_key not in self.request_data:
                if all_exceeded:
                    raise _MaxSizeExceeded
                return False
            try:
                success = self._allocate_one(sub_key, 0, True, _Location())
            except _MaxSizeExceeded:
                sub_index += 1
                continue
            all_exceeded = False
            if success:
                self.request_data[key].selected_sub_request = sub_index
                return True
            sub_index += 1

    def _in_use(self, device_id: DeviceID) -> bool:
        return device_id in self.owner.allocated.allocated_devices or bool(
            self.allocating_devices.get(device_id)
        )

    def _capacity_in_use(self, device_id: DeviceID) -> bool:
        return device_id in self.owner.allocated.aggregated_capacity or device_id in self.allocating_capacity

    def _fits_capacity(self, request: RequestView, slice_: ResourceSlice, device: Device) -> bool:
        """Upstream ``CmpRequestOverCapacity`` of the allocator; a request naming an unknown capacity
        skips the device."""
        if not device.capacity:
            # nothing to consume: it fits unless the request names a capacity (which is unknown)
            return request.capacity is None or not request.capacity.requests
        device_id = DeviceID(slice_.spec.driver, slice_.spec.pool.name, device.name)
        current = self.owner.allocated.aggregated_capacity.get(device_id, {})
        try:
            return request_over_capacity(
                current, request.capacity, device.capacity, self.allocating_capacity.get(device_id)
            )
        except CapacityError:
            return False

    def _selectable(self, key: RequestKey, data: _RequestData, slice_: ResourceSlice, index: int) -> bool:
        """Upstream ``isSelectable``: class and request selectors, and per-device node selection."""
        device = slice_.spec.devices[index]
        if not self.features.device_binding_and_status and device.binding_conditions:
            return False
        device_id = DeviceID(slice_.spec.driver, slice_.spec.pool.name, device.name)
        cache_key = (device_id, key)
        known = self.matches.get(cache_key)
        if known is not None:
            return known
        verdict = True
        if (
            data.device_class is not None
            and not self._selectors_match(
                key, device, device_id, data.device_class, data.device_class.spec.selectors
            )
        ) or not self._selectors_match(key, device, device_id, None, data.request.selectors):
            verdict = False
        elif slice_.spec.per_device_node_selection:
            try:
                verdict = node_matches(
                    self.node, device.node_name or "", bool(device.all_nodes), device.node_selector
                )
            except PoolError as exc:
                raise AllocationError(str(exc)) from None
        self.matches[cache_key] = verdict
        return verdict

    def _selectors_match(
        self,
        key: RequestKey,
        device: Device,
        device_id: DeviceID,
        device_class: DeviceClass | None,
        selectors: Sequence[DeviceSelector],
    ) -> bool:
        for i, selector in enumerate(selectors):
            owner = (
                f"class {device_class.metadata.name}"
                if device_class is not None
                else f"claim {claim_ref(self.claims[key.claim])}"
            )
            if selector.cel is None:
                raise AllocationError(
                    f"{owner}: selector #{i}: CEL expression empty (unsupported selector type?)"
                )
            compiled = self.owner.cel_cache.get_or_compile(selector.cel.expression)
            if compiled.error is not None:
                raise AllocationError(f"{owner}: selector #{i}: CEL compile error: {compiled.error}")
            try:
                if not compiled.matches(device, device_id.driver):
                    return False
            except CelRuntimeError as exc:
                raise AllocationError(f"{owner}: selector #{i}: CEL runtime error: {exc}") from None
        return True

    def _allocate_device(self, key: RequestKey, candidate: _Candidate, must: bool) -> _Undo | None:
        """Upstream ``allocateDevice``: take ``candidate`` for ``key`` if it is free and satisfies
        counters, taints and constraints; returns how to give it back, or None."""
        claim_index = key.claim
        data = self.request_data[key]
        request = data.request
        device, device_id = candidate.device, candidate.id
        multiple = self.features.consumable_capacity and bool(device.allow_multiple_allocations)
        if (
            not multiple
            and request.admin_access
            and claim_index in self.allocating_devices.get(device_id, ())
        ):
            return None
        if not request.admin_access and self._in_use(device_id):
            return None
        if not self.features.partitionable_devices and device.consumes_counters:
            return None
        skip_counters = multiple and self._capacity_in_use(device_id)
        if not skip_counters and device.consumes_counters and not self._take_counters(candidate):
            return None
        if data.parent is None:
            base, sub = request.name, ""
        else:
            base, sub = data.parent.name, request.name
        # As upstream, counters taken above are not given back when a taint or a constraint refuses
        # the device (they stay counted for the rest of this search).
        if self.features.device_taints and taint_prevents_allocation(device, request.tolerations):
            return None
        constraints = self.constraints[claim_index]
        for i, constraint in enumerate(constraints):
            if constraint.add(base, sub, device, device_id):
                continue
            if must:
                raise AllocationError(
                    f"claim {claim_ref(self.claims[claim_index])}, request {request.name}: cannot add device "
                    f"{device_id} because a claim constraint would not be satisfied"
                )
            for earlier in constraints[:i]:
                earlier.remove(base, sub, device, device_id)
            return None
        holders = self.allocating_devices.setdefault(device_id, set())
        if not multiple:
            holders.add(claim_index)
        consumed: ConsumedCapacity = {}
        share_id: str | None = None
        if self.features.consumable_capacity:
            if not self._fits_capacity(request, candidate.slice, device):
                return None  # as upstream, without undoing the constraints
            if multiple:
                consumed = consumed_from_request(request.capacity, device.capacity)
                share_id = str(uuid.uuid4())
                add_capacity(self.allocating_capacity.setdefault(device_id, {}), consumed)
        result = _DeviceResult(
            request=request.name,
            parent=data.parent.name if data.parent is not None else "",
            candidate=candidate,
            share_id=share_id,
            consumed=consumed or None,
            admin_access=True if request.admin_access else None,
        )
        results = self.results[claim_index]
        previous = len(results)
        results.append(result)

        def undo() -> None:
            for constraint in constraints:
                constraint.remove(base, sub, device, device_id)
            holders.discard(claim_index)
            if multiple:
                if result.consumed:
                    taken = self.allocating_capacity.get(device_id)
                    if taken is not None:
                        sub_capacity(taken, result.consumed)
                        if all(q.is_zero() for q in taken.values()):
                            del self.allocating_capacity[device_id]
            elif self.features.partitionable_devices and device.consumes_counters:
                self._give_back_counters(candidate)
            del results[previous:]

        return undo

    def _take_counters(self, candidate: _Candidate) -> bool:
        """Upstream ``checkAvailableCounters``: count the device's counters as consumed if the pool
        still has them."""
        pool = candidate.pool
        available = self.owner.available_counters_of(pool)
        consumed = self.consumed_counters.setdefault(pool.name, {})
        for consumption in candidate.device.consumes_counters:
            counters = consumed.setdefault(consumption.counter_set, {})
            for name, c in consumption.counters.items():
                value = parse_quantity(c.value)
                counters[name] = counters[name] + value if name in counters else value
        for set_name, counters in available.items():
            used = consumed.get(set_name, {})
            for name, amount in counters.items():
                if amount.cmp(used.get(name, _ZERO)) < 0:
                    self._give_back_counters(candidate)
                    return False
        return True

    def _give_back_counters(self, candidate: _Candidate) -> None:
        consumed = self.consumed_counters.get(candidate.pool.name, {})
        for consumption in candidate.device.consumes_counters:
            counters = consumed.get(consumption.counter_set, {})
            for name, c in consumption.counters.items():
                if name in counters:
                    counters[name] = counters[name] - parse_quantity(c.value)


@dataclass(frozen=True, slots=True)
class Choice:
    """The devices one search chose on a node; the allocation results are built from it only for
    the node a pod gets (upstream builds them for every node)."""

    node_name: str
    #: per claim, the devices in the order they were taken
    devices: list[list[_DeviceResult]]
    request_data: dict[RequestKey, _RequestData]
    binding_status: bool

    def results(self, claims: Sequence[ResourceClaim]) -> list[AllocationResult]:
        """One allocation per claim (the claims searched for, or claims with the same specs)."""
        return [self._result(i, claim) for i, claim in enumerate(claims)]

    def _result(self, claim_index: int, claim: ResourceClaim) -> AllocationResult:
        devices = self.devices[claim_index]
        results = []
        for dr in devices:
            candidate = dr.candidate
            view = _lookup_request(claim, dr)
            entry = DeviceRequestAllocationResult(
                request=dr.request_name(),
                driver=candidate.id.driver,
                pool=candidate.id.pool,
                device=candidate.id.device,
                admin_access=dr.admin_access,
                tolerations=view.tolerations if view is not None else [],
                share_id=dr.share_id,
                consumed_capacity={name: str(q) for name, q in (dr.consumed or {}).items()},
            )
            if self.binding_status:
                entry.binding_conditions = list(candidate.device.binding_conditions)
                entry.binding_failure_conditions = list(candidate.device.binding_failure_conditions)
            results.append(entry)
        return AllocationResult(
            devices=DeviceAllocationResult(results=results, config=self._configs(claim_index, claim)),
            node_selector=self.node_selector(claim_index, claim),
        )

    def node_selector(self, claim_index: int, claim: ResourceClaim) -> NodeSelector | None:
        try:
            return _node_selector(self.devices[claim_index], self.node_name)
        except AllocationError as exc:
            raise AllocationError(f"create NodeSelector for claim {claim.metadata.name}: {exc}") from None

    def _configs(self, claim_index: int, claim: ResourceClaim) -> list[DeviceAllocationConfiguration]:
        """The classes' configurations for the chosen (sub)requests, then the claim's."""
        configs: list[DeviceAllocationConfiguration] = []
        class_ranges: dict[str, tuple[int, int]] = {}
        requests = claim.spec.devices.requests
        for request_index in range(len(requests)):
            data = self.request_data[RequestKey(claim_index, request_index, 0)]
            if data.parent is not None:
                data = self.request_data[RequestKey(claim_index, request_index, data.selected_sub_request)]
            device_class = data.device_class
            if device_class is None:
                continue
            known = class_ranges.get(device_class.metadata.name)
            if known is not None:
                for i in range(*known):
                    configs[i].requests.append(data.request_name())
                continue
            first = len(configs)
            for config in device_class.spec.config:
                configs.append(
                    DeviceAllocationConfiguration(
                        source=CONFIG_SOURCE_CLASS, requests=[data.request_name()], opaque=config.opaque
                    )
                )
            class_ranges[device_class.metadata.name] = (first, len(configs))
        for config in claim.spec.devices.config:
            entry = DeviceAllocationConfiguration(
                source=CONFIG_SOURCE_CLAIM, requests=list(config.requests), opaque=config.opaque
            )
            if not config.requests:
                configs.append(entry)
                continue
            for request_index, request in enumerate(requests):
                if request.name in config.requests:
                    configs.append(entry)
                    continue
                data = self.request_data[RequestKey(claim_index, request_index, 0)]
                if data.parent is None:
                    continue
                chosen = request.first_available[data.selected_sub_request]
                if f"{request.name}/{chosen.name}" in config.requests:
                    configs.append(entry)
        return configs


def _pool_versions(versions: Mapping[tuple[str, str], int] | None, pools: Sequence[Pool]) -> tuple[int, ...]:
    """The tracker's versions of ``pools`` (0 for a pool whose devices were never taken)."""
    versions = versions or {}
    if len(pools) == 1:
        return (versions.get(pools[0].pool_id, 0),)
    return tuple(versions.get(pool.pool_id, 0) for pool in pools)


def _parent_view(request: DeviceRequest) -> RequestView:
    """The parent of subrequests: only its name matters."""
    return RequestView(request.name, "", "", 0, False, False, [], [], None)


def _lookup_request(claim: ResourceClaim, result: _DeviceResult) -> RequestView | None:
    name = result.parent or result.request
    for request in claim.spec.devices.requests:
        if request.name != name:
            continue
        if not result.parent:
            return RequestView.of_request(request) if request.exactly is not None else None
        for sub in request.first_available:
            if sub.name == result.request:
                return RequestView.of_sub_request(sub)
    return None


def _node_selector(devices: Sequence[_DeviceResult], node_name: str) -> NodeSelector | None:
    """Upstream ``createNodeSelector``: the node itself when a device is local to it, else the union
    of the slices' node selectors, else None (available everywhere)."""
    fields: list[NodeSelectorRequirement] = []
    expressions: list[NodeSelectorRequirement] = []
    for dr in devices:
        slice_, device = dr.candidate.slice, dr.candidate.device
        if slice_.spec.per_device_node_selection:
            name, selector = device.node_name, device.node_selector
        else:
            name, selector = slice_.spec.node_name, slice_.spec.node_selector
        if name is not None or device.binds_to_node:
            term = NodeSelectorTerm(
                match_fields=[NodeSelectorRequirement(key="metadata.name", operator="In", values=[node_name])]
            )
            return NodeSelector(node_selector_terms=[term])
        if selector is None or not selector.node_selector_terms:
            continue
        if len(selector.node_selector_terms) > 1:
            raise AllocationError(
                f"unsupported ResourceSlice.NodeSelector with {len(selector.node_selector_terms)} terms"
            )
        term = selector.node_selector_terms[0]
        _add_new(term.match_fields, fields)
        _add_new(term.match_expressions, expressions)
    if fields or expressions:
        return NodeSelector(
            node_selector_terms=[NodeSelectorTerm(match_expressions=expressions, match_fields=fields)]
        )
    return None


def _add_new(source: Sequence[NodeSelectorRequirement], into: list[NodeSelectorRequirement]) -> None:
    for req in source:
        if not any(
            r.key == req.key and r.operator == req.operator and set(r.values) == set(req.values) for r in into
        ):
            into.append(req)
