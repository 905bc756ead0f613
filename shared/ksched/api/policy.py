"""policy/v1 PodDisruptionBudget and scheduling.k8s.io/v1 PriorityClass."""

from __future__ import annotations

import msgspec

from ksched.api.base import K8s
from ksched.api.meta import Condition, LabelSelector, ObjectMeta


class PodDisruptionBudgetSpec(K8s):
    min_available: int | str | None = None
    max_unavailable: int | str | None = None
    selector: LabelSelector | None = None
    unhealthy_pod_eviction_policy: str | None = None


class PodDisruptionBudgetStatus(K8s):
    disruptions_allowed: int = 0
    current_healthy: int = 0
    desired_healthy: int = 0
    expected_pods: int = 0
    observed_generation: int | None = None
    disrupted_pods: dict[str, str] = {}
    conditions: list[Condition] = []


class PodDisruptionBudget(K8s):
    api_version: str = "policy/v1"
    kind: str = "PodDisruptionBudget"
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: PodDisruptionBudgetSpec = msgspec.field(default_factory=PodDisruptionBudgetSpec)
    status: PodDisruptionBudgetStatus = msgspec.field(default_factory=PodDisruptionBudgetStatus)


class PriorityClass(K8s):
    api_version: str = "scheduling.k8s.io/v1"
    kind: str = "PriorityClass"
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    value: int = 0
    global_default: bool = False
    preemption_policy: str | None = None
    description: str | None = None


class RuntimeClassOverhead(K8s):
    pod_fixed: dict[str, str] = {}


class RuntimeClass(K8s):
    """node.k8s.io/v1 RuntimeClass; admission copies its overhead into ``pod.spec.overhead``."""

    api_version: str = "node.k8s.io/v1"
    kind: str = "RuntimeClass"
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    handler: str = ""
    overhead: RuntimeClassOverhead | None = None
