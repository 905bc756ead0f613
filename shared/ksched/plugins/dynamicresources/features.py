"""The DRA feature gates the plugin and the allocator read, with their kube-scheduler 1.36 defaults."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class DRAFeatures:
    """Upstream ``feature.Features`` (the DRA part) and the allocator's ``Features``.

    With these defaults upstream picks its "incubating" allocator, which this package implements;
    DRAListTypeAttributes (alpha, off) would need the "experimental" one and is not supported.
    """

    prioritized_list: bool = True
    partitionable_devices: bool = True
    consumable_capacity: bool = True
    device_taints: bool = True
    admin_access: bool = True
    device_binding_conditions: bool = True
    resource_claim_device_status: bool = True
    scheduler_filter_timeout: bool = True
    extended_resource: bool = True
    scheduling_queue_hints: bool = True

    @property
    def device_binding_and_status(self) -> bool:
        """The allocator's ``DeviceBindingAndStatus``: both gates on."""
        return self.device_binding_conditions and self.resource_claim_device_status
