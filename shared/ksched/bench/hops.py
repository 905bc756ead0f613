"""Where a pod's time goes from its creation to its binding, hop by hop: the trace events of its
attempt (docs/tracing.md) between the creation's response and the binding seen on a watch. ``ksched
bench e2e`` reports the median (and 90th percentile) of each hop over the pods bound in one attempt
(``hops`` in its JSON), so a lone pod's fixed waits and slow hops show (docs/benchmarks-history.md, "A
lone pod").

Every time is a Unix time of one machine's clock (the services' trace events, the benchmark's
creation and watch times), so the hops of a run on one machine subtract. A hop that a later one
overtakes is negative: the binder receives a placement before the informer's acknowledgements of
it return, and a watch may show a binding before the binder has its answer.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Mapping

from nats.js.api import ConsumerConfig, DeliverPolicy

from ksched.bus.codec import BadMessage, decode
from ksched.bus.connect import Bus
from ksched.bus.endpoints import TRACE
from ksched.bus.messages import TraceBatch, TraceEvent

PHASES = ("queued", "popped", "snapshot", "filter", "assumed", "assume_check", "prebind", "bound")
"""The phases of a scheduled attempt the hops are measured between."""

HOPS = (
    "created -> queued (watch, informer, feed)",
    "queued -> popped",
    "popped -> at the scheduler",
    "snapshot wait",
    "cycle",
    "cycle -> assume sent",
    "assume sent -> at the informer",
    "informer: check, ledger, placement",
    "informer -> scheduler (reply)",
    "informer -> binder",
    "prebind",
    "bind call",
    "bound -> watch",
    "total",
)


def _end(event: TraceEvent) -> float:
    return event.ts + (event.duration or 0.0)


def _hops(created: float, seen: float, ph: Mapping[str, TraceEvent]) -> tuple[float, ...]:
    queued, popped, snapshot, cycle, assumed, check, prebind, bound = (ph[p] for p in PHASES)
    return (
        queued.ts - created,
        popped.ts - queued.ts,
        snapshot.ts - popped.ts,
        snapshot.duration or 0.0,
        cycle.duration or 0.0,
        assumed.ts - _end(cycle),
        check.ts - assumed.ts,
        check.duration or 0.0,
        _end(assumed) - _end(check),
        prebind.ts - _end(check),
        prebind.duration or 0.0,
        bound.duration or 0.0,
        seen - _end(bound),
        seen - created,
    )


def _quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(len(ordered) * q))] * 1000, 2)


def breakdown(
    events: Iterable[TraceEvent], namespace: str, created: Mapping[str, float], seen: Mapping[str, float]
) -> dict[str, dict[str, float]]:
    """Per hop, its median and 90th percentile in milliseconds (and ``pods``, how many counted) over
    the pods of ``namespace`` created at ``created[name]`` and seen bound at ``seen[name]`` (Unix
    times) that were scheduled in one attempt with every phase traced; {} when none was."""
    phases: dict[str, dict[str, TraceEvent]] = {}
    attempts: dict[str, set[str]] = {}
    for event in events:
        if event.namespace != namespace:
            continue
        attempts.setdefault(event.name, set()).add(event.trace_id)
        phases.setdefault(event.name, {}).setdefault(str(event.phase), event)
    rows: list[tuple[float, ...]] = []
    for name, ph in phases.items():
        if len(attempts[name]) != 1 or name not in created or name not in seen:
            continue
        if all(p in ph for p in PHASES):
            rows.append(_hops(created[name], seen[name], ph))
    if not rows:
        return {}
    return {
        hop: {"p50": _quantile(column, 0.5), "p90": _quantile(column, 0.9), "pods": len(column)}
        for hop, column in zip(HOPS, (list(c) for c in zip(*rows, strict=True)), strict=True)
    }


async def trace_events(bus: Bus, idle: float = 2.0) -> list[TraceEvent]:
    """Every event in the trace stream ``P_trace`` (after the services' last flush: wait a flush
    interval before); stops at the stream's last message or after ``idle`` s without one."""
    stream = bus.subjects.trace_stream
    info = await bus.js.stream_info(stream)
    last = int(info.state.last_seq or 0)
    if not info.state.messages:
        return []
    config = ConsumerConfig(deliver_policy=DeliverPolicy.ALL)
    subject = f"{bus.subjects.prefix}.trace.>"
    sub = await bus.js.subscribe(subject, stream=stream, ordered_consumer=True, config=config)
    out: list[TraceEvent] = []
    try:
        while True:
            try:
                msg = await sub.next_msg(timeout=idle)
            except TimeoutError:
                break
            with contextlib.suppress(BadMessage):
                message = decode(msg.data, TRACE.any.decode_as)
                if isinstance(message, TraceBatch):
                    out.extend(message.events)
                elif isinstance(message, TraceEvent):
                    out.append(message)
            if msg.metadata.sequence.stream >= last:
                break
    finally:
        with contextlib.suppress(Exception):
            await sub.unsubscribe()
    return out
