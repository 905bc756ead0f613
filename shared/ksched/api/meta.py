"""meta/v1 types shared by every object: ObjectMeta, owner references, label selectors."""

from __future__ import annotations

import msgspec

from ksched.api.base import K8s


class OwnerReference(K8s):
    api_version: str = ""
    kind: str = ""
    name: str = ""
    uid: str = ""
    controller: bool | None = None
    block_owner_deletion: bool | None = None


class ObjectMeta(K8s):
    name: str = ""
    generate_name: str | None = None
    namespace: str = ""
    uid: str = ""
    resource_version: str = ""
    generation: int | None = None
    creation_timestamp: str | None = None
    deletion_timestamp: str | None = None
    deletion_grace_period_seconds: int | None = None
    labels: dict[str, str] = {}
    annotations: dict[str, str] = {}
    owner_references: list[OwnerReference] = []
    finalizers: list[str] = []


class ListMeta(K8s):
    resource_version: str = ""
    continue_: str | None = msgspec.field(default=None, name="continue")
    remaining_item_count: int | None = None


class LabelSelectorRequirement(K8s):
    key: str
    operator: str
    values: list[str] = []


class LabelSelector(K8s):
    match_labels: dict[str, str] = {}
    match_expressions: list[LabelSelectorRequirement] = []


class ObjectReference(K8s):
    api_version: str | None = None
    kind: str | None = None
    namespace: str | None = None
    name: str | None = None
    uid: str | None = None
    resource_version: str | None = None
    field_path: str | None = None


class Condition(K8s):
    """A status condition (Pod, Node, PDB, ... conditions share these fields)."""

    type: str
    status: str
    reason: str | None = None
    message: str | None = None
    last_transition_time: str | None = None
    last_probe_time: str | None = None
    last_heartbeat_time: str | None = None
    observed_generation: int | None = None
