"""scheduler-plugins' Coscheduling PodGroup (``scheduling.x-k8s.io/v1alpha1``), read through a small
adapter as a v1alpha2 gang PodGroup (``minCount = minMember``); its pods name it in the label
``scheduling.x-k8s.io/pod-group`` (docs/gang.md)."""

from __future__ import annotations

import msgspec

from ksched.api.base import K8s
from ksched.api.core import Pod, PodSchedulingGroup
from ksched.api.meta import ObjectMeta
from ksched.api.scheduling import GangSchedulingPolicy, PodGroup, PodGroupSchedulingPolicy, PodGroupSpec

API_VERSION = "scheduling.x-k8s.io/v1alpha1"
POD_GROUP_LABEL = "scheduling.x-k8s.io/pod-group"
SOURCE_ANNOTATION = "ksched.io/pod-group-source"
"""Set on the v1alpha2 PodGroup the adapter makes of a Coscheduling one (value: its apiVersion)."""


class CoschedulingPodGroupSpec(K8s):
    min_member: int = 0
    min_resources: dict[str, str] = {}
    schedule_timeout_seconds: int | None = None


class CoschedulingPodGroupStatus(K8s):
    phase: str | None = None
    scheduled: int = 0
    running: int = 0


class CoschedulingPodGroup(K8s):
    api_version: str = API_VERSION
    kind: str = "PodGroup"
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: CoschedulingPodGroupSpec = msgspec.field(default_factory=CoschedulingPodGroupSpec)
    status: CoschedulingPodGroupStatus = msgspec.field(default_factory=CoschedulingPodGroupStatus)


def as_pod_group(group: CoschedulingPodGroup) -> PodGroup:
    """The v1alpha2 PodGroup the scheduler works with: a gang of ``minMember`` pods."""
    meta = msgspec.structs.replace(
        group.metadata, annotations={**group.metadata.annotations, SOURCE_ANNOTATION: API_VERSION}
    )
    policy = PodGroupSchedulingPolicy(gang=GangSchedulingPolicy(min_count=group.spec.min_member))
    return PodGroup(metadata=meta, spec=PodGroupSpec(scheduling_policy=policy))


def is_adapted(group: PodGroup) -> bool:
    """Whether ``group`` stands for a Coscheduling PodGroup (its status is not ours to write)."""
    return SOURCE_ANNOTATION in group.metadata.annotations


def with_label_group(pod: Pod) -> Pod:
    """``pod`` naming its Coscheduling group in ``spec.schedulingGroup`` (a pod that already names a
    group there, or has no label, is returned as it is)."""
    name = pod.metadata.labels.get(POD_GROUP_LABEL)
    if not name or pod.spec.scheduling_group is not None:
        return pod
    spec = msgspec.structs.replace(pod.spec, scheduling_group=PodSchedulingGroup(pod_group_name=name))
    return msgspec.structs.replace(pod, spec=spec)
