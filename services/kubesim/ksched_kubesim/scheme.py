"""The kinds kube-apiserver 1.36.2's scheme knows, for the errors of a body of another kind or
version than its URL's.

The API server decodes a body into the Go type its ``apiVersion`` and ``kind`` name, then converts it
to the internal type of the URL's resource: a kind the scheme does not know is 400 ``no kind "X" is
registered for version "g/v"``; another internal type ``converting (v1.X) to (core.Pod): unknown
conversion``; the same type in another version of the group ``the API version in the data (g/v) does
not match the expected API version (g/v1)``. The table below is k8s.io/api's ``register.go`` of every
group version the server installs (each also has the options kinds every group version gets).
"""

from __future__ import annotations

#: the kinds of the options and watch events ``metav1.AddToGroupVersion`` adds to every group version
_COMMON = frozenset(
    {
        "WatchEvent",
        "ListOptions",
        "GetOptions",
        "DeleteOptions",
        "CreateOptions",
        "UpdateOptions",
        "PatchOptions",
    }
)

#: api version -> (the Go package of its internal types, its kinds)
_TABLE: dict[str, tuple[str, str]] = {
    "admission.k8s.io/v1": (
        "admission",
        "AdmissionReview",
    ),
    "admission.k8s.io/v1beta1": (
        "admission",
        "AdmissionReview",
    ),
    "admissionregistration.k8s.io/v1": (
        "admissionregistration",
        "MutatingAdmissionPolicy MutatingAdmissionPolicyBinding "
        "MutatingAdmissionPolicyBindingList MutatingAdmissionPolicyList "
        "MutatingWebhookConfiguration MutatingWebhookConfigurationList ValidatingAdmissionPolicy "
        "ValidatingAdmissionPolicyBinding ValidatingAdmissionPolicyBindingList "
        "ValidatingAdmissionPolicyList ValidatingWebhookConfiguration "
        "ValidatingWebhookConfigurationList",
    ),
    "admissionregistration.k8s.io/v1alpha1": (
        "admissionregistration",
        "MutatingAdmissionPolicy MutatingAdmissionPolicyBinding "
        "MutatingAdmissionPolicyBindingList MutatingAdmissionPolicyList "
        "ValidatingAdmissionPolicy ValidatingAdmissionPolicyBinding "
        "ValidatingAdmissionPolicyBindingList ValidatingAdmissionPolicyList",
    ),
    "admissionregistration.k8s.io/v1beta1": (
        "admissionregistration",
        "MutatingAdmissionPolicy MutatingAdmissionPolicyBinding "
        "MutatingAdmissionPolicyBindingList MutatingAdmissionPolicyList "
        "MutatingWebhookConfiguration MutatingWebhookConfigurationList ValidatingAdmissionPolicy "
        "ValidatingAdmissionPolicyBinding ValidatingAdmissionPolicyBindingList "
        "ValidatingAdmissionPolicyList ValidatingWebhookConfiguration "
        "ValidatingWebhookConfigurationList",
    ),
    "internal.apiserver.k8s.io/v1alpha1": (
        "apiserverinternal",
        "StorageVersion StorageVersionList",
    ),
    "apps/v1": (
        "apps",
        "ControllerRevision ControllerRevisionList DaemonSet DaemonSetList Deployment "
        "DeploymentList ReplicaSet ReplicaSetList StatefulSet StatefulSetList",
    ),
    "apps/v1beta1": (
        "apps",
        "ControllerRevision ControllerRevisionList Deployment DeploymentList DeploymentRollback "
        "Scale StatefulSet StatefulSetList",
    ),
    "apps/v1beta2": (
        "apps",
        "ControllerRevision ControllerRevisionList DaemonSet DaemonSetList Deployment "
        "DeploymentList ReplicaSet ReplicaSetList Scale StatefulSet StatefulSetList",
    ),
    "authentication.k8s.io/v1": (
        "authentication",
        "SelfSubjectReview TokenRequest TokenReview",
    ),
    "authentication.k8s.io/v1alpha1": (
        "authentication",
        "SelfSubjectReview",
    ),
    "authentication.k8s.io/v1beta1": (
        "authentication",
        "SelfSubjectReview TokenReview",
    ),
    "authorization.k8s.io/v1": (
        "authorization",
        "LocalSubjectAccessReview SelfSubjectAccessReview SelfSubjectRulesReview SubjectAccessReview",
    ),
    "authorization.k8s.io/v1beta1": (
        "authorization",
        "LocalSubjectAccessReview SelfSubjectAccessReview SelfSubjectRulesReview SubjectAccessReview",
    ),
    "autoscaling/v1": (
        "autoscaling",
        "HorizontalPodAutoscaler HorizontalPodAutoscalerList Scale",
    ),
    "autoscaling/v2": (
        "autoscaling",
        "HorizontalPodAutoscaler HorizontalPodAutoscalerList",
    ),
    "batch/v1": (
        "batch",
        "CronJob CronJobList Job JobList",
    ),
    "batch/v1beta1": (
        "batch",
        "CronJob CronJobList",
    ),
    "certificates.k8s.io/v1": (
        "certificates",
        "CertificateSigningRequest CertificateSigningRequestList",
    ),
    "certificates.k8s.io/v1alpha1": (
        "certificates",
        "ClusterTrustBundle ClusterTrustBundleList",
    ),
    "certificates.k8s.io/v1beta1": (
        "certificates",
        "CertificateSigningRequest CertificateSigningRequestList ClusterTrustBundle "
        "ClusterTrustBundleList PodCertificateRequest PodCertificateRequestList",
    ),
    "coordination.k8s.io/v1": (
        "coordination",
        "Lease LeaseList",
    ),
    "coordination.k8s.io/v1alpha2": (
        "coordination",
        "LeaseCandidate LeaseCandidateList",
    ),
    "coordination.k8s.io/v1beta1": (
        "coordination",
        "Lease LeaseCandidate LeaseCandidateList LeaseList",
    ),
    "v1": (
        "core",
        "APIGroup APIGroupList APIResourceList APIVersions Binding ComponentStatus "
        "ComponentStatusList ConfigMap ConfigMapList Endpoints EndpointsList Event EventList "
        "LimitRange LimitRangeList List Namespace NamespaceList Node NodeList NodeProxyOptions "
        "PersistentVolume PersistentVolumeClaim PersistentVolumeClaimList PersistentVolumeList "
        "Pod PodAttachOptions PodExecOptions PodList PodLogOptions PodPortForwardOptions "
        "PodProxyOptions PodStatusResult PodTemplate PodTemplateList RangeAllocation "
        "ReplicationController ReplicationControllerList ResourceQuota ResourceQuotaList Secret "
        "SecretList SerializedReference Service ServiceAccount ServiceAccountList ServiceList "
        "ServiceProxyOptions Status",
    ),
    "discovery.k8s.io/v1": (
        "discovery",
        "EndpointSlice EndpointSliceList",
    ),
    "discovery.k8s.io/v1beta1": (
        "discovery",
        "EndpointSlice EndpointSliceList",
    ),
    "events.k8s.io/v1": (
        "events",
        "Event EventList",
    ),
    "events.k8s.io/v1beta1": (
        "events",
        "Event EventList",
    ),
    "extensions/v1beta1": (
        "extensions",
        "DaemonSet DaemonSetList Deployment DeploymentList DeploymentRollback Ingress "
        "IngressList NetworkPolicy NetworkPolicyList ReplicaSet ReplicaSetList Scale",
    ),
    "flowcontrol.apiserver.k8s.io/v1": (
        "flowcontrol",
        "FlowSchema FlowSchemaList PriorityLevelConfiguration PriorityLevelConfigurationList",
    ),
    "flowcontrol.apiserver.k8s.io/v1beta1": (
        "flowcontrol",
        "FlowSchema FlowSchemaList PriorityLevelConfiguration PriorityLevelConfigurationList",
    ),
    "flowcontrol.apiserver.k8s.io/v1beta2": (
        "flowcontrol",
        "FlowSchema FlowSchemaList PriorityLevelConfiguration PriorityLevelConfigurationList",
    ),
    "flowcontrol.apiserver.k8s.io/v1beta3": (
        "flowcontrol",
        "FlowSchema FlowSchemaList PriorityLevelConfiguration PriorityLevelConfigurationList",
    ),
    "imagepolicy.k8s.io/v1alpha1": (
        "imagepolicy",
        "ImageReview",
    ),
    "networking.k8s.io/v1": (
        "networking",
        "IPAddress IPAddressList Ingress IngressClass IngressClassList IngressList NetworkPolicy "
        "NetworkPolicyList ServiceCIDR ServiceCIDRList",
    ),
    "networking.k8s.io/v1beta1": (
        "networking",
        "IPAddress IPAddressList Ingress IngressClass IngressClassList IngressList ServiceCIDR "
        "ServiceCIDRList",
    ),
    "node.k8s.io/v1": (
        "node",
        "RuntimeClass RuntimeClassList",
    ),
    "node.k8s.io/v1alpha1": (
        "node",
        "RuntimeClass RuntimeClassList",
    ),
    "node.k8s.io/v1beta1": (
        "node",
        "RuntimeClass RuntimeClassList",
    ),
    "policy/v1": (
        "policy",
        "Eviction PodDisruptionBudget PodDisruptionBudgetList",
    ),
    "policy/v1beta1": (
        "policy",
        "Eviction PodDisruptionBudget PodDisruptionBudgetList",
    ),
    "rbac.authorization.k8s.io/v1": (
        "rbac",
        "ClusterRole ClusterRoleBinding ClusterRoleBindingList ClusterRoleList Role RoleBinding "
        "RoleBindingList RoleList",
    ),
    "rbac.authorization.k8s.io/v1alpha1": (
        "rbac",
        "ClusterRole ClusterRoleBinding ClusterRoleBindingList ClusterRoleList Role RoleBinding "
        "RoleBindingList RoleList",
    ),
    "rbac.authorization.k8s.io/v1beta1": (
        "rbac",
        "ClusterRole ClusterRoleBinding ClusterRoleBindingList ClusterRoleList Role RoleBinding "
        "RoleBindingList RoleList",
    ),
    "resource.k8s.io/v1": (
        "resource",
        "DeviceClass DeviceClassList ResourceClaim ResourceClaimList ResourceClaimTemplate "
        "ResourceClaimTemplateList ResourceSlice ResourceSliceList",
    ),
    "resource.k8s.io/v1alpha3": (
        "resource",
        "DeviceTaintRule DeviceTaintRuleList ResourcePoolStatusRequest ResourcePoolStatusRequestList",
    ),
    "resource.k8s.io/v1beta1": (
        "resource",
        "DeviceClass DeviceClassList ResourceClaim ResourceClaimList ResourceClaimTemplate "
        "ResourceClaimTemplateList ResourceSlice ResourceSliceList",
    ),
    "resource.k8s.io/v1beta2": (
        "resource",
        "DeviceClass DeviceClassList DeviceTaintRule DeviceTaintRuleList ResourceClaim "
        "ResourceClaimList ResourceClaimTemplate ResourceClaimTemplateList ResourceSlice "
        "ResourceSliceList",
    ),
    "scheduling.k8s.io/v1": (
        "scheduling",
        "PriorityClass PriorityClassList",
    ),
    "scheduling.k8s.io/v1alpha2": (
        "scheduling",
        "PodGroup PodGroupList Workload WorkloadList",
    ),
    "scheduling.k8s.io/v1beta1": (
        "scheduling",
        "PriorityClass PriorityClassList",
    ),
    "storage.k8s.io/v1": (
        "storage",
        "CSIDriver CSIDriverList CSINode CSINodeList CSIStorageCapacity CSIStorageCapacityList "
        "StorageClass StorageClassList VolumeAttachment VolumeAttachmentList "
        "VolumeAttributesClass VolumeAttributesClassList",
    ),
    "storage.k8s.io/v1alpha1": (
        "storage",
        "CSIStorageCapacity CSIStorageCapacityList VolumeAttachment VolumeAttachmentList "
        "VolumeAttributesClass VolumeAttributesClassList",
    ),
    "storage.k8s.io/v1beta1": (
        "storage",
        "CSIDriver CSIDriverList CSINode CSINodeList CSIStorageCapacity CSIStorageCapacityList "
        "StorageClass StorageClassList VolumeAttachment VolumeAttachmentList "
        "VolumeAttributesClass VolumeAttributesClassList",
    ),
    "storagemigration.k8s.io/v1beta1": (
        "storagemigration",
        "StorageVersionMigration StorageVersionMigrationList",
    ),
}

KINDS: dict[str, frozenset[str]] = {
    gv: frozenset(kinds.split()) | _COMMON for gv, (_, kinds) in _TABLE.items()
}

#: kinds whose internal type is another group's (the events API's Event is core's)
_INTERNAL: dict[tuple[str, str], str] = {
    ("events.k8s.io", "Event"): "core",
    ("events.k8s.io", "EventList"): "core",
    ("apps", "Scale"): "autoscaling",
    ("extensions", "Scale"): "autoscaling",
    ("extensions", "Deployment"): "apps",
    ("extensions", "DeploymentList"): "apps",
    ("extensions", "DeploymentRollback"): "apps",
    ("extensions", "DaemonSet"): "apps",
    ("extensions", "DaemonSetList"): "apps",
    ("extensions", "ReplicaSet"): "apps",
    ("extensions", "ReplicaSetList"): "apps",
    ("extensions", "Ingress"): "networking",
    ("extensions", "IngressList"): "networking",
    ("extensions", "NetworkPolicy"): "networking",
    ("extensions", "NetworkPolicyList"): "networking",
}
_PACKAGES = {gv.rpartition("/")[0]: package for gv, (package, _) in _TABLE.items()}


def registered(group: str, version: str, kind: str) -> bool:
    """Whether the scheme has ``kind`` in ``group/version``."""
    return kind in KINDS.get(f"{group}/{version}" if group else version, frozenset())


def internal_type(group: str, kind: str) -> str:
    """The internal Go type a kind of ``group`` converts to, as Go prints it (``core.Pod``)."""
    package = _INTERNAL.get((group, kind)) or _PACKAGES.get(group, group.partition(".")[0])
    return f"{package}.{kind}"
