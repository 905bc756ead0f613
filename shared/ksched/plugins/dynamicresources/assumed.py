"""The informer's check of the allocations a placement carries (decided by a scheduler replica on an
older snapshot): may they still be taken, given the claims the cache shows allocated and the
allocations of placements it accepted since (held in flight in the :class:`ClaimTracker`)?

A placement's allocation names its devices, and the binder writes exactly those, so checking that
*some* devices fit the node (the Filter) is not enough: each device it names must be free, as a
dedicated device or as a share, its partition's counters and its consumable capacity must not be
exceeded, and a claim allocated meanwhile for another pod must not be allocated again.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from ksched.api.core import Node
from ksched.api.resource import Device, ResourceClaim, ResourceSlice
from ksched.apimachinery.quantity import parse_quantity
from ksched.plugins.dynamicresources.devices import AllocatedState, DeviceID, allocated_devices_of
from ksched.plugins.dynamicresources.extended import is_special
from ksched.plugins.dynamicresources.features import DRAFeatures
from ksched.plugins.dynamicresources.pools import Pool, PoolError, counters_left, gather_pools
from ksched.plugins.dynamicresources.tracker import ClaimTracker


def placement_conflict(
    tracker: ClaimTracker,
    claims: Sequence[ResourceClaim],
    node: Node,
    slices: Iterable[ResourceSlice],
    features: DRAFeatures,
) -> str:
    """Why ``claims`` (allocated by a placement on ``node``) cannot be taken now; '' when they can."""
    fresh: list[ResourceClaim] = []
    for claim in claims:
        why = _claim_conflict(tracker, claim)
        if why is None:
            fresh.append(claim)
        elif why:
            return why
    if not fresh:
        return ""
    taken = tracker.allocated_state()
    consumable = tracker.consumable_capacity
    for claim in fresh:
        for device, share, _ in allocated_devices_of(claim, consumable):
            if share is None and taken.is_allocated(device):
                return f"device {device} of resourceclaim {claim.key} is already allocated"
            if share is not None and (
                device in taken.allocated_devices or share in taken.allocated_shared_device_ids
            ):
                return f"device {device} of resourceclaim {claim.key} is already allocated"
    slices = list(slices)
    consumes = any(consumed for c in fresh for _, _, consumed in allocated_devices_of(c, consumable))
    if not consumes and not any(s.spec.shared_counters for s in slices):
        return ""  # no consumable capacity taken, no partitionable device in view: nothing more to check
    after = tracker.allocated_state()
    for claim in fresh:
        after.add_claim(claim, consumable)
    return _limits_conflict(taken, after, fresh, node, slices, features)


def _claim_conflict(tracker: ClaimTracker, claim: ResourceClaim) -> str | None:
    """None: the claim is to be allocated now; '': allocated already exactly so (nothing to take);
    else why the placement may not allocate it."""
    meta = claim.metadata
    if is_special(claim):
        return None  # the pod's extended-resource claim, created by PreBind: its devices are new
    current = tracker.get(meta.namespace, meta.name)
    if current is None or current.metadata.uid != meta.uid:
        return f"resourceclaim {claim.key} no longer exists"
    existing = current.status.allocation or tracker.pending_allocation(meta.uid)
    if existing is None:
        return None
    if existing == claim.status.allocation:
        return ""
    return f"resourceclaim {claim.key} was allocated for another pod"


def _limits_conflict(
    before: AllocatedState,
    after: AllocatedState,
    claims: Sequence[ResourceClaim],
    node: Node,
    slices: list[ResourceSlice],
    features: DRAFeatures,
) -> str:
    """Shared counters of partitionable devices and consumable capacity of shared devices, over the
    pools of ``node`` (called only when some device in view may use either)."""
    mine = {
        device
        for claim in claims
        for device, _, _ in allocated_devices_of(claim, features.consumable_capacity)
    }
    try:
        pools = gather_pools(slices, node, features, slices)
    except PoolError:
        return ""  # the Filter that ran before says what is wrong with the pools
    for pool in pools:
        for slice_, device in _devices(pool):
            device_id = DeviceID(slice_.spec.driver, slice_.spec.pool.name, device.name)
            if device_id not in mine:
                continue
            if device.consumes_counters and not _counters_left(pool, before, after, device):
                return f"device {device_id} is short of counters of its partitionable device"
            used = after.aggregated_capacity.get(device_id)
            for name, amount in (used or {}).items():
                cap = device.capacity.get(name)
                if cap is not None and amount > parse_quantity(cap.value):
                    return f"device {device_id} has no {name} capacity left"
    return ""


def _devices(pool: Pool) -> Iterable[tuple[ResourceSlice, Device]]:
    for slice_ in (*pool.slices_targeting_node, *pool.slices_not_targeting_node):
        for device in slice_.spec.devices:
            yield slice_, device


def _counters_left(pool: Pool, before: AllocatedState, after: AllocatedState, device: Device) -> bool:
    """Whether the counters ``device`` consumes are within their sets' totals with everything of
    ``after`` allocated (only counters that were not already over with ``before``)."""
    over_after = _over(pool, after)
    over_before = _over(pool, before)
    return not any(
        (consumption.counter_set, name) in over_after - over_before
        for consumption in device.consumes_counters
        for name in consumption.counters
    )


def _over(pool: Pool, allocated: AllocatedState) -> set[tuple[str, str]]:
    """The (counter set, counter) pairs of ``pool`` that devices allocated in ``allocated`` consume
    beyond the set's total."""
    zero = parse_quantity("0")
    left = counters_left(pool, allocated)
    return {(s, n) for s, counters in left.items() for n, value in counters.items() if value < zero}
