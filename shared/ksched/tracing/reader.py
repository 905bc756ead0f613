"""Reading trace events back from the JetStream stream ``P_trace``.

A pod's history is read with message gets by subject (``next_by_subj``: the server walks its
per-subject index, so a busy stream costs no more than the pod's own events). Following uses an
ordered push consumer; events from several services reach the stream up to a flush interval apart,
so :class:`Reorder` holds each event briefly and releases them in time order.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import logging
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass

from nats.aio.msg import Msg
from nats.js.api import ConsumerConfig, DeliverPolicy
from nats.js.errors import NotFoundError

from ksched.bus.codec import BadMessage, decode
from ksched.bus.connect import Bus
from ksched.bus.endpoints import TRACE
from ksched.bus.messages import TraceBatch, TraceEvent
from ksched.bus.tokens import decode_token

log = logging.getLogger(__name__)


class NoTraceStream(LookupError):
    """The installation has no ``P_trace`` stream (nothing published traces with that prefix)."""


@dataclass(frozen=True, slots=True)
class Traced:
    """A trace event and its stream sequence."""

    seq: int
    event: TraceEvent


async def stream_state(bus: Bus) -> tuple[int, int, int]:
    """``(first_seq, last_seq, messages)`` of the trace stream; :class:`NoTraceStream` if absent."""
    try:
        info = await bus.js.stream_info(bus.subjects.trace_stream)
    except NotFoundError as exc:
        raise NoTraceStream(bus.subjects.trace_stream) from exc
    state = info.state
    return int(state.first_seq or 0), int(state.last_seq or 0), int(state.messages or 0)


async def pod_history(bus: Bus, namespace: str, name: str, since: float | None = None) -> list[Traced]:
    """Every stored event of one pod (with ``ts >= since`` if given), in stream order."""
    stream = bus.subjects.trace_stream
    subject = bus.subjects.trace(namespace, name)
    first, last, _ = await stream_state(bus)
    out: list[Traced] = []
    seq = max(first, 1)
    while seq <= last:
        try:
            raw = await bus.js.get_msg(stream, seq=seq, subject=subject, next=True)
        except NotFoundError:
            break
        got = int(raw.seq or 0)
        if got < seq or got > last:
            break
        seq = got + 1
        for event in _decode(raw.data or b"", raw.subject or subject):
            if since is None or event.ts >= since:
                out.append(Traced(got, event))
    return out


async def traced_pods(bus: Bus, namespace: str, limit: int = 10) -> list[str]:
    """Names of up to ``limit`` pods of ``namespace`` with stored events (for "did you mean")."""
    try:
        info = await bus.js.stream_info(
            bus.subjects.trace_stream, subjects_filter=bus.subjects.trace_namespace(namespace)
        )
    except Exception:
        return []
    subjects = info.state.subjects or {}
    names = sorted(decode_token(subject.rsplit(".", 1)[-1]) for subject in subjects)
    return names[:limit]


def _decode(data: bytes, subject: str) -> list[TraceEvent]:
    """The events of one stored message: a :class:`TraceEvent` or a :class:`TraceBatch`."""
    try:
        message = decode(data, TRACE.any.decode_as)
    except BadMessage as exc:
        log.warning("skipped an unreadable trace event on %s: %s", subject, exc)
        return []
    if isinstance(message, TraceBatch):
        return message.events
    return [message] if isinstance(message, TraceEvent) else []


async def follow(
    bus: Bus, subject: str, *, since: float | None = None, new_only: bool = False
) -> AsyncIterator[Traced]:
    """Events on ``subject`` (a pod's, or every pod's) from the start of the stream, from ``since``,
    or only new ones; then live, until cancelled."""
    if since is not None:
        start = datetime.datetime.fromtimestamp(since, tz=datetime.UTC)
        config = ConsumerConfig(deliver_policy=DeliverPolicy.BY_START_TIME, opt_start_time=start)
    elif new_only:
        config = ConsumerConfig(deliver_policy=DeliverPolicy.NEW)
    else:
        config = ConsumerConfig(deliver_policy=DeliverPolicy.ALL)
    inbox: asyncio.Queue[Traced] = asyncio.Queue()

    async def on_message(msg: Msg) -> None:
        for event in _decode(msg.data, msg.subject):
            inbox.put_nowait(Traced(msg.metadata.sequence.stream, event))

    sub = await bus.js.subscribe(
        subject, stream=bus.subjects.trace_stream, cb=on_message, ordered_consumer=True, config=config
    )
    try:
        while True:
            yield await inbox.get()
    finally:
        with contextlib.suppress(Exception):
            await sub.unsubscribe()


class Reorder:
    """Holds each event ``hold`` seconds after it arrived and releases what is due in time order."""

    def __init__(self, hold: float = 0.3) -> None:
        self.hold = hold
        self._held: list[tuple[float, Traced]] = []

    def add(self, item: Traced, now: float | None = None) -> None:
        self._held.append((time.monotonic() if now is None else now, item))

    def due(self, now: float | None = None) -> list[Traced]:
        cutoff = (time.monotonic() if now is None else now) - self.hold
        ready = [item for arrived, item in self._held if arrived <= cutoff]
        if ready:
            self._held = [(arrived, item) for arrived, item in self._held if arrived > cutoff]
        return sorted(ready, key=lambda t: (t.event.ts, t.seq))

    def __len__(self) -> int:
        return len(self._held)
