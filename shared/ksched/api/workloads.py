"""apps/v1 ReplicaSet and StatefulSet: read for their selectors (default topology spreading)."""

from __future__ import annotations

import msgspec

from ksched.api.base import K8s
from ksched.api.meta import LabelSelector, ObjectMeta


class WorkloadSpec(K8s):
    selector: LabelSelector | None = None
    replicas: int | None = None


class ReplicaSet(K8s):
    api_version: str = "apps/v1"
    kind: str = "ReplicaSet"
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: WorkloadSpec = msgspec.field(default_factory=WorkloadSpec)


class StatefulSet(K8s):
    api_version: str = "apps/v1"
    kind: str = "StatefulSet"
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: WorkloadSpec = msgspec.field(default_factory=WorkloadSpec)
