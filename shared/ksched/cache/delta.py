"""Snapshot delta operations: what changed in the cache, in order.

The op types are the bus's (``ksched.bus.messages``): NodeUpsert, NodeRemove, PodPlace,
PodRemove, ObjectUpsert, ObjectRemove. Pods and nodes travel as the object model's structs,
which already hold only the fields the scheduler reads.
"""

from __future__ import annotations

import msgspec

from ksched.bus.messages import (
    NodeRemove,
    NodeUpsert,
    ObjectRemove,
    ObjectUpsert,
    PodPlace,
    PodRemove,
    SnapshotDelta,
    SnapshotOp,
)

DeltaOp = SnapshotOp
DeltaBatch = SnapshotDelta


class SnapshotImage(msgspec.Struct, kw_only=True):
    """A full snapshot at ``generation``: every op needed to rebuild it from empty.

    On the bus it travels as the items of a chunked bootstrap (``ksched.bus.bootstrap``).
    """

    epoch: str
    generation: int
    ops: list[SnapshotOp]


__all__ = [
    "DeltaBatch",
    "DeltaOp",
    "NodeRemove",
    "NodeUpsert",
    "ObjectRemove",
    "ObjectUpsert",
    "PodPlace",
    "PodRemove",
    "SnapshotImage",
]
