"""resource.k8s.io/v1 (Dynamic Resource Allocation): DeviceClass, ResourceSlice, ResourceClaim,
ResourceClaimTemplate. Quantities stay strings, as in ``ksched.api.core``."""

from __future__ import annotations

from typing import Any

import msgspec

from ksched.api.base import K8s
from ksched.api.core import NodeSelector
from ksched.api.meta import Condition, ObjectMeta

API_VERSION = "resource.k8s.io/v1"
FINALIZER = "resource.kubernetes.io/delete-protection"
ALLOCATION_MODE_EXACT_COUNT = "ExactCount"
ALLOCATION_MODE_ALL = "All"
#: upstream ``resourceapi.AllocationResultsMaxSize``: devices one claim may get
ALLOCATION_RESULTS_MAX_SIZE = 32
#: upstream ``resourceapi.FirstAvailableDeviceRequestMaxSize``: subrequests of one request
FIRST_AVAILABLE_MAX_SIZE = 8
TAINT_EFFECT_NO_SCHEDULE = "NoSchedule"
TAINT_EFFECT_NO_EXECUTE = "NoExecute"


# --- shared pieces -------------------------------------------------------------------------------


class CELDeviceSelector(K8s):
    expression: str = ""


class DeviceSelector(K8s):
    cel: CELDeviceSelector | None = None


class OpaqueDeviceConfiguration(K8s):
    driver: str = ""
    parameters: Any = None


class DeviceConfiguration(K8s):
    opaque: OpaqueDeviceConfiguration | None = None


# --- DeviceClass ---------------------------------------------------------------------------------


class DeviceClassSpec(K8s):
    selectors: list[DeviceSelector] = []
    config: list[DeviceConfiguration] = []
    extended_resource_name: str | None = None


class DeviceClass(K8s):
    api_version: str = API_VERSION
    kind: str = "DeviceClass"
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: DeviceClassSpec = msgspec.field(default_factory=DeviceClassSpec)


# --- ResourceSlice -------------------------------------------------------------------------------


class DeviceAttribute(K8s):
    """One typed value (exactly one field is set); the list forms need DRAListTypeAttributes."""

    int_value: int | None = msgspec.field(default=None, name="int")
    bool_value: bool | None = msgspec.field(default=None, name="bool")
    string_value: str | None = msgspec.field(default=None, name="string")
    version_value: str | None = msgspec.field(default=None, name="version")
    int_values: list[int] | None = msgspec.field(default=None, name="ints")
    bool_values: list[bool] | None = msgspec.field(default=None, name="bools")
    string_values: list[str] | None = msgspec.field(default=None, name="strings")
    version_values: list[str] | None = msgspec.field(default=None, name="versions")


class CapacityRequestPolicyRange(K8s):
    min: str | None = None
    max: str | None = None
    step: str | None = None


class CapacityRequestPolicy(K8s):
    default: str | None = None
    valid_values: list[str] = []
    valid_range: CapacityRequestPolicyRange | None = None


class DeviceCapacity(K8s):
    value: str = "0"
    request_policy: CapacityRequestPolicy | None = None


class Counter(K8s):
    value: str = "0"


class CounterSet(K8s):
    name: str = ""
    counters: dict[str, Counter] = {}


class DeviceCounterConsumption(K8s):
    counter_set: str = ""
    counters: dict[str, Counter] = {}


class DeviceTaint(K8s):
    key: str = ""
    value: str = ""
    effect: str = ""
    time_added: str | None = None


class Device(K8s):
    name: str = ""
    attributes: dict[str, DeviceAttribute] = {}
    capacity: dict[str, DeviceCapacity] = {}
    consumes_counters: list[DeviceCounterConsumption] = []
    node_name: str | None = None
    node_selector: NodeSelector | None = None
    all_nodes: bool | None = None
    taints: list[DeviceTaint] = []
    binds_to_node: bool | None = None
    binding_conditions: list[str] = []
    binding_failure_conditions: list[str] = []
    allow_multiple_allocations: bool | None = None


class ResourcePool(K8s):
    name: str = ""
    generation: int = 0
    resource_slice_count: int = 0


class ResourceSliceSpec(K8s):
    driver: str = ""
    pool: ResourcePool = msgspec.field(default_factory=ResourcePool)
    node_name: str | None = None
    node_selector: NodeSelector | None = None
    all_nodes: bool | None = None
    devices: list[Device] = []
    per_device_node_selection: bool | None = None
    shared_counters: list[CounterSet] = []


class ResourceSlice(K8s):
    api_version: str = API_VERSION
    kind: str = "ResourceSlice"
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: ResourceSliceSpec = msgspec.field(default_factory=ResourceSliceSpec)


# --- ResourceClaim -------------------------------------------------------------------------------


class DeviceToleration(K8s):
    key: str = ""
    operator: str = ""
    value: str = ""
    effect: str = ""
    toleration_seconds: int | None = None


class CapacityRequirements(K8s):
    requests: dict[str, str] = {}


class ExactDeviceRequest(K8s):
    device_class_name: str = ""
    selectors: list[DeviceSelector] = []
    allocation_mode: str = ""
    count: int = 0
    admin_access: bool | None = None
    tolerations: list[DeviceToleration] = []
    capacity: CapacityRequirements | None = None


class DeviceSubRequest(K8s):
    name: str = ""
    device_class_name: str = ""
    selectors: list[DeviceSelector] = []
    allocation_mode: str = ""
    count: int = 0
    tolerations: list[DeviceToleration] = []
    capacity: CapacityRequirements | None = None


class DeviceRequest(K8s):
    name: str = ""
    exactly: ExactDeviceRequest | None = None
    first_available: list[DeviceSubRequest] = []


class DeviceConstraint(K8s):
    requests: list[str] = []
    match_attribute: str | None = None
    distinct_attribute: str | None = None


class DeviceClaimConfiguration(DeviceConfiguration):
    requests: list[str] = []


class DeviceClaim(K8s):
    requests: list[DeviceRequest] = []
    constraints: list[DeviceConstraint] = []
    config: list[DeviceClaimConfiguration] = []


class ResourceClaimSpec(K8s):
    devices: DeviceClaim = msgspec.field(default_factory=DeviceClaim)


class DeviceRequestAllocationResult(K8s):
    request: str = ""
    driver: str = ""
    pool: str = ""
    device: str = ""
    admin_access: bool | None = None
    tolerations: list[DeviceToleration] = []
    binding_conditions: list[str] = []
    binding_failure_conditions: list[str] = []
    share_id: str | None = msgspec.field(default=None, name="shareID")
    consumed_capacity: dict[str, str] = {}


class DeviceAllocationConfiguration(DeviceConfiguration):
    source: str = ""
    requests: list[str] = []


class DeviceAllocationResult(K8s):
    results: list[DeviceRequestAllocationResult] = []
    config: list[DeviceAllocationConfiguration] = []


class AllocationResult(K8s):
    devices: DeviceAllocationResult = msgspec.field(default_factory=DeviceAllocationResult)
    node_selector: NodeSelector | None = None
    allocation_timestamp: str | None = None


class ResourceClaimConsumerReference(K8s):
    api_group: str = ""
    resource: str = ""
    name: str = ""
    uid: str = ""


class AllocatedDeviceStatus(K8s):
    driver: str = ""
    pool: str = ""
    device: str = ""
    share_id: str | None = msgspec.field(default=None, name="shareID")
    conditions: list[Condition] = []
    data: Any = None


class ResourceClaimStatus(K8s):
    allocation: AllocationResult | None = None
    reserved_for: list[ResourceClaimConsumerReference] = []
    devices: list[AllocatedDeviceStatus] = []


class ResourceClaim(K8s):
    api_version: str = API_VERSION
    kind: str = "ResourceClaim"
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: ResourceClaimSpec = msgspec.field(default_factory=ResourceClaimSpec)
    status: ResourceClaimStatus = msgspec.field(default_factory=ResourceClaimStatus)

    @property
    def key(self) -> str:
        return f"{self.metadata.namespace}/{self.metadata.name}"


class ResourceClaimTemplateSpec(K8s):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: ResourceClaimSpec = msgspec.field(default_factory=ResourceClaimSpec)


class ResourceClaimTemplate(K8s):
    api_version: str = API_VERSION
    kind: str = "ResourceClaimTemplate"
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: ResourceClaimTemplateSpec = msgspec.field(default_factory=ResourceClaimTemplateSpec)
