"""The :class:`Tracer` every service uses to publish pod lifecycle events.

Fire-and-forget: :meth:`Tracer.emit` only appends to a bounded in-memory buffer (never blocks,
never raises, never touches the network); a background task publishes the buffer every
``interval`` seconds with core NATS publishes on ``P.trace.=shard.<n>``, one per trace shard and
flush (a :class:`TraceBatch` of every pod of the shard; a pod's shard is
:func:`ksched.bus.subjects.trace_shard_of`), which the JetStream stream ``P_trace`` keeps (bounded:
see ``ksched.bus.streams.trace_stream``). Events are dropped, and counted in
``ksched_trace_dropped_total{reason}``, when the buffer is full or NATS is away: trace data must
never fill the connection's reconnect buffer, which the service's real messages need.

With ``sample`` below 1 only that fraction of the pods is traced, chosen by a hash of
``namespace/name``, so every service and every attempt of a pod agree (``--trace-sample``).

With a span sink (``--tracing-config-file``: :mod:`ksched.tracing.otel`) every event is also
handed to it as it is built in the background task, with the ``traceparent`` of its parent span
given to :meth:`Tracer.emit`; without one nothing of OpenTelemetry is imported or computed.

``details`` may be a callable; it is then called in the background task, so what it computes
(counts per plugin, top scores) costs nothing when tracing is off or the event is dropped, and
never delays the caller's reply.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import random
import time
import zlib
from collections import deque
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from nats.errors import MaxPayloadError
from nats.js.errors import NotFoundError

from ksched.aio import cancel_and_wait
from ksched.bus import jetstream, streams
from ksched.bus.connect import Bus
from ksched.bus.endpoints import TRACE_SHARD, PublishEndpoint
from ksched.bus.messages import TraceBatch, TraceEvent
from ksched.bus.subjects import TRACE_SHARDS, trace_shard_of
from ksched.tracing import metrics
from ksched.tracing.context import TRACEPARENT

log = logging.getLogger(__name__)

Details = Mapping[str, Any] | Callable[[], Mapping[str, Any]]
"""Small plain values (str, int, float, bool, lists and dicts of them), or a callable making them."""

ENV_SWITCH = "KSCHED_TRACE"
_OFF = frozenset({"0", "false", "no", "off"})

DEFAULT_CAPACITY = 10_000
DEFAULT_INTERVAL = 0.2
DEFAULT_BATCH = 512
"""Events per message at most (a message too large for the server's max_payload is split further)."""
_TURN = 4096
"""Events built per round of a flush (one message per shard each) at most."""
_BREATHE = 32
"""Events built between two chances for the loop to run something else: building a flush's events
(a scheduler's score tables) takes milliseconds at a hundred pods a second, which a pod arriving
meanwhile would wait for."""

_Item = tuple[str, str, str, str, str, float, float | None, Details | None, str]
"""phase, trace id, pod uid, namespace, name, ts, duration, details, parent (a traceparent)."""


class SpanSink(Protocol):
    """Where events go besides the bus (:class:`ksched.tracing.otel.OtelSink`)."""

    def add(self, event: TraceEvent, parent: str) -> None: ...

    def traceparent(self, trace_id: str, phase: str) -> str: ...

    def shutdown(self) -> None: ...


_ids = random.Random()  # seeded from os.urandom; its own, so a test's random.seed() repeats no id
os.register_at_fork(after_in_child=_ids.seed)  # a forked child draws other ids than its parent


def new_trace_id() -> str:
    """A fresh trace id (16 hex digits) for one pod attempt: unique, not secret (a Mersenne Twister
    draw, ~0.2 µs, where ``secrets`` costs a system call per attempt)."""
    return f"{_ids.getrandbits(64):016x}"


def pod_sampled(namespace: str, name: str, sample: float) -> bool:
    """Whether pod ``namespace/name`` is among the ``sample`` fraction of traced pods: the same
    answer in every process (the high bits of the CRC-32 of ``namespace/name``; its low bits are the
    trace shard, so the traced pods fall in every shard)."""
    if sample >= 1.0:
        return True
    return zlib.crc32(f"{namespace}/{name}".encode()) < sample * 4294967296.0


def tracing_enabled(env: Mapping[str, str] | None = None) -> bool:
    """On unless ``KSCHED_TRACE`` is ``0``, ``false``, ``no`` or ``off``."""
    value = (os.environ if env is None else env).get(ENV_SWITCH, "")
    return value.strip().lower() not in _OFF


class Tracer:
    """Publishes the trace events of one service instance. Create it any time (events buffer until
    :meth:`start`), start it once the bus is connected, :meth:`close` it before closing the bus."""

    def __init__(
        self,
        service: str,
        instance: str,
        *,
        capacity: int = DEFAULT_CAPACITY,
        interval: float = DEFAULT_INTERVAL,
        batch: int = DEFAULT_BATCH,
        enabled: bool | None = None,
        spans: SpanSink | None = None,
        sample: float = 1.0,
    ) -> None:
        if capacity <= 0 or interval <= 0 or batch <= 0:
            raise ValueError("tracer capacity, interval and batch must be positive")
        if not 0.0 <= sample <= 1.0:
            raise ValueError(f"tracer sample {sample!r}: expected a fraction from 0 to 1")
        self.service = service
        self.instance = instance
        self.capacity = capacity
        self.interval = interval
        self.batch = batch
        self.enabled = (tracing_enabled() if enabled is None else enabled) and sample > 0.0
        #: the fraction of pods traced (1: every pod)
        self.sample = sample
        #: the OpenTelemetry export (None: off)
        self.spans = spans
        self.published = 0
        self.dropped = 0
        self._buffer: deque[_Item] = deque()
        self._wake = asyncio.Event()
        """Set by the first event into an empty buffer: the background task sleeps on it while
        nothing is buffered, instead of waking every ``interval`` for nothing."""
        self._bus: Bus | None = None
        self._task: asyncio.Task[None] | None = None
        self._stream_checked = False
        self._sampled: dict[tuple[str, str], bool] = {}
        self._shards: dict[tuple[str, str], int] = {}
        """Each pod's trace shard (a pod's events come in several flushes: computed once)."""
        self._endpoints: list[PublishEndpoint[TraceEvent | TraceBatch]] = [
            TRACE_SHARD.to(shard) for shard in range(TRACE_SHARDS)
        ]

    @property
    def buffered(self) -> int:
        return len(self._buffer)

    # --- the hot path ---------------------------------------------------------------------------------
    def emit(
        self,
        phase: str,
        trace_id: str,
        uid: str,
        namespace: str,
        name: str,
        *,
        duration: float | None = None,
        details: Details | None = None,
        ts: float | None = None,
        parent: str = "",
    ) -> None:
        """Record one event (``ts`` defaults to now: Unix seconds; ``duration`` in seconds; ``parent``:
        the ``traceparent`` of the span it continues, for the OpenTelemetry export)."""
        if not self.enabled:
            return
        if self.sample < 1.0 and not self._pod_sampled(namespace, name):
            return
        if len(self._buffer) >= self.capacity:
            self._drop("buffer_full")
            return
        if not self._buffer:
            self._wake.set()
        self._buffer.append(
            (
                phase,
                trace_id,
                uid,
                namespace,
                name,
                time.time() if ts is None else ts,
                duration,
                details,
                parent,
            )
        )

    def _pod_sampled(self, namespace: str, name: str) -> bool:
        key = (namespace, name)
        sampled = self._sampled.get(key)
        if sampled is None:
            if len(self._sampled) >= 65536:
                self._sampled.clear()
            sampled = self._sampled[key] = pod_sampled(namespace, name, self.sample)
        return sampled

    def traceparent(self, trace_id: str, phase: str) -> str:
        """The ``traceparent`` of ``phase``'s span in the attempt ``trace_id`` ("" without export)."""
        spans = self.spans
        if spans is None or not trace_id:
            return ""
        return spans.traceparent(trace_id, phase)

    def headers(self, trace_id: str, phase: str) -> dict[str, str] | None:
        """NATS headers carrying ``phase``'s span to the next service (None without export)."""
        parent = self.traceparent(trace_id, phase)
        return {TRACEPARENT: parent} if parent else None

    # --- publishing -----------------------------------------------------------------------------------
    def start(self, bus: Bus) -> None:
        """Publish from now on through ``bus`` (a background task in the running loop)."""
        self._bus = bus
        if self.enabled and self._task is None:
            self._task = asyncio.create_task(self._run(), name=f"tracer-{self.service}")

    async def _run(self) -> None:
        """Flush ``interval`` after the first event of a batch; asleep while there is none."""
        while True:
            await self._wake.wait()
            await asyncio.sleep(self.interval)
            try:
                await self.flush()
            except Exception as exc:  # never let tracing take a service down
                log.debug("tracer: flush failed: %s", exc)
            if not self._buffer:
                self._wake.clear()

    async def flush(self) -> int:
        """Publish everything buffered now; returns how many events were handed to NATS."""
        bus = self._bus
        if bus is None or not self._buffer:
            return 0
        if not bus.ready:
            self._drop_all("disconnected")
            return 0
        if not self._stream_checked:
            await self._ensure_stream(bus)
        sent = 0
        buffer, built = self._buffer, self._built
        while buffer:
            if not bus.ready:
                self._drop_all("disconnected")
                break
            shards: list[list[TraceEvent]] = [[] for _ in range(TRACE_SHARDS)]
            of_pod = self._shards
            if len(of_pod) >= 65536:
                of_pod.clear()
            for i in range(min(_TURN, len(buffer))):
                if i and not i % _BREATHE:
                    await asyncio.sleep(0)
                item = buffer.popleft()
                event = built(item)
                if event is not None:
                    key = (item[3], item[4])
                    shard = of_pod.get(key)
                    if shard is None:
                        shard = of_pod[key] = trace_shard_of(item[3], item[4])
                    shards[shard].append(event)
            for shard, events in enumerate(shards):
                for start in range(0, len(events), self.batch):
                    count = await self._publish(bus, shard, events[start : start + self.batch])
                    if count:  # counted as they go: a close may cancel the flush half way
                        sent += count
                        self.published += count
                        metrics.PUBLISHED.inc(count)
            await asyncio.sleep(0)  # let the service breathe during a large flush
        return sent

    async def _publish(self, bus: Bus, shard: int, events: list[TraceEvent]) -> int:
        """One message for ``events`` of one shard (halved while too large for the server); returns
        how many were handed to NATS, the others dropped and counted."""
        if not events:
            return 0
        message: TraceEvent | TraceBatch = events[0] if len(events) == 1 else TraceBatch(events=events)
        try:
            await bus.publish(self._endpoints[shard], message)
        except MaxPayloadError as exc:
            if len(events) == 1:
                log.debug("tracer: dropped a %s event too large to publish: %s", events[0].phase, exc)
                self._drop("error")
                return 0
            half = len(events) // 2
            return await self._publish(bus, shard, events[:half]) + await self._publish(
                bus, shard, events[half:]
            )
        except Exception as exc:
            log.debug("tracer: dropped %d events of trace shard %d: %s", len(events), shard, exc)
            self._drop("error", len(events))
            return 0
        return len(events)

    def _built(self, item: _Item) -> TraceEvent | None:
        """The event of ``item``, handed to the span sink too; None (counted) when it cannot be built."""
        try:
            event = self._event(item)
        except Exception as exc:
            log.debug("tracer: dropped a %s event of %s/%s: %s", item[0], item[3], item[4], exc)
            self._drop("error")
            return None
        if self.spans is not None:
            try:
                self.spans.add(event, item[8])
            except Exception as exc:  # never let the export take a service down
                log.debug("tracer: span of a %s event not exported: %s", item[0], exc)
        return event

    def _drop_all(self, reason: str) -> None:
        """Drop the buffer from the bus (still exported as spans: the collector is not NATS)."""
        if self.spans is not None:
            for item in self._buffer:
                self._built(item)
        self._drop(reason, len(self._buffer))
        self._buffer.clear()

    def _event(self, item: _Item) -> TraceEvent:
        phase, trace_id, uid, namespace, name, ts, duration, details, _ = item
        values = details() if callable(details) else details
        return TraceEvent(
            trace_id=trace_id,
            pod_uid=uid,
            namespace=namespace,
            name=name,
            service=self.service,
            instance=self.instance,
            phase=phase,
            ts=ts,
            duration=duration,
            details=values if isinstance(values, dict) else dict(values or {}),
        )

    async def _ensure_stream(self, bus: Bus) -> None:
        """Create ``P_trace`` if nobody has yet (an existing stream's limits are left alone). Tried
        once: without the stream the events are still published, only not kept."""
        self._stream_checked = True
        try:
            await bus.js.stream_info(bus.subjects.trace_stream)
        except NotFoundError:
            await jetstream.ensure_stream(bus, streams.trace_stream(bus.subjects))
        except Exception as exc:
            log.warning("tracer: could not check stream %s: %s", bus.subjects.trace_stream, exc)

    async def close(self, timeout: float = 2.0) -> None:
        """Stop the background task and publish what is left (within ``timeout``)."""
        task, self._task = self._task, None
        if task is not None:
            await cancel_and_wait(task)
        with contextlib.suppress(Exception):
            async with asyncio.timeout(timeout):
                await self.flush()
        if self._buffer:
            self._drop_all("disconnected")
        spans, self.spans = self.spans, None
        if spans is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(asyncio.to_thread(spans.shutdown), timeout)

    def _drop(self, reason: str, count: int = 1) -> None:
        self.dropped += count
        metrics.DROPPED.labels(reason).inc(count)
