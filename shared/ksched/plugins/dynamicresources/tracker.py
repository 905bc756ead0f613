"""Which devices are taken (upstream ``dra_manager.go`` claimTracker and ``allocateddevices.go``).

The snapshot's ResourceClaims say what is allocated; on top of that, allocations this process
decided in Reserve and whose PreBind has not shown up in the snapshot yet are *in flight*: their
devices count as taken, and another pod sharing such a claim waits. An in-flight allocation ends
with Unreserve, or when the snapshot's claim shows an allocation (PreBind's write came back through
the informer) or is gone; that of a pod's in-memory extended-resource claim when the snapshot shows
the claim PreBind created for the pod allocated. At the informer, the allocations of placements it
accepted from scheduler replicas are held in flight the same way (:meth:`ClaimTracker.hold`). One
tracker serves every profile of a process (:func:`shared_tracker`), as upstream's one DRA manager does.
"""

from __future__ import annotations

import weakref
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from itertools import chain, compress
from operator import is_not

from ksched.api.resource import AllocationResult, ResourceClaim
from ksched.plugins.dynamicresources.devices import (
    AllocatedState,
    ConsumedCapacity,
    DeviceID,
    SharedDeviceID,
    add_capacity,
    allocated_devices_of,
)
from ksched.plugins.dynamicresources.extended import EXTENDED_RESOURCE_CLAIM_ANNOTATION, is_special


@dataclass
class InFlight:
    claim: ResourceClaim
    """The claim with the allocation Reserve chose."""
    sharers: int = 1


_Contribution = tuple[
    tuple[DeviceID, ...], tuple[SharedDeviceID, ...], tuple[tuple[DeviceID, ConsumedCapacity], ...]
]


def _contribution(claim: ResourceClaim, consumable_capacity: bool) -> _Contribution:
    dedicated: list[DeviceID] = []
    shares: list[SharedDeviceID] = []
    capacity: list[tuple[DeviceID, ConsumedCapacity]] = []
    for device, share, consumed in allocated_devices_of(claim, consumable_capacity):
        if share is None:
            dedicated.append(device)
            continue
        shares.append(share)
        if consumed is not None:
            capacity.append((device, consumed))
    return tuple(dedicated), tuple(shares), tuple(capacity)


class ClaimTracker:
    """The snapshot's claims plus this process's in-flight allocations."""

    def __init__(
        self, claims: Callable[[], Mapping[str, ResourceClaim]], consumable_capacity: bool = True
    ) -> None:
        self._claims = claims
        self.consumable_capacity = consumable_capacity
        self.in_flight: dict[str, InFlight] = {}
        #: pod uid -> the claim uids its accepted placement holds in flight (:meth:`hold`)
        self.held: dict[str, list[str]] = {}
        self._seen: dict[str, tuple[ResourceClaim, _Contribution]] = {}
        #: the devices the snapshot's claims hold, with how many claims hold each
        self._dedicated: Counter[DeviceID] = Counter()
        #: the keys of ``_dedicated`` (a set copies without hashing its members again)
        self._taken: set[DeviceID] = set()
        #: the snapshot's claims as of the last refresh, in the table's order
        self._keys: list[str] = []
        self._objects: list[ResourceClaim] = []
        self._shares: Counter[SharedDeviceID] = Counter()
        #: the capacity consumed per device by the snapshot's claims (None: to be summed again)
        self._capacity: dict[DeviceID, ConsumedCapacity] | None = {}
        #: (driver, pool) -> the tick of the last change of the devices taken in the pool
        self._versions: dict[tuple[str, str], int] = {}
        self._tick = 0

    def get(self, namespace: str, name: str) -> ResourceClaim | None:
        return self._claims().get(f"{namespace}/{name}")

    # --- in-flight allocations --------------------------------------------------------------------
    def pending_allocation(self, uid: str) -> AllocationResult | None:
        self._expire()
        entry = self.in_flight.get(uid)
        return entry.claim.status.allocation if entry is not None else None

    def signal_pending_allocation(self, uid: str, claim: ResourceClaim) -> None:
        entry = self.in_flight.get(uid)
        if entry is not None:
            entry.sharers += 1
        else:
            self.in_flight[uid] = InFlight(claim)
            self._touch_claim(claim)

    def maybe_remove_pending_allocation(self, uid: str, force: bool = False) -> bool:
        """Drop one sharer (all with ``force``); True when the allocation is no longer in flight."""
        entry = self.in_flight.get(uid)
        if entry is None:
            return False
        if force or entry.sharers == 1:
            self._drop(uid)
            return True
        entry.sharers -= 1
        return False

    # --- placements another process decided (the informer's assume check) ---------------------------
    def hold(self, pod_uid: str, claims: list[ResourceClaim]) -> None:
        """An accepted placement's allocations (claims with ``status.allocation`` set) are in flight
        until the snapshot shows them, or :meth:`release` of ``pod_uid`` with ``dropped``."""
        for claim in claims:
            self.signal_pending_allocation(claim.metadata.uid, claim)
        self.held.setdefault(pod_uid, []).extend(c.metadata.uid for c in claims)

    def release(self, pod_uid: str, dropped: bool) -> None:
        """Forget which allocations ``pod_uid``'s placement holds; ``dropped`` (the placement will not
        be bound) also ends them in flight; else they end when the snapshot shows them."""
        for uid in self.held.pop(pod_uid, ()):
            if dropped:
                self.maybe_remove_pending_allocation(uid)

    def _expire(self) -> None:
        if not self.in_flight:
            return
        claims = self._claims()
        created: set[str] | None = None
        for uid, entry in list(self.in_flight.items()):
            if is_special(entry.claim):
                # not created yet: in flight until the snapshot shows the pod's created claim
                if created is None:
                    created = _allocated_extended_claim_owners(claims.values())
                if _owner_uid(entry.claim) in created:
                    self._drop(uid)
                continue
            current = claims.get(entry.claim.key)
            if current is None or current.metadata.uid != uid or current.status.allocation is not None:
                self._drop(uid)

    def _drop(self, uid: str) -> None:
        self._touch_claim(self.in_flight.pop(uid).claim)

    def _touch_claim(self, claim: ResourceClaim) -> None:
        for device, _, _ in allocated_devices_of(claim, self.consumable_capacity):
            self._touch(device.driver, device.pool)

    def _touch(self, driver: str, pool: str) -> None:
        self._tick += 1
        self._versions[(driver, pool)] = self._tick

    # --- allocated devices ------------------------------------------------------------------------
    def _refresh(self) -> None:
        """Bring the per-claim device counts up to date with the snapshot (only changed claims)."""
        claims = self._claims()
        keys, objects = list(claims), list(claims.values())
        known = len(self._keys)
        if len(keys) >= known and keys[:known] == self._keys:
            # nothing removed: the claims replaced since, then those added (at the table's end)
            changed = compress(range(known), map(is_not, objects, self._objects))
            for i in chain(changed, range(known, len(keys))):
                self._update(keys[i], objects[i])
        else:
            seen = self._seen
            for key in [k for k in seen if k not in claims]:
                self._account(seen.pop(key)[1], -1)
            for key, claim in claims.items():
                self._update(key, claim)
        self._keys, self._objects = keys, objects

    def _update(self, key: str, claim: ResourceClaim) -> None:
        known = self._seen.get(key)
        if known is not None and known[0] is claim:
            return
        if known is not None:
            self._account(known[1], -1)
        contribution = _contribution(claim, self.consumable_capacity)
        self._seen[key] = (claim, contribution)
        self._account(contribution, 1)

    def _account(self, contribution: _Contribution, sign: int) -> None:
        dedicated, shares, capacity = contribution
        for device in dedicated:
            self._touch(device.driver, device.pool)
            self._dedicated[device] += sign
            if self._dedicated[device] <= 0:
                del self._dedicated[device]
                self._taken.discard(device)
            else:
                self._taken.add(device)
        for share in shares:
            self._touch(share.driver, share.pool)
            self._shares[share] += sign
            if self._shares[share] <= 0:
                del self._shares[share]
        if capacity:
            self._capacity = None

    def allocated_state(self) -> AllocatedState:
        """Upstream ``GatherAllocatedState``: allocated and in-flight devices, shares and capacity."""
        self._refresh()
        self._expire()
        if self._capacity is None:
            self._capacity = {}
            for _, (_, _, capacity) in self._seen.values():
                for device, consumed in capacity:
                    add_capacity(self._capacity.setdefault(device, {}), consumed)
        state = AllocatedState(
            self._taken.copy(),
            set(self._shares),
            {device: dict(consumed) for device, consumed in self._capacity.items()},
            dict(self._versions),
        )
        for entry in self.in_flight.values():
            state.add_claim(entry.claim, self.consumable_capacity)
        return state


def _owner_uid(claim: ResourceClaim) -> str:
    for ref in claim.metadata.owner_references:
        if ref.controller:
            return ref.uid
    return ""


def _allocated_extended_claim_owners(claims: Iterable[ResourceClaim]) -> set[str]:
    """The pods whose created extended-resource claim the snapshot shows allocated."""
    return {
        _owner_uid(c)
        for c in claims
        if c.status.allocation is not None
        and c.metadata.annotations.get(EXTENDED_RESOURCE_CLAIM_ANNOTATION) == "true"
    }


_shared: weakref.WeakKeyDictionary[object, dict[bool, ClaimTracker]] = weakref.WeakKeyDictionary()


def shared_tracker(
    snapshot: object, claims: Callable[[], Mapping[str, ResourceClaim]], consumable_capacity: bool
) -> ClaimTracker:
    """The one tracker of the profiles reading ``snapshot`` (a process's frameworks share it): an
    allocation in flight for one profile's pod is taken for every profile's."""
    by_gate = _shared.setdefault(snapshot, {})
    tracker = by_gate.get(consumable_capacity)
    if tracker is None:
        tracker = by_gate[consumable_capacity] = ClaimTracker(claims, consumable_capacity)
    return tracker
