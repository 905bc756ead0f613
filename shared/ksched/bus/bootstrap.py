"""Chunked, compressed bootstraps: a full snapshot for a replica, every pending pod for the queue.

Protocol (both bootstraps):

1. the requester subscribes to a fresh inbox and sends the request (``SnapshotBootstrapRequest`` /
   ``PendingPodsRequest``, whose ``deliver`` is that inbox) by request/reply;
2. the cache publishes ``BootstrapChunk`` 0..n-1 to ``deliver`` (:func:`publish_chunks`), then
   answers the request with ``BootstrapReply(chunks=n, ...)``;
3. the requester reads the n chunks in order from its inbox (:func:`fetch_bootstrap`).

One connection publishes both chunks and reply, so the chunks are in the requester's inbox before
the reply arrives. Each chunk's ``data`` is a zlib-compressed msgpack array of items, at most
``max_chunk_bytes`` before compression (NATS' default payload limit is 1 MiB).
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import msgspec
import nats.errors

from ksched.api.base import DECODE_ERRORS
from ksched.bus.codec import BadMessage, Message, encode
from ksched.bus.connect import Bus
from ksched.bus.endpoints import RequestEndpoint
from ksched.bus.handlers import decode_or_report
from ksched.bus.limits import MAX_SUBJECT_BYTES
from ksched.bus.messages import BootstrapChunk, BootstrapReply
from ksched.bus.subjects import SubjectKind, Subjects

Q = TypeVar("Q", bound=Message)

CODEC = "zlib"
_encoder = msgspec.msgpack.Encoder()
_list_decoders: dict[object, msgspec.msgpack.Decoder[list[Any]]] = {}


_UNPACK_ERRORS: tuple[type[Exception], ...] = (zlib.error, *DECODE_ERRORS)


class BootstrapError(Exception):
    """The bootstrap could not be completed (cache not ready, missing or inconsistent chunks)."""


def _array_header(n: int) -> bytes:
    if n < 16:
        return bytes([0x90 | n])
    if n < 1 << 16:
        return b"\xdc" + n.to_bytes(2, "big")
    return b"\xdd" + n.to_bytes(4, "big")


def pack_items(items: Sequence[Any], max_chunk_bytes: int = 512 * 1024) -> list[bytes]:
    """Split msgspec-encodable ``items`` into compressed chunk payloads.

    Each payload holds at most ``max_chunk_bytes`` of encoded items (an item larger than that goes
    alone in its chunk). An empty sequence gives one payload holding an empty array.
    """
    groups: list[list[bytes]] = [[]]
    size = 0
    for item in items:
        encoded = _encoder.encode(item)
        if groups[-1] and size + len(encoded) > max_chunk_bytes:
            groups.append([])
            size = 0
        groups[-1].append(encoded)
        size += len(encoded)
    return [zlib.compress(_array_header(len(g)) + b"".join(g), 1) for g in groups]


def unpack_items(data: bytes, item_type: Any, codec: str = CODEC) -> list[Any]:
    """Items (of ``item_type``, e.g. ``PendingPod`` or ``SnapshotOp``) of one chunk payload.

    Raises :class:`BadMessage` if the payload does not decompress or decode.
    """
    if codec != CODEC:
        raise BadMessage(f"unknown bootstrap chunk codec {codec!r}")
    decoder = _list_decoders.get(item_type)
    if decoder is None:
        decoder = _list_decoders[item_type] = msgspec.msgpack.Decoder(list[item_type])
    try:
        return decoder.decode(zlib.decompress(data))
    except _UNPACK_ERRORS as exc:
        raise BadMessage(f"bad bootstrap chunk: {exc}") from None


_INBOX_TOKEN = re.compile(r"[^\s.*>]+")


def deliver_problem(subjects: Subjects, deliver: str) -> str:
    """Why the cache must not publish chunks to ``deliver`` ("" if it may): only an inbox of this
    installation (``P._INBOX.<token>...``, what ``Bus.nc.new_inbox()`` gives), never another
    subject, so a requester cannot have chunks published into a stream or to another service."""
    prefix = subjects.inbox_prefix + "."
    tokens = deliver[len(prefix) :].split(".") if deliver.startswith(prefix) else []
    short = len(deliver.encode()) <= MAX_SUBJECT_BYTES
    if short and tokens and all(_INBOX_TOKEN.fullmatch(t) for t in tokens):
        return ""
    return f"deliver {deliver[:200]!r} is not an inbox of this installation ({prefix}<token>)"


async def publish_chunks(
    bus: Bus,
    deliver: str,
    items: Sequence[Any],
    *,
    epoch: str,
    generation: int,
    stream_seq: int = 0,
    max_chunk_bytes: int = 512 * 1024,
) -> BootstrapReply:
    """Publish ``items`` as chunks to ``deliver``; return the reply the request handler must send."""
    payloads = pack_items(items, max_chunk_bytes)
    for index, data in enumerate(payloads):
        chunk = BootstrapChunk(
            epoch=epoch, generation=generation, index=index, total=len(payloads), data=data
        )
        await bus.nc.publish(deliver, encode(chunk))
    return BootstrapReply(
        epoch=epoch,
        generation=generation,
        chunks=len(payloads),
        items=len(items),
        stream_seq=stream_seq,
    )


async def fetch_bootstrap(
    bus: Bus,
    endpoint: RequestEndpoint[Q, BootstrapReply],
    make_request: Callable[[str], Q],
    item_type: Any,
    *,
    timeout: float = 30.0,
) -> tuple[BootstrapReply, list[Any]]:
    """Run the protocol above on ``endpoint``: ``make_request(inbox)`` builds the request; returns
    reply and items."""
    subject = endpoint.subject(bus.subjects)
    inbox = bus.nc.new_inbox()
    sub = await bus.nc.subscribe(inbox)
    try:
        reply = await bus.request(endpoint, make_request(inbox), timeout=timeout)
        if reply.error:
            raise BootstrapError(f"{subject}: {reply.error}")
        items: list[Any] = []
        for index in range(reply.chunks):
            try:
                raw = await sub.next_msg(timeout=timeout)
            except nats.errors.TimeoutError:
                raise BootstrapError(f"{subject}: chunk {index} of {reply.chunks} never arrived") from None
            chunk = decode_or_report(raw.data, BootstrapChunk, SubjectKind.BOOTSTRAP_CHUNK, raw.subject)
            if chunk is None:
                raise BootstrapError(f"{subject}: chunk {index} of {reply.chunks} is not a BootstrapChunk")
            if (chunk.index, chunk.total, chunk.epoch, chunk.generation) != (
                index,
                reply.chunks,
                reply.epoch,
                reply.generation,
            ):
                raise BootstrapError(
                    f"{subject}: got chunk {chunk.index}/{chunk.total} of {chunk.epoch}@{chunk.generation}, "
                    f"expected {index}/{reply.chunks} of {reply.epoch}@{reply.generation}"
                )
            try:
                items.extend(unpack_items(chunk.data, item_type, chunk.codec))
            except BadMessage as exc:
                raise BootstrapError(f"{subject}: chunk {index}: {exc}") from None
        if len(items) != reply.items:
            raise BootstrapError(f"{subject}: got {len(items)} items, the reply announced {reply.items}")
        return reply, items
    finally:
        await sub.unsubscribe()
