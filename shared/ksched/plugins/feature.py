"""The feature gates the in-tree plugins read (upstream ``framework/plugins/feature``): one
:class:`Features` value built from the gates, handed to the constructors of the plugins that read
it (the registry's ``FactoryAdapter``). The one place that maps gates to plugin features."""

from __future__ import annotations

from dataclasses import dataclass

from ksched import features as gates_
from ksched.features import DEFAULT, FeatureGates


@dataclass(frozen=True, slots=True)
class Features:
    """Upstream ``feature.Features``, the fields ksched's plugins read (the other gates they know of
    stay at their 1.36 defaults in each plugin's own feature record; DynamicResourceAllocation is
    locked on; the workload gates are read by the services and the default profile)."""

    enable_dra_admin_access: bool = True
    enable_dra_consumable_capacity: bool = True
    enable_dra_device_binding_conditions: bool = True
    enable_dra_device_taints: bool = True
    enable_dra_extended_resource: bool = True
    enable_dra_partitionable_devices: bool = True
    enable_dra_prioritized_list: bool = True
    enable_dra_resource_claim_device_status: bool = True
    enable_dra_scheduler_filter_timeout: bool = True

    @classmethod
    def from_gates(cls, gates: FeatureGates = DEFAULT) -> Features:
        """Upstream ``NewSchedulerFeaturesFromGates``."""
        return cls(
            enable_dra_admin_access=gates.enabled(gates_.DRA_ADMIN_ACCESS),
            enable_dra_consumable_capacity=gates.enabled(gates_.DRA_CONSUMABLE_CAPACITY),
            enable_dra_device_binding_conditions=gates.enabled(gates_.DRA_DEVICE_BINDING_CONDITIONS),
            enable_dra_device_taints=gates.enabled(gates_.DRA_DEVICE_TAINTS),
            enable_dra_extended_resource=gates.enabled(gates_.DRA_EXTENDED_RESOURCE),
            enable_dra_partitionable_devices=gates.enabled(gates_.DRA_PARTITIONABLE_DEVICES),
            enable_dra_prioritized_list=gates.enabled(gates_.DRA_PRIORITIZED_LIST),
            enable_dra_resource_claim_device_status=gates.enabled(gates_.DRA_RESOURCE_CLAIM_DEVICE_STATUS),
            enable_dra_scheduler_filter_timeout=gates.enabled(gates_.DRA_SCHEDULER_FILTER_TIMEOUT),
        )


DEFAULT_FEATURES = Features.from_gates()
"""Every gate at its 1.36 default."""
