"""core/v1 types: Pod, Node, Namespace, volumes, Service, ReplicationController, Event."""

from __future__ import annotations

import msgspec

from ksched.api.base import K8s
from ksched.api.meta import Condition, LabelSelector, ObjectMeta, ObjectReference

ResourceList = dict[str, str]
"""Resource name -> quantity string (``{"cpu": "500m", "memory": "1Gi"}``)."""


# --- node selection -----------------------------------------------------------------------------


class NodeSelectorRequirement(K8s):
    key: str
    operator: str
    values: list[str] = []


class NodeSelectorTerm(K8s):
    match_expressions: list[NodeSelectorRequirement] = []
    match_fields: list[NodeSelectorRequirement] = []


class NodeSelector(K8s):
    node_selector_terms: list[NodeSelectorTerm] = []


class PreferredSchedulingTerm(K8s):
    weight: int
    preference: NodeSelectorTerm


class NodeAffinity(K8s):
    required_during_scheduling_ignored_during_execution: NodeSelector | None = None
    preferred_during_scheduling_ignored_during_execution: list[PreferredSchedulingTerm] = []


class PodAffinityTerm(K8s):
    label_selector: LabelSelector | None = None
    namespaces: list[str] = []
    topology_key: str = ""
    namespace_selector: LabelSelector | None = None
    match_label_keys: list[str] = []
    mismatch_label_keys: list[str] = []


class WeightedPodAffinityTerm(K8s):
    weight: int
    pod_affinity_term: PodAffinityTerm


class PodAffinity(K8s):
    required_during_scheduling_ignored_during_execution: list[PodAffinityTerm] = []
    preferred_during_scheduling_ignored_during_execution: list[WeightedPodAffinityTerm] = []


class Affinity(K8s):
    node_affinity: NodeAffinity | None = None
    pod_affinity: PodAffinity | None = None
    pod_anti_affinity: PodAffinity | None = None


class Toleration(K8s):
    key: str = ""
    operator: str = ""
    value: str = ""
    effect: str = ""
    toleration_seconds: int | None = None


class Taint(K8s):
    key: str
    value: str = ""
    effect: str = ""
    time_added: str | None = None


class TopologySpreadConstraint(K8s):
    max_skew: int
    topology_key: str
    when_unsatisfiable: str
    label_selector: LabelSelector | None = None
    min_domains: int | None = None
    node_affinity_policy: str | None = None
    node_taints_policy: str | None = None
    match_label_keys: list[str] = []


# --- containers ---------------------------------------------------------------------------------


class ResourceClaimRef(K8s):
    name: str
    request: str | None = None


class ResourceRequirements(K8s):
    requests: ResourceList = {}
    limits: ResourceList = {}
    claims: list[ResourceClaimRef] = []


class ContainerPort(K8s):
    container_port: int
    host_port: int | None = None
    protocol: str = "TCP"
    host_ip: str | None = msgspec.field(default=None, name="hostIP")
    name: str | None = None


class ContainerRestartRuleOnExitCodes(K8s):
    operator: str
    values: list[int] = []


class ContainerRestartRule(K8s):
    action: str
    exit_codes: ContainerRestartRuleOnExitCodes | None = None


class Container(K8s):
    name: str
    image: str | None = None
    ports: list[ContainerPort] = []
    resources: ResourceRequirements | None = None
    restart_policy: str | None = None
    restart_policy_rules: list[ContainerRestartRule] = []
    image_pull_policy: str | None = None


# --- volumes ------------------------------------------------------------------------------------


class PersistentVolumeClaimVolumeSource(K8s):
    claim_name: str
    read_only: bool = False


class PersistentVolumeClaimTemplate(K8s):
    metadata: ObjectMeta | None = None
    spec: PersistentVolumeClaimSpec | None = None


class EphemeralVolumeSource(K8s):
    volume_claim_template: PersistentVolumeClaimTemplate | None = None


class GCEPersistentDiskVolumeSource(K8s):
    pd_name: str
    fs_type: str | None = None
    partition: int | None = None
    read_only: bool = False


class AWSElasticBlockStoreVolumeSource(K8s):
    volume_id: str = msgspec.field(default="", name="volumeID")
    fs_type: str | None = None
    partition: int | None = None
    read_only: bool = False


class RBDVolumeSource(K8s):
    monitors: list[str] = []
    image: str = ""
    pool: str = "rbd"
    read_only: bool = False


class ISCSIVolumeSource(K8s):
    target_portal: str = ""
    iqn: str = ""
    lun: int = 0
    read_only: bool = False


class CSIVolumeSource(K8s):
    driver: str
    read_only: bool | None = None
    volume_attributes: dict[str, str] = {}


class ImageVolumeSource(K8s):
    reference: str | None = None
    pull_policy: str | None = None


class HostPathVolumeSource(K8s):
    path: str
    type: str | None = None


class Volume(K8s):
    name: str
    persistent_volume_claim: PersistentVolumeClaimVolumeSource | None = None
    ephemeral: EphemeralVolumeSource | None = None
    gce_persistent_disk: GCEPersistentDiskVolumeSource | None = None
    aws_elastic_block_store: AWSElasticBlockStoreVolumeSource | None = None
    rbd: RBDVolumeSource | None = None
    iscsi: ISCSIVolumeSource | None = None
    csi: CSIVolumeSource | None = None
    image: ImageVolumeSource | None = None
    host_path: HostPathVolumeSource | None = None
    empty_dir: dict[str, object] | None = None
    config_map: dict[str, object] | None = None
    secret: dict[str, object] | None = None
    projected: dict[str, object] | None = None


# --- pods ---------------------------------------------------------------------------------------


class PodSchedulingGate(K8s):
    name: str


class PodResourceClaim(K8s):
    name: str
    resource_claim_name: str | None = None
    resource_claim_template_name: str | None = None


class PodSchedulingGroup(K8s):
    """The pod's group (scheduling.k8s.io/v1alpha2 PodGroup in the pod's namespace; gate GenericWorkload)."""

    pod_group_name: str | None = None


class PodSpec(K8s):
    containers: list[Container] = []
    init_containers: list[Container] = []
    overhead: ResourceList = {}
    resources: ResourceRequirements | None = None
    node_selector: dict[str, str] = {}
    affinity: Affinity | None = None
    tolerations: list[Toleration] = []
    topology_spread_constraints: list[TopologySpreadConstraint] = []
    scheduling_gates: list[PodSchedulingGate] = []
    priority: int | None = None
    priority_class_name: str | None = None
    preemption_policy: str | None = None
    volumes: list[Volume] = []
    node_name: str = ""
    scheduler_name: str = "default-scheduler"
    host_network: bool = False
    host_users: bool | None = None
    restart_policy: str | None = None
    termination_grace_period_seconds: int | None = None
    resource_claims: list[PodResourceClaim] = []
    service_account_name: str | None = None
    scheduling_group: PodSchedulingGroup | None = None


class PodCondition(Condition):
    pass


class PodResourceClaimStatus(K8s):
    """The ResourceClaim generated for a pod's claim from a template (``resourceClaimName``)."""

    name: str
    resource_claim_name: str | None = None


class ContainerExtendedResourceRequest(K8s):
    """Which device request of the pod's extended-resource claim serves a container's extended
    resource (DRAExtendedResource)."""

    container_name: str = ""
    resource_name: str = ""
    request_name: str = ""


class PodExtendedResourceClaimStatus(K8s):
    """The ResourceClaim the scheduler created for the pod's extended resources backed by DRA."""

    request_mappings: list[ContainerExtendedResourceRequest] = []
    resource_claim_name: str = ""


class ContainerStatus(K8s):
    name: str
    ready: bool = False
    restart_count: int = 0
    image: str | None = None


class PodStatus(K8s):
    phase: str | None = None
    conditions: list[PodCondition] = []
    nominated_node_name: str | None = None
    qos_class: str | None = None
    start_time: str | None = None
    host_ip: str | None = msgspec.field(default=None, name="hostIP")
    pod_ip: str | None = msgspec.field(default=None, name="podIP")
    reason: str | None = None
    message: str | None = None
    container_statuses: list[ContainerStatus] = []
    resource_claim_statuses: list[PodResourceClaimStatus] = []
    extended_resource_claim_status: PodExtendedResourceClaimStatus | None = None


class Pod(K8s):
    api_version: str = "v1"
    kind: str = "Pod"
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: PodSpec = msgspec.field(default_factory=PodSpec)
    status: PodStatus = msgspec.field(default_factory=PodStatus)

    @property
    def key(self) -> str:
        """``namespace/name``, the identity kube-scheduler logs and events use."""
        return f"{self.metadata.namespace}/{self.metadata.name}"


# --- nodes --------------------------------------------------------------------------------------


class NodeSpec(K8s):
    unschedulable: bool = False
    taints: list[Taint] = []
    pod_cidr: str | None = msgspec.field(default=None, name="podCIDR")
    provider_id: str | None = msgspec.field(default=None, name="providerID")


class ContainerImage(K8s):
    names: list[str] = []
    size_bytes: int = 0


class NodeAddress(K8s):
    type: str
    address: str


class NodeStatus(K8s):
    capacity: ResourceList = {}
    allocatable: ResourceList = {}
    conditions: list[Condition] = []
    images: list[ContainerImage] = []
    addresses: list[NodeAddress] = []
    declared_features: list[str] = []


class Node(K8s):
    api_version: str = "v1"
    kind: str = "Node"
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: NodeSpec = msgspec.field(default_factory=NodeSpec)
    status: NodeStatus = msgspec.field(default_factory=NodeStatus)


class NamespaceStatus(K8s):
    phase: str | None = None


class Namespace(K8s):
    api_version: str = "v1"
    kind: str = "Namespace"
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    status: NamespaceStatus = msgspec.field(default_factory=NamespaceStatus)


# --- persistent volumes -------------------------------------------------------------------------


class VolumeNodeAffinity(K8s):
    required: NodeSelector | None = None


class VolumeResourceRequirements(K8s):
    requests: ResourceList = {}
    limits: ResourceList = {}


class LocalVolumeSource(K8s):
    path: str
    fs_type: str | None = None


class CSIPersistentVolumeSource(K8s):
    driver: str
    volume_handle: str = ""
    read_only: bool | None = None
    fs_type: str | None = None
    volume_attributes: dict[str, str] = {}


class PersistentVolumeSpec(K8s):
    capacity: ResourceList = {}
    access_modes: list[str] = []
    storage_class_name: str = ""
    claim_ref: ObjectReference | None = None
    node_affinity: VolumeNodeAffinity | None = None
    persistent_volume_reclaim_policy: str | None = None
    volume_mode: str | None = None
    mount_options: list[str] = []
    csi: CSIPersistentVolumeSource | None = None
    local: LocalVolumeSource | None = None
    host_path: HostPathVolumeSource | None = None
    gce_persistent_disk: GCEPersistentDiskVolumeSource | None = None
    aws_elastic_block_store: AWSElasticBlockStoreVolumeSource | None = None
    rbd: RBDVolumeSource | None = None
    iscsi: ISCSIVolumeSource | None = None


class PersistentVolumeStatus(K8s):
    phase: str | None = None
    message: str | None = None
    reason: str | None = None


class PersistentVolume(K8s):
    api_version: str = "v1"
    kind: str = "PersistentVolume"
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: PersistentVolumeSpec = msgspec.field(default_factory=PersistentVolumeSpec)
    status: PersistentVolumeStatus = msgspec.field(default_factory=PersistentVolumeStatus)


class TypedLocalObjectReference(K8s):
    kind: str
    name: str
    api_group: str | None = None


class PersistentVolumeClaimSpec(K8s):
    access_modes: list[str] = []
    resources: VolumeResourceRequirements | None = None
    storage_class_name: str | None = None
    volume_name: str = ""
    selector: LabelSelector | None = None
    volume_mode: str | None = None
    data_source: TypedLocalObjectReference | None = None


class PersistentVolumeClaimStatus(K8s):
    phase: str | None = None
    access_modes: list[str] = []
    capacity: ResourceList = {}


class PersistentVolumeClaim(K8s):
    api_version: str = "v1"
    kind: str = "PersistentVolumeClaim"
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: PersistentVolumeClaimSpec = msgspec.field(default_factory=PersistentVolumeClaimSpec)
    status: PersistentVolumeClaimStatus = msgspec.field(default_factory=PersistentVolumeClaimStatus)


# --- workload selectors (default topology spreading) ---------------------------------------------


class ServiceSpec(K8s):
    selector: dict[str, str] = {}
    type: str | None = None
    cluster_ip: str | None = msgspec.field(default=None, name="clusterIP")


class Service(K8s):
    api_version: str = "v1"
    kind: str = "Service"
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: ServiceSpec = msgspec.field(default_factory=ServiceSpec)


class ReplicationControllerSpec(K8s):
    selector: dict[str, str] = {}
    replicas: int | None = None


class ReplicationController(K8s):
    api_version: str = "v1"
    kind: str = "ReplicationController"
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: ReplicationControllerSpec = msgspec.field(default_factory=ReplicationControllerSpec)


# --- events -------------------------------------------------------------------------------------


class EventSource(K8s):
    component: str | None = None
    host: str | None = None


class EventSeries(K8s):
    count: int = 0
    last_observed_time: str | None = None


class Event(K8s):
    """core/v1 Event, as kube-scheduler's recorder writes it."""

    api_version: str = "v1"
    kind: str = "Event"
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    involved_object: ObjectReference = msgspec.field(default_factory=ObjectReference)
    reason: str | None = None
    message: str | None = None
    type: str | None = None
    count: int | None = None
    first_timestamp: str | None = None
    last_timestamp: str | None = None
    event_time: str | None = None
    series: EventSeries | None = None
    source: EventSource | None = None
    action: str | None = None
    reporting_component: str | None = None
    reporting_instance: str | None = None
    related: ObjectReference | None = None
