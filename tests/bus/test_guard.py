"""Bad messages are logged once, counted, answered, and never stop a subscriber."""

from __future__ import annotations

import asyncio
import logging
import time
from typing import TypeVar

import msgspec
import pytest
from nats.aio.msg import Msg
from prometheus_client import REGISTRY

from ksched.bus import endpoints
from ksched.bus.codec import BadMessage, Message, encode
from ksched.bus.connect import Bus
from ksched.bus.endpoints import RequestEndpoint
from ksched.bus.messages import Ack, DoneRequest, PopReply, PopRequest
from ksched.bus.rpc import RequestError
from ksched.bus.subjects import SubjectKind
from tests.bus.samples import sample

Q = TypeVar("Q", bound=Message)
R = TypeVar("R", bound=Message)


def counter(name: str, kind: SubjectKind) -> float:
    return REGISTRY.get_sample_value(name, {"subject_kind": str(kind)}) or 0.0


def foreign(request: type[Q], reply: type[R]) -> RequestEndpoint[Q, R]:
    """``P.queue.pop`` as a sender or responder of other types sees it (another build, a bug)."""
    return RequestEndpoint(request, reply, lambda s: s.queue_pop, SubjectKind.POP, "queue_pop")


def bad_count(kind: SubjectKind) -> float:
    return counter("ksched_bus_bad_messages_total", kind)


async def test_bad_messages_are_dropped_counted_logged_and_the_handler_survives(
    bus: Bus, caplog: pytest.LogCaptureFixture
) -> None:
    subject = bus.subjects.queue_done
    handled: asyncio.Queue[DoneRequest] = asyncio.Queue()

    async def handle(msg: DoneRequest, raw: Msg) -> None:
        await handled.put(msg)

    await bus.subscribe(endpoints.QUEUE_DONE, handle)
    before = bad_count(SubjectKind.DONE)
    newer = msgspec.msgpack.decode(encode(sample(DoneRequest)))
    newer["v"] = 9
    with caplog.at_level(logging.WARNING, logger="ksched.bus"):
        await bus.nc.publish(subject, b"\x93not msgpack at all")
        await bus.nc.publish(subject, msgspec.msgpack.encode(newer))
        await bus.nc.publish(subject, encode(Ack()))
        await bus.nc.publish(subject, encode(sample(DoneRequest)))
        assert await asyncio.wait_for(handled.get(), 5) == sample(DoneRequest)
    assert handled.empty()
    assert bad_count(SubjectKind.DONE) == before + 3
    lines = [r.getMessage() for r in caplog.records if "dropped bad message" in r.getMessage()]
    assert len(lines) == 3
    assert all(subject in line and "\n" not in line for line in lines)
    assert "DoneRequest version 9 is not readable here" in lines[1]
    assert "expected DoneRequest, got Ack" in lines[2]


async def test_a_bad_request_gets_an_error_reply_at_once(bus: Bus) -> None:
    async def pop(msg: PopRequest, raw: Msg) -> PopReply:
        return PopReply()

    await bus.subscribe(endpoints.QUEUE_POP, pop)
    before = bad_count(SubjectKind.POP)
    started = time.monotonic()
    with pytest.raises(RequestError, match=r"\(400\): expected PopRequest, got Ack") as info:
        await bus.request(foreign(Ack, PopReply), Ack(), timeout=5)
    assert time.monotonic() - started < 1
    assert info.value.code == 400
    assert bad_count(SubjectKind.POP) == before + 1
    good = await bus.request(endpoints.QUEUE_POP, sample(PopRequest), timeout=5)
    assert good == PopReply()


async def test_a_failing_handler_is_logged_counted_and_answered(
    bus: Bus, caplog: pytest.LogCaptureFixture
) -> None:
    calls = 0

    async def flaky(msg: PopRequest, raw: Msg) -> PopReply:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise RuntimeError("queue exploded\nsecond line")
        return PopReply()

    await bus.subscribe(endpoints.QUEUE_POP, flaky)
    before = counter("ksched_bus_handler_errors_total", SubjectKind.POP)
    with caplog.at_level(logging.ERROR, logger="ksched.bus"), pytest.raises(RequestError) as info:
        await bus.request(endpoints.QUEUE_POP, sample(PopRequest), timeout=5)
    assert info.value.code == 500
    assert info.value.description == "RuntimeError: queue exploded second line"
    assert counter("ksched_bus_handler_errors_total", SubjectKind.POP) == before + 1
    assert any("handler for" in r.getMessage() and r.exc_info for r in caplog.records)
    assert await bus.request(endpoints.QUEUE_POP, sample(PopRequest), timeout=5) == PopReply()


async def test_an_undecodable_reply_is_reported_and_raised(bus: Bus) -> None:
    async def wrong(msg: PopRequest, raw: Msg) -> Ack:
        return Ack()

    await bus.subscribe(foreign(PopRequest, Ack), wrong)
    before = bad_count(SubjectKind.REPLY)
    with pytest.raises(BadMessage, match="expected PopReply, got Ack"):
        await bus.request(endpoints.QUEUE_POP, sample(PopRequest), timeout=5)
    assert bad_count(SubjectKind.REPLY) == before + 1
