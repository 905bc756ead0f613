"""Reading trace events back from the JetStream stream ``P_trace``.

A pod's events are on its trace shard's subject ``P.trace.=shard.<n>`` (one message per shard and
flush of each service, every pod of the shard in it), and, written by releases before the shards,
on its own subject ``P.trace.<namespace>.<name>``. A pod's history reads both: the shard with an
ordered consumer filtered on the shard's subject (the server walks only that shard's messages: an
eighth of the stream), keeping the pod's events (a message not containing the pod's name is not
even decoded), the old subject with message gets by subject. Following uses ordered push
consumers; events from several services reach the stream up to a flush interval apart, so
:class:`Reorder` holds each event briefly and releases them in time order.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import datetime
import logging
import time
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass

from nats.aio.msg import Msg
from nats.js.api import ConsumerConfig, DeliverPolicy
from nats.js.errors import NotFoundError

from ksched.bus.codec import BadMessage, decode
from ksched.bus.connect import Bus
from ksched.bus.endpoints import TRACE
from ksched.bus.messages import TraceBatch, TraceEvent
from ksched.bus.subjects import Subjects, trace_shard_of
from ksched.bus.tokens import TokenError, decode_token

log = logging.getLogger(__name__)

SCAN_IDLE = 1.0
"""Seconds without a message after which a scan asks its consumer whether anything is left."""
SINCE_MARGIN = 300.0
"""With ``since``, a shard is read from the messages stored this many seconds before it: an event's
time is its service's clock, a message's the server's, and a flush publishes events emitted earlier."""
TAIL_MESSAGES = 500
"""How many of the newest shard messages :func:`traced_pods` looks through."""


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


def pod_subjects(subjects: Subjects, namespace: str, name: str) -> list[str]:
    """Where one pod's events are: its trace shard's subject, and its own (older releases)."""
    return [subjects.trace_shard(trace_shard_of(namespace, name)), subjects.trace(namespace, name)]


async def pod_history(bus: Bus, namespace: str, name: str, since: float | None = None) -> list[Traced]:
    """Every stored event of one pod (with ``ts >= since`` if given), in stream order."""
    first, last, _ = await stream_state(bus)
    if not last:
        return []
    shard, own = pod_subjects(bus.subjects, namespace, name)
    out: list[Traced] = []
    key = name.encode()

    def keep(seq: int, data: bytes, subject: str) -> None:
        if key not in data:  # msgpack keeps str bytes as they are: no name, none of the pod's events
            return
        for event in _decode(data, subject):
            if event.name == name and event.namespace == namespace and (since is None or event.ts >= since):
                out.append(Traced(seq, event))

    if await _stored(bus, shard):
        start = None if since is None else since - SINCE_MARGIN
        await _scan(bus, shard, keep, last, start_time=start)
    out.extend(await _own_subject(bus, own, first, last, since))
    out.sort(key=lambda t: t.seq)
    return out


async def _own_subject(bus: Bus, subject: str, first: int, last: int, since: float | None) -> list[Traced]:
    """A pod's events on its own subject (written by releases before the trace shards)."""
    stream = bus.subjects.trace_stream
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


async def _stored(bus: Bus, subject: str) -> int:
    """How many messages the trace stream holds on ``subject``."""
    info = await bus.js.stream_info(bus.subjects.trace_stream, subjects_filter=subject)
    return int((info.state.subjects or {}).get(subject, 0))


async def _scan(
    bus: Bus,
    subject: str,
    keep: Callable[[int, bytes, str], None],
    last: int,
    start_seq: int | None = None,
    start_time: float | None = None,
) -> None:
    """Hand every stored message on ``subject`` (from ``start_seq``, or stored from ``start_time``)
    up to sequence ``last`` to ``keep``, through an ordered push consumer (streamed: no round trip
    per message)."""
    done = asyncio.Event()
    seen = 0

    async def on_message(msg: Msg) -> None:
        nonlocal seen
        seen += 1
        meta = msg.metadata
        seq = meta.sequence.stream
        if seq <= last:
            keep(seq, msg.data, msg.subject)
        if seq >= last or not meta.num_pending:
            done.set()

    if start_seq is not None:
        config = ConsumerConfig(deliver_policy=DeliverPolicy.BY_START_SEQUENCE, opt_start_seq=start_seq)
    elif start_time is not None:
        start = datetime.datetime.fromtimestamp(max(start_time, 0.0), tz=datetime.UTC)
        config = ConsumerConfig(deliver_policy=DeliverPolicy.BY_START_TIME, opt_start_time=start)
    else:
        config = ConsumerConfig(deliver_policy=DeliverPolicy.ALL)
    sub = await bus.js.subscribe(
        subject, stream=bus.subjects.trace_stream, cb=on_message, ordered_consumer=True, config=config
    )
    try:
        while not done.is_set():
            before = seen
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(done.wait(), SCAN_IDLE)
            if not done.is_set() and seen == before and not (await sub.consumer_info()).num_pending:
                break  # nothing (left) to deliver: the messages went (age limit) or none matched
    finally:
        with contextlib.suppress(Exception):
            name = (await sub.consumer_info()).name  # gone at once, not after the server's idle limit
            await sub.unsubscribe()
            await bus.js.delete_consumer(bus.subjects.trace_stream, name)


async def traced_pods(bus: Bus, namespace: str, limit: int = 10) -> list[str]:
    """Names of up to ``limit`` pods of ``namespace`` with stored events (for "did you mean"): from
    the newest :data:`TAIL_MESSAGES` shard messages, and from the pods' own subjects (older releases)."""
    names: set[str] = set()
    with contextlib.suppress(Exception):
        _, last, _ = await stream_state(bus)
        token = namespace.encode()

        def keep(seq: int, data: bytes, subject: str) -> None:
            if token in data:
                names.update(e.name for e in _decode(data, subject) if e.namespace == namespace)

        shards = bus.subjects.trace_shard_all
        if last and await _stored_under(bus, shards):
            await _scan(bus, shards, keep, last, start_seq=max(1, last - TAIL_MESSAGES + 1))
    with contextlib.suppress(Exception):
        info = await bus.js.stream_info(
            bus.subjects.trace_stream, subjects_filter=bus.subjects.trace_namespace(namespace)
        )
        for subject in info.state.subjects or {}:
            with contextlib.suppress(TokenError):
                names.add(decode_token(subject.rsplit(".", 1)[-1]))
    return sorted(names)[:limit]


async def _stored_under(bus: Bus, wildcard: str) -> int:
    info = await bus.js.stream_info(bus.subjects.trace_stream, subjects_filter=wildcard)
    return sum((info.state.subjects or {}).values())


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
    bus: Bus,
    subject: str | Sequence[str],
    *,
    since: float | None = None,
    new_only: bool = False,
    pod: tuple[str, str] | None = None,
) -> AsyncIterator[Traced]:
    """Events on ``subject`` (or each of several: a pod's :func:`pod_subjects`, or every pod's)
    from the start of the stream, from ``since``, or only new ones; then live, until cancelled.
    With ``pod`` (namespace, name) only that pod's events."""
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
            if pod is None or (event.namespace, event.name) == pod:
                inbox.put_nowait(Traced(msg.metadata.sequence.stream, event))

    subs = []
    try:
        for each in [subject] if isinstance(subject, str) else subject:
            subs.append(
                await bus.js.subscribe(  # a config each: nats-py writes the subject and inbox into it
                    each,
                    stream=bus.subjects.trace_stream,
                    cb=on_message,
                    ordered_consumer=True,
                    config=copy.copy(config),
                )
            )
        while True:
            yield await inbox.get()
    finally:
        for sub in subs:
            with contextlib.suppress(Exception):
                await sub.unsubscribe()


class Reorder:
    """Holds each event ``hold`` seconds after it arrived and releases what is due in time order."""

    def __init__(self, hold: float = 0.5) -> None:
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
