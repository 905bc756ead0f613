"""coordination.k8s.io/v1 Lease, used for leader election."""

from __future__ import annotations

import msgspec

from ksched.api.base import K8s
from ksched.api.meta import ObjectMeta


class LeaseSpec(K8s):
    holder_identity: str | None = None
    lease_duration_seconds: int | None = None
    acquire_time: str | None = None
    renew_time: str | None = None
    lease_transitions: int | None = None


class Lease(K8s):
    api_version: str = "coordination.k8s.io/v1"
    kind: str = "Lease"
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: LeaseSpec = msgspec.field(default_factory=LeaseSpec)
