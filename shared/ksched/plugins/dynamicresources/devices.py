"""Device identities and the allocation state the allocator starts from (upstream
``structured/schedulerapi``, ``internal/allocatedstate.go`` and the plugin's ``allocateddevices.go``)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import NamedTuple

from ksched.api.resource import ResourceClaim
from ksched.apimachinery.quantity import Quantity, parse_quantity

ConsumedCapacity = dict[str, Quantity]
"""Capacity name -> amount consumed from one device."""


class DeviceID(NamedTuple):
    driver: str
    pool: str
    device: str

    def __str__(self) -> str:
        return f"{self.driver}/{self.pool}/{self.device}"


class SharedDeviceID(NamedTuple):
    """One share of a device that allows multiple allocations (DRAConsumableCapacity)."""

    driver: str
    pool: str
    device: str
    share_id: str

    @property
    def device_id(self) -> DeviceID:
        return DeviceID(self.driver, self.pool, self.device)


@dataclass
class AllocatedState:
    """Devices in use: dedicated ones, shares of shared ones, and capacity consumed per device."""

    allocated_devices: set[DeviceID] = field(default_factory=set)
    allocated_shared_device_ids: set[SharedDeviceID] = field(default_factory=set)
    aggregated_capacity: dict[DeviceID, ConsumedCapacity] = field(default_factory=dict)
    #: (driver, pool) -> a number that changes whenever the devices taken in the pool change (the
    #: tracker's, as it was when this state was gathered); None: not tracked
    versions: dict[tuple[str, str], int] | None = None

    def is_allocated(self, device: DeviceID) -> bool:
        """Upstream ``IsDeviceAllocated``: dedicated, shared, or with consumed capacity."""
        if device in self.allocated_devices or device in self.aggregated_capacity:
            return True
        return any(shared.device_id == device for shared in self.allocated_shared_device_ids)

    def add_claim(self, claim: ResourceClaim, consumable_capacity: bool = True) -> None:
        """Account the devices of an allocated claim (admin access devices are not in use)."""
        for device, share, consumed in allocated_devices_of(claim, consumable_capacity):
            if share is None:
                self.allocated_devices.add(device)
                continue
            self.allocated_shared_device_ids.add(share)
            if consumed is not None:
                add_capacity(self.aggregated_capacity.setdefault(device, {}), consumed)


def allocated_devices_of(
    claim: ResourceClaim, consumable_capacity: bool = True
) -> Iterable[tuple[DeviceID, SharedDeviceID | None, ConsumedCapacity | None]]:
    """Upstream ``foreachAllocatedDevice``: (device, its share or None, consumed capacity or None)
    for each device of the allocation that is not used with admin access."""
    allocation = claim.status.allocation
    if allocation is None:
        return
    for result in allocation.devices.results:
        if result.admin_access:
            continue
        device = DeviceID(result.driver, result.pool, result.device)
        if consumable_capacity and result.share_id is not None:
            share = SharedDeviceID(result.driver, result.pool, result.device, result.share_id)
            consumed = (
                {name: parse_quantity(value) for name, value in result.consumed_capacity.items()}
                if result.consumed_capacity
                else None
            )
            yield device, share, consumed
            continue
        yield device, None, None


def add_capacity(into: ConsumedCapacity, amount: ConsumedCapacity) -> None:
    for name, quantity in amount.items():
        current = into.get(name)
        into[name] = quantity if current is None else current + quantity


def sub_capacity(into: ConsumedCapacity, amount: ConsumedCapacity) -> None:
    for name, quantity in amount.items():
        current = into.get(name)
        if current is not None:
            into[name] = current - quantity
