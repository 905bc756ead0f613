"""The Tracer over a real nats-server: events reach P_trace with the trace-id header, emit never
blocks or raises, and drops are counted (buffer full, NATS away, failing details)."""

from __future__ import annotations

import asyncio
from typing import Any

import msgspec
import pytest
from prometheus_client import REGISTRY

from ksched.bus.connect import Bus
from ksched.bus.endpoints import TRACE
from ksched.bus.jetstream import ensure_stream
from ksched.bus.messages import TraceEvent
from ksched.bus.streams import trace_stream
from ksched.bus.subjects import TRACE_SHARDS, Subjects, trace_shard_of
from ksched.tracing import Phase, Tracer, new_trace_id, tracing_enabled
from ksched.tracing.reader import NoTraceStream, Traced, pod_history, stream_state
from ksched.tracing.tracer import pod_sampled
from tests.fixtures.nats import BusFactory


def dropped(reason: str) -> float:
    return REGISTRY.get_sample_value("ksched_trace_dropped_total", {"reason": reason}) or 0.0


async def stored(bus: Bus, count: int, name: str = "web-1") -> list[Traced]:
    """The pod's stored events once ``count`` are there (core publishes are stored asynchronously)."""
    history: list[Traced] = []
    for _ in range(100):
        history = await pod_history(bus, "team.a", name)
        if len(history) >= count:
            break
        await asyncio.sleep(0.02)
    return history


async def stored_messages(bus: Bus, count: int) -> int:
    """How many messages the trace stream holds once it holds ``count`` (or after 2 s): stored
    asynchronously, they may trail the publishes."""
    messages = 0
    for _ in range(100):
        *_, messages = await stream_state(bus)
        if messages >= count:
            break
        await asyncio.sleep(0.02)
    return messages


async def published(tracer: Tracer) -> int:
    """What the background task published, once it published something (or after 2 s)."""
    for _ in range(100):
        if tracer.published:
            break
        await asyncio.sleep(0.02)
    return tracer.published


def emit(tracer: Tracer, phase: str, trace_id: str = "t1", name: str = "web-1", **kw: Any) -> None:
    tracer.emit(phase, trace_id, f"uid-{name}", "team.a", name, **kw)


async def test_events_reach_the_stream_in_order_on_the_pods_trace_shard(bus_factory: BusFactory) -> None:
    bus = await bus_factory("tracer")
    tracer = Tracer("scheduler", "s-0")
    tracer.start(bus)
    emit(tracer, Phase.QUEUED, details={"queue": "active"}, ts=100.0)
    emit(tracer, Phase.FILTER, duration=0.25, details=lambda: {"rejected": {"NodeName": 2}}, ts=101.0)
    emit(tracer, Phase.QUEUED, name="other")
    await tracer.close()
    assert tracer.published == 3 and tracer.dropped == 0

    history = await stored(bus, 2)
    events = [t.event for t in history]
    assert [e.phase for e in events] == ["queued", "filter"]
    first, second = events
    assert (first.service, first.instance, first.trace_id, first.pod_uid) == (
        "scheduler",
        "s-0",
        "t1",
        "uid-web-1",
    )
    assert first.ts == 100.0 and first.details == {"queue": "active"} and first.duration is None
    assert second.duration == 0.25 and second.details == {"rejected": {"NodeName": 2}}
    raw = await bus.js.get_msg(bus.subjects.trace_stream, seq=history[0].seq)
    assert raw.subject == bus.subjects.trace_shard(trace_shard_of("team.a", "web-1"))


async def test_one_flush_is_one_stored_message_per_trace_shard(bus_factory: BusFactory) -> None:
    """Forty pods' four events each: one message per shard the pods fall in (at most eight), not
    one per pod; each pod's history is its own events only, in order."""
    bus = await bus_factory("tracer")
    tracer = Tracer("scheduler", "s-0")
    tracer.start(bus)
    names = [f"web-{i}" for i in range(40)]
    for name in names:
        for phase in (Phase.SNAPSHOT, Phase.FILTER, Phase.SCORE, Phase.ASSUMED):
            emit(tracer, phase, trace_id=f"t-{name}", name=name)
    await tracer.close()
    assert tracer.published == 160 and tracer.dropped == 0
    shards = {trace_shard_of("team.a", name) for name in names}
    for name in names:
        history = await stored(bus, 4, name=name)
        assert [t.event.phase for t in history] == ["snapshot", "filter", "score", "assumed"]
        assert {(t.event.name, t.event.trace_id) for t in history} == {(name, f"t-{name}")}
    assert await stored_messages(bus, len(shards)) == len(shards) <= TRACE_SHARDS


async def test_a_large_flush_lets_the_service_run_while_it_builds_its_events(
    bus_factory: BusFactory,
) -> None:
    """Building a flush's events (a scheduler's score tables) yields to the loop every few events, so
    a pod arriving meanwhile does not wait for the whole flush; still one message per shard."""
    bus = await bus_factory("tracer")
    tracer = Tracer("scheduler", "s-0", interval=3600)  # only the flush below publishes
    tracer.start(bus)
    turns = 0
    seen: list[int] = []

    def details() -> dict[str, Any]:
        seen.append(turns)
        return {}

    for i in range(128):
        emit(tracer, Phase.SCORE, trace_id=f"t-{i}", name=f"web-{i}", details=details)

    async def service() -> None:
        nonlocal turns
        while True:
            turns += 1
            await asyncio.sleep(0)

    other = asyncio.create_task(service())
    await asyncio.sleep(0)
    try:
        assert await tracer.flush() == 128
    finally:
        other.cancel()
    assert len(seen) == 128 and len(set(seen)) >= 4  # the other task ran between the builds
    await tracer.close()
    shards = {trace_shard_of("team.a", f"web-{i}") for i in range(128)}
    assert await stored_messages(bus, len(shards)) == len(shards)


async def test_a_pods_history_has_its_events_on_its_own_subject_too(bus_factory: BusFactory) -> None:
    """A rolling upgrade: events an older release wrote on ``P.trace.<namespace>.<name>`` and the
    tracer's on the pod's shard make one history, in stream order."""
    bus = await bus_factory("tracer")
    await ensure_stream(bus, trace_stream(bus.subjects))
    old = TraceEvent(
        trace_id="t1", pod_uid="uid-web-1", namespace="team.a", name="web-1", service="queue",
        instance="q", phase=Phase.QUEUED, ts=99.0,
    )  # fmt: skip
    await bus.publish(TRACE.to("team.a", "web-1"), old)
    await bus.publish(
        TRACE.to("team.a", "web-2"), TraceEvent(**{**msgspec.structs.asdict(old), "name": "web-2"})
    )
    tracer = Tracer("scheduler", "s-0")
    tracer.start(bus)
    emit(tracer, Phase.FILTER, ts=100.0)
    await tracer.close()
    history = await stored(bus, 2)
    assert [(t.event.service, t.event.phase) for t in history] == [
        ("queue", "queued"),
        ("scheduler", "filter"),
    ]
    raw = await bus.js.get_msg(bus.subjects.trace_stream, seq=history[1].seq)
    assert raw.subject == bus.subjects.trace_shard(trace_shard_of("team.a", "web-1"))


async def test_a_flush_too_large_for_one_message_is_split(bus_factory: BusFactory) -> None:
    """Events whose batch is over the server's max_payload go in several messages, none dropped."""
    bus = await bus_factory("tracer")
    big = "x" * (bus.nc.max_payload // 3)
    tracer = Tracer("scheduler", "s-0")
    tracer.start(bus)
    for i in range(6):
        emit(tracer, Phase.FILTER, trace_id=f"t{i}", details={"message": big})
    await tracer.close()
    assert tracer.published == 6 and tracer.dropped == 0
    history = await stored(bus, 6)
    assert [t.event.trace_id for t in history] == [f"t{i}" for i in range(6)]
    assert len({t.seq for t in history}) >= 3


def test_sampling_keeps_the_same_pods_in_every_service() -> None:
    queue, binder = Tracer("queue", "q", sample=0.25), Tracer("binder", "b", sample=0.25)
    names = [f"web-{i}" for i in range(400)]
    for tracer in (queue, binder):
        for name in names:
            emit(tracer, Phase.QUEUED, name=name)
            emit(tracer, Phase.POPPED, name=name)  # every event of a sampled pod, none of the others
    kept = [item[4] for item in queue._buffer]
    assert kept == [item[4] for item in binder._buffer]
    assert len(kept) % 2 == 0 and 60 <= len(kept) // 2 <= 140
    assert set(kept) == {n for n in names if pod_sampled("team.a", n, 0.25)}
    assert {trace_shard_of("team.a", n) for n in set(kept)} == set(range(TRACE_SHARDS))
    everything = Tracer("queue", "q", sample=1.0)
    emit(everything, Phase.QUEUED)
    assert everything.buffered == 1
    nothing = Tracer("queue", "q", sample=0.0)
    emit(nothing, Phase.QUEUED)
    assert nothing.buffered == 0 and not nothing.enabled
    with pytest.raises(ValueError, match="fraction"):
        Tracer("queue", "q", sample=1.5)


async def test_the_background_task_publishes_without_being_asked(bus_factory: BusFactory) -> None:
    bus = await bus_factory("tracer")
    tracer = Tracer("queue", "q", interval=0.02)
    tracer.start(bus)
    try:
        emit(tracer, Phase.POPPED)
        assert await published(tracer) == 1
        assert [t.event.phase for t in await stored(bus, 1)] == ["popped"]
    finally:
        await tracer.close()


async def test_an_idle_tracer_does_not_wake_up(
    bus_factory: BusFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With nothing buffered the background task waits for an event instead of flushing every
    interval (an idle service woke 5 times a second for nothing, issue 39)."""
    bus = await bus_factory("tracer")
    tracer = Tracer("queue", "q", interval=0.01)
    flushes = 0
    flush = tracer.flush

    async def counted() -> int:
        nonlocal flushes
        flushes += 1
        return await flush()

    monkeypatch.setattr(tracer, "flush", counted)
    tracer.start(bus)
    try:
        await asyncio.sleep(0.2)  # 20 intervals
        assert flushes == 0
        emit(tracer, Phase.POPPED)
        assert await published(tracer) == 1
        await asyncio.sleep(0.2)
        assert flushes == 1, "asleep again once the buffer is empty"
    finally:
        await tracer.close()


async def test_the_tracer_creates_the_trace_stream_when_nobody_did(bus_factory: BusFactory) -> None:
    bus = await bus_factory("tracer")
    with pytest.raises(NoTraceStream):
        await stream_state(bus)
    tracer = Tracer("binder", "b")
    tracer.start(bus)
    emit(tracer, Phase.BOUND)
    await tracer.close()
    assert len(await stored(bus, 1)) == 1
    _, last, messages = await stream_state(bus)
    assert messages == 1 and last == 1


def test_emit_never_blocks_a_full_buffer_drops_and_counts() -> None:
    before = dropped("buffer_full")
    tracer = Tracer("queue", "q", capacity=5)  # never started: nothing drains the buffer
    for i in range(8):
        emit(tracer, Phase.QUEUED, trace_id=str(i))
    assert tracer.buffered == 5 and tracer.dropped == 3
    assert dropped("buffer_full") - before == 3


async def test_events_are_dropped_not_queued_while_nats_is_away(bus_factory: BusFactory) -> None:
    bus = await bus_factory("tracer")
    tracer = Tracer("queue", "q")
    tracer.start(bus)
    await bus.close()
    before = dropped("disconnected")
    emit(tracer, Phase.QUEUED)
    emit(tracer, Phase.POPPED)
    assert await tracer.flush() == 0
    assert tracer.buffered == 0 and tracer.dropped == 2
    assert dropped("disconnected") - before == 2
    await tracer.close()


async def test_a_failing_details_builder_drops_only_its_event(bus_factory: BusFactory) -> None:
    bus = await bus_factory("tracer")
    tracer = Tracer("scheduler", "s")
    tracer.start(bus)
    before = dropped("error")

    def broken() -> dict[str, Any]:
        raise RuntimeError("boom")

    emit(tracer, Phase.SCORE, details=broken)
    emit(tracer, Phase.ASSUMED, details={"node": "n1"})
    await tracer.close()
    assert tracer.published == 1 and tracer.dropped == 1
    assert dropped("error") - before == 1
    assert [t.event.phase for t in await stored(bus, 1)] == ["assumed"]


def test_a_disabled_tracer_records_nothing() -> None:
    tracer = Tracer("queue", "q", enabled=False)
    emit(tracer, Phase.QUEUED)
    assert tracer.buffered == 0 and tracer.dropped == 0
    assert not tracing_enabled({"KSCHED_TRACE": "off"})
    assert not tracing_enabled({"KSCHED_TRACE": "0"})
    assert tracing_enabled({"KSCHED_TRACE": "1"}) and tracing_enabled({})


def test_trace_ids_are_fresh_hex() -> None:
    ids = {new_trace_id() for _ in range(100)}
    assert len(ids) == 100 and all(len(i) == 16 and int(i, 16) >= 0 for i in ids)


def test_bad_settings_are_refused() -> None:
    with pytest.raises(ValueError, match="positive"):
        Tracer("queue", "q", capacity=0)


def test_trace_subject_escapes_the_pod_name() -> None:
    assert Subjects("p").trace("team.a", "web-1") == "p.trace.team=2Ea.web-1"


def test_trace_shard_subjects_collide_with_no_pods() -> None:
    subjects = Subjects("p")
    assert subjects.trace_shard(3) == "p.trace.=shard.3"
    assert (
        subjects.trace("s", "3") != subjects.trace_shard(3)
        and subjects.trace("=shard", "3") != "p.trace.=shard.3"
    )
    assert trace_shard_of("team.a", "web-1") == trace_shard_of("team.a", "web-1") < TRACE_SHARDS
