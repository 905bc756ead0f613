"""The informer's answers to bootstrap requests: the snapshot for a scheduler replica, the pending
pods for the queue, each at one stream position (see docs/bus.md, "Bootstrap and stream order")."""

from __future__ import annotations

import logging

import msgspec

from ksched.bus.bootstrap import deliver_problem, publish_chunks
from ksched.bus.jetstream import last_sequence
from ksched.bus.messages import BootstrapReply, PendingPodsRequest, SnapshotBootstrapRequest
from ksched.cache.replica import image_of
from ksched_informer import feeds
from ksched_informer.publisher import Publisher

log = logging.getLogger(__name__)

MAX_DEVICE_CLASS_BYTES = 768 * 1024
"""The DeviceClasses a pending-pods reply carries at most (NATS' default payload limit is 1 MiB)."""


def device_classes_json(publisher: Publisher) -> list[bytes]:
    """Every DeviceClass in the cache as API JSON, or none (logged) if they would not fit a reply: the
    queue's hints then judge without them, as before they had them."""
    out = [msgspec.json.encode(dc) for dc in publisher.cache.snapshot.objects.device_classes.values()]
    size = sum(len(raw) for raw in out)
    if size > MAX_DEVICE_CLASS_BYTES:
        log.warning(
            "pending-pods bootstrap: %d DeviceClasses (%d bytes) do not fit the reply; sent none, so the "
            "queue's NodeResourcesFit hints do not see which extended resources DRA backs",
            len(out),
            size,
        )
        return []
    return out


async def _taken_at(publisher: Publisher, stream: str) -> int:
    """The stream sequence a bootstrap is taken at; call under the flush lock right after
    ``flush_locked``. Every message this informer published before is at or below it, the next
    flush's are above it, and so are messages of no other epoch that a consumer would have to
    replay (a previous leader's tail is below it)."""
    assert publisher.bus is not None
    return await last_sequence(publisher.bus, stream)


async def snapshot(publisher: Publisher, req: SnapshotBootstrapRequest) -> BootstrapReply:
    """Send the snapshot image to ``req.deliver`` in chunks; the reply says where the stream follows."""
    bus, subjects, cache = publisher.bus, publisher.subjects, publisher.cache
    assert bus is not None
    if problem := deliver_problem(subjects, req.deliver):
        return BootstrapReply(error=problem)
    async with publisher.lock:
        image = image_of(cache.snapshot, publisher.epoch, cache.generation)
        await publisher.flush_locked()
        seq = await _taken_at(publisher, subjects.snapshot_stream)
    return await publish_chunks(
        bus,
        req.deliver,
        image.ops,
        epoch=publisher.epoch,
        generation=image.generation,
        stream_seq=seq,
        max_chunk_bytes=req.max_chunk_bytes,
    )


async def pending_pods(publisher: Publisher, req: PendingPodsRequest) -> BootstrapReply:
    """Send the pending pods of ``req.scheduler_names`` (all if empty) in chunks."""
    bus, subjects, cache = publisher.bus, publisher.subjects, publisher.cache
    assert bus is not None
    if problem := deliver_problem(subjects, req.deliver):
        return BootstrapReply(error=problem)
    names = set(req.scheduler_names)
    async with publisher.lock:
        items = [
            feeds.pending_pod(pod, publisher.group_view(pod))
            for pod in cache.pending.values()
            if not names or pod.spec.scheduler_name in names
        ]
        classes = device_classes_json(publisher) if req.device_classes else []
        generation = cache.generation
        await publisher.flush_locked()
        seq = await _taken_at(publisher, subjects.feed_stream)
    reply = await publish_chunks(
        bus,
        req.deliver,
        items,
        epoch=publisher.epoch,
        generation=generation,
        stream_seq=seq,
        max_chunk_bytes=req.max_chunk_bytes,
    )
    reply.device_classes = classes
    return reply
