"""Headers count against the server's payload limit: a message they push over it is refused
before it is sent, and the connection stays up (the server would close it)."""

from __future__ import annotations

import nats.errors
import pytest
from nats.aio.msg import Msg

from ksched.bus import jetstream, streams
from ksched.bus.connect import Bus
from ksched.bus.limits import header_size
from ksched.bus.messages import Ack, PopReply, PopRequest, RequeueRequest

BIG = "x" * 600_000


def test_header_size_is_what_nats_py_sends() -> None:
    assert header_size(None) == header_size({}) == 0
    assert header_size({"Ksched-Trace-Id": "abc"}) == len(b"NATS/1.0\r\nKsched-Trace-Id: abc\r\n\r\n")


async def test_oversized_headers_are_refused_and_the_connection_survives(bus: Bus) -> None:
    """Found by tests/fuzz: a fuzzed lease with a huge trace id made the scheduler send it as a
    payload field and as a header; the server closed its connection."""

    async def pop(msg: PopRequest, raw: Msg) -> PopReply:
        return PopReply()

    await bus.subscribe(bus.subjects.queue_pop, PopRequest, pop)
    request = RequeueRequest(pod_uid="u", namespace="n", name="p", reason=BIG)
    with pytest.raises(nats.errors.MaxPayloadError):
        await bus.publish(bus.subjects.queue_requeue, request, trace_id=BIG)
    with pytest.raises(nats.errors.MaxPayloadError):
        await bus.request(bus.subjects.queue_requeue, request, Ack, trace_id=BIG)
    await jetstream.ensure_stream(bus, streams.placement_stream(bus.subjects))
    with pytest.raises(nats.errors.MaxPayloadError):
        await jetstream.publish(bus, bus.subjects.placements, request, msg_id=BIG)
    await bus.nc.flush()
    assert bus.ready
    reply = await bus.request(
        bus.subjects.queue_pop, PopRequest(scheduler_id="s", scheduler_names=[]), PopReply
    )
    assert reply == PopReply()
