"""Snapshot delta operations: what changed in the cache, in order, as compact typed values.

Pods travel as the object model's ``Pod`` struct, which already holds only the fields the
scheduler reads (managedFields, env, probes... are dropped at decode time).
"""

from __future__ import annotations

import msgspec

from ksched.api.core import Node, Pod


class NodeUpsert(msgspec.Struct, tag="node+", array_like=True):
    node: Node


class NodeRemove(msgspec.Struct, tag="node-", array_like=True):
    name: str


class PodPlace(msgspec.Struct, tag="pod+", array_like=True):
    """A pod placed on ``node``: bound (seen by the watch) or assumed (accepted, not yet bound)."""

    pod: Pod
    node: str
    assumed: bool = False


class PodRemove(msgspec.Struct, tag="pod-", array_like=True):
    uid: str


class ObjectUpsert(msgspec.Struct, tag="obj+", array_like=True):
    """Another kind plugins read (Namespace, Service, PV, PVC, ...) as its JSON."""

    kind: str
    key: str
    raw: msgspec.Raw


class ObjectRemove(msgspec.Struct, tag="obj-", array_like=True):
    kind: str
    key: str


DeltaOp = NodeUpsert | NodeRemove | PodPlace | PodRemove | ObjectUpsert | ObjectRemove


class DeltaBatch(msgspec.Struct, kw_only=True):
    """Ops that moved the cache from generation ``base`` to ``generation`` within ``epoch``."""

    v: int = 1
    epoch: str
    base: int
    generation: int
    ops: list[DeltaOp]


class SnapshotImage(msgspec.Struct, kw_only=True):
    """A full snapshot at ``generation`` (bootstrap): every op needed to rebuild it from empty."""

    v: int = 1
    epoch: str
    generation: int
    ops: list[DeltaOp]
