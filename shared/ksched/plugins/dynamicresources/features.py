"""The DRA feature gates the plugin and the allocator read, with their kube-scheduler 1.36 defaults."""

from __future__ import annotations

from dataclasses import dataclass

from ksched.plugins.feature import Features


@dataclass(frozen=True)
class DRAFeatures:
    """Upstream ``feature.Features`` (the DRA part) and the allocator's ``Features``.

    With these defaults upstream picks its "incubating" allocator, which this package implements
    (and, with ConsumableCapacity and DeviceBindingAndStatus both off, the differences of the "stable"
    one listed at :attr:`stable_allocator`); DRAListTypeAttributes (alpha, off) would need the
    "experimental" one and is not supported.
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

    @classmethod
    def from_features(cls, fts: Features) -> DRAFeatures:
        """The plugin's and the allocator's part of the plugins' features (upstream ``New``)."""
        return cls(
            prioritized_list=fts.enable_dra_prioritized_list,
            partitionable_devices=fts.enable_dra_partitionable_devices,
            consumable_capacity=fts.enable_dra_consumable_capacity,
            device_taints=fts.enable_dra_device_taints,
            admin_access=fts.enable_dra_admin_access,
            device_binding_conditions=fts.enable_dra_device_binding_conditions,
            resource_claim_device_status=fts.enable_dra_resource_claim_device_status,
            scheduler_filter_timeout=fts.enable_dra_scheduler_filter_timeout,
            extended_resource=fts.enable_dra_extended_resource,
        )

    @property
    def device_binding_and_status(self) -> bool:
        """The allocator's ``DeviceBindingAndStatus``: both gates on."""
        return self.device_binding_conditions and self.resource_claim_device_status

    @property
    def stable_allocator(self) -> bool:
        """Whether upstream's ``NewAllocator`` picks its "stable" allocator: neither
        ConsumableCapacity nor DeviceBindingAndStatus wanted. Its differences ksched follows: capacity
        requests are ignored rather than refused, a ``distinctAttribute`` constraint is an unsupported
        (empty) constraint. docs/dra.md lists those it does not."""
        return not self.consumable_capacity and not self.device_binding_and_status
