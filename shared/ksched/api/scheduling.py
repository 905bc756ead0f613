"""scheduling.k8s.io/v1alpha2 (alpha in 1.36, gate GenericWorkload): Workload and PodGroup, the
objects of workload-aware (gang) scheduling; a pod names its group in ``spec.schedulingGroup``."""

from __future__ import annotations

import msgspec

from ksched.api.base import K8s
from ksched.api.meta import Condition, ObjectMeta

API_VERSION = "scheduling.k8s.io/v1alpha2"

POD_GROUP_SCHEDULED = "PodGroupScheduled"
"""The condition type the scheduler writes on a PodGroup."""
DISRUPTION_TARGET = "DisruptionTarget"
REASON_SCHEDULED = "Scheduled"
REASON_UNSCHEDULABLE = "Unschedulable"
REASON_SCHEDULER_ERROR = "SchedulerError"
REASON_PREEMPTION_BY_SCHEDULER = "PreemptionByScheduler"
"""DisruptionTarget's reason when workload-aware preemption evicts a group (not implemented)."""
POD_GROUP_PROTECTION_FINALIZER = "scheduling.k8s.io/podgroup-protection"


class BasicSchedulingPolicy(K8s):
    pass


class GangSchedulingPolicy(K8s):
    min_count: int = 0


class PodGroupSchedulingPolicy(K8s):
    """Exactly one of ``basic`` and ``gang``."""

    basic: BasicSchedulingPolicy | None = None
    gang: GangSchedulingPolicy | None = None


class TopologyConstraint(K8s):
    key: str = ""


class PodGroupSchedulingConstraints(K8s):
    topology: list[TopologyConstraint] = []


class WorkloadPodGroupTemplateReference(K8s):
    workload_name: str = ""
    pod_group_template_name: str = ""


class PodGroupTemplateReference(K8s):
    workload: WorkloadPodGroupTemplateReference | None = None


class PodGroupSettings(K8s):
    """What a PodGroup and a Workload's podGroupTemplate both say of a group."""

    scheduling_policy: PodGroupSchedulingPolicy = msgspec.field(default_factory=PodGroupSchedulingPolicy)
    scheduling_constraints: PodGroupSchedulingConstraints | None = None
    disruption_mode: str | None = None
    priority_class_name: str = ""
    priority: int | None = None


class PodGroupSpec(PodGroupSettings):
    pod_group_template_ref: PodGroupTemplateReference | None = None


class PodGroupStatus(K8s):
    conditions: list[Condition] = []


class PodGroup(K8s):
    api_version: str = API_VERSION
    kind: str = "PodGroup"
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: PodGroupSpec = msgspec.field(default_factory=PodGroupSpec)
    status: PodGroupStatus = msgspec.field(default_factory=PodGroupStatus)

    @property
    def min_count(self) -> int | None:
        """The gang's ``minCount``; None for the basic policy (no gang)."""
        gang = self.spec.scheduling_policy.gang
        return gang.min_count if gang is not None else None


class PodGroupTemplate(PodGroupSettings):
    name: str = ""


class TypedLocalObjectReference(K8s):
    api_group: str = ""
    kind: str = ""
    name: str = ""


class WorkloadSpec(K8s):
    controller_ref: TypedLocalObjectReference | None = None
    pod_group_templates: list[PodGroupTemplate] = []


class Workload(K8s):
    api_version: str = API_VERSION
    kind: str = "Workload"
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: WorkloadSpec = msgspec.field(default_factory=WorkloadSpec)
