"""A snapshot replica: rebuilds the cache's snapshot from an image and keeps it current by
applying delta batches in order, refusing a batch that does not follow the last one."""

from __future__ import annotations

from collections.abc import Callable

import msgspec

from ksched.cache.delta import (
    DeltaBatch,
    DeltaOp,
    NodeRemove,
    NodeUpsert,
    ObjectRemove,
    ObjectUpsert,
    PodPlace,
    PodRemove,
    SnapshotImage,
)
from ksched.framework.objects import TABLES
from ksched.framework.snapshot import Snapshot, with_node_name


class SnapshotReplica:
    """``snapshot`` mirrors the cache at ``generation`` of ``epoch`` (plus local assumptions)."""

    def __init__(self) -> None:
        self.snapshot = Snapshot()
        self.epoch = ""
        self.generation = -1
        self.on_bound: Callable[[str], None] | None = None
        """Called with a pod's uid when a delta shows it bound (the watch saw the binding)."""
        self.loads = 0
        """How many images were loaded: a load drops the local assumptions (an assume in flight, or
        one accepted after the image was taken, is in none of it until its delta comes)."""

    @property
    def ready(self) -> bool:
        return bool(self.epoch)

    def load(self, image: SnapshotImage) -> None:
        """Replace everything with ``image`` (bootstrap or re-bootstrap after a gap or new epoch)."""
        self.snapshot.reset()
        apply_ops(self.snapshot, image.ops)
        self.epoch = image.epoch
        self.generation = image.generation
        self.loads += 1

    def apply(self, batch: DeltaBatch) -> bool:
        """Apply ``batch`` if it continues (or overlaps) our generation; False means re-bootstrap.

        Every op sets one key to its new value, so replaying ops the image already reflected
        (a batch whose ``base`` is behind us) ends in the same state; a batch that starts past
        our generation is a gap. Each op advances the generation by one: a batch that says
        otherwise is not the informer's (applying it could move us far ahead, and every real batch
        after it would then look already applied), so it is refused too.
        """
        if batch.generation - batch.base != len(batch.ops):
            return False
        if batch.epoch != self.epoch or batch.base > self.generation:
            return False
        if batch.generation > self.generation:
            apply_ops(self.snapshot, batch.ops, self.on_bound)
            self.generation = batch.generation
        return True


def apply_ops(snapshot: Snapshot, ops: list[DeltaOp], on_bound: Callable[[str], None] | None = None) -> None:
    for op in ops:
        if isinstance(op, PodPlace):
            pod = op.pod if op.pod.spec.node_name == op.node else with_node_name(op.pod, op.node)
            snapshot.add_pod(pod, op.node)
            if on_bound is not None and not op.assumed:
                on_bound(op.pod.metadata.uid)
        elif isinstance(op, PodRemove):
            snapshot.remove_pod(op.uid)
        elif isinstance(op, NodeUpsert):
            snapshot.upsert_node(op.node)
        elif isinstance(op, NodeRemove):
            snapshot.remove_node(op.name)
        elif isinstance(op, ObjectUpsert):
            entry = TABLES.get(op.kind)
            if entry is not None:
                getattr(snapshot.objects, entry[0])[op.key] = msgspec.json.decode(op.raw, type=entry[1])
        elif isinstance(op, ObjectRemove):
            entry = TABLES.get(op.kind)
            if entry is not None:
                getattr(snapshot.objects, entry[0]).pop(op.key, None)


def image_of(snapshot: Snapshot, epoch: str, generation: int) -> SnapshotImage:
    """Ops that rebuild ``snapshot`` from empty: objects, then nodes, then placed pods."""
    ops: list[DeltaOp] = []
    for kind, (attr, _) in TABLES.items():
        for key, obj in getattr(snapshot.objects, attr).items():
            ops.append(ObjectUpsert(kind, key, msgspec.json.encode(obj)))
    ops.extend(NodeUpsert(ni.node) for ni in snapshot.nodes if ni.node is not None)
    ops.extend(PodPlace(pi.pod, node) for pi, node in snapshot.pod_locations.values())
    return SnapshotImage(epoch=epoch, generation=generation, ops=ops)
