"""Headers count against the server's payload limit: a message they push over it is refused
before it is sent, and the connection stays up (the server would close it)."""

from __future__ import annotations

import msgspec
import nats.errors
import pytest
from nats.aio.msg import Msg

from ksched.bus import endpoints, jetstream, streams
from ksched.bus.bootstrap import deliver_problem
from ksched.bus.connect import Bus
from ksched.bus.limits import header_size
from ksched.bus.messages import (
    Ack,
    PermitDecision,
    Placement,
    PopReply,
    PopRequest,
    RequeueRequest,
    UnreserveRequest,
)
from ksched.bus.rpc import RequestError
from tests.bus.samples import sample
from tests.bus.testing import PING

BIG = "x" * 600_000


def test_header_size_is_what_nats_py_sends() -> None:
    assert header_size(None) == header_size({}) == 0
    assert header_size({"Ksched-Trace-Id": "abc"}) == len(b"NATS/1.0\r\nKsched-Trace-Id: abc\r\n\r\n")


async def test_oversized_headers_are_refused_and_the_connection_survives(bus: Bus) -> None:
    """Found by tests/fuzz: a fuzzed lease with a huge trace id made the scheduler send it as a
    payload field and as a header; the server closed its connection."""

    async def pop(msg: PopRequest, raw: Msg) -> PopReply:
        return PopReply()

    await bus.subscribe(endpoints.QUEUE_POP, pop)
    request = RequeueRequest(pod_uid="u", namespace="n", name="p", reason=BIG)
    decision = msgspec.structs.replace(sample(PermitDecision), message=BIG)
    with pytest.raises(nats.errors.MaxPayloadError):
        await bus.publish(endpoints.PERMIT.to("u"), decision, trace_id=BIG)
    with pytest.raises(nats.errors.MaxPayloadError):
        await bus.request(endpoints.QUEUE_REQUEUE, request, trace_id=BIG)
    await jetstream.ensure_stream(bus, streams.placement_stream(bus.subjects))
    placement = msgspec.structs.replace(sample(Placement), trace_id=BIG)
    with pytest.raises(nats.errors.MaxPayloadError):
        await jetstream.publish(bus, endpoints.PLACEMENTS, placement, msg_id=BIG)
    await bus.nc.flush()
    assert bus.ready
    reply = await bus.request(endpoints.QUEUE_POP, PopRequest(scheduler_id="s", scheduler_names=[]))
    assert reply == PopReply()


async def test_a_subject_too_long_for_the_server_is_refused_and_the_connection_survives(bus: Bus) -> None:
    """Found by tests/fuzz: a placement's huge scheduler id became the binder's unreserve subject,
    longer than nats-server's control line (4 KiB); the server closed the connection."""
    with pytest.raises(nats.errors.BadSubjectError):
        await bus.publish(endpoints.PERMIT.to("s" * 5000), sample(PermitDecision))
    with pytest.raises(nats.errors.BadSubjectError):
        await bus.request(endpoints.UNRESERVE.to("s" * 5000), sample(UnreserveRequest))
    assert deliver_problem(bus.subjects, f"{bus.subjects.inbox_prefix}.{'x' * 5000}")
    assert not deliver_problem(bus.subjects, bus.nc.new_inbox())
    await bus.nc.flush()
    assert bus.ready


async def test_a_reply_too_large_to_send_is_an_error_reply(bus: Bus) -> None:
    async def huge(msg: Ack, raw: Msg) -> Ack:
        return Ack(reason="x" * 2_000_000)

    await bus.subscribe(PING, huge)
    with pytest.raises(RequestError, match=r"\(500\): the reply is too large to send"):
        await bus.request(PING, Ack())
