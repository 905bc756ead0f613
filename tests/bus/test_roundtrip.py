"""Every message type through a real nats-server: publish/subscribe on its own subject, and request/reply."""

from __future__ import annotations

import asyncio

import pytest
from nats.aio.msg import Msg

from ksched.bus.connect import TRACE_ID_HEADER, Bus
from ksched.bus.endpoints import PublishEndpoint, RequestEndpoint
from ksched.bus.messages import (
    ALL_MESSAGE_TYPES,
    AssumeRequest,
    BootstrapChunk,
    ClusterEventMsg,
    DoneRequest,
    ForgetRequest,
    Heartbeat,
    LeaseRenewRequest,
    Message,
    PendingPodEvent,
    PendingPodsRequest,
    PermitDecision,
    Placement,
    PopRequest,
    RequeueRequest,
    SnapshotBootstrapRequest,
    SnapshotDelta,
    TraceEvent,
    UnreserveRequest,
)
from ksched.bus.subjects import Subjects
from tests.bus.samples import REQUEST_REPLY_PAIRS, SAMPLES
from tests.fixtures.nats import BusFactory


def subject_for(s: Subjects, msg: Message) -> str:
    """The subject docs/bus.md assigns to the message (replies and chunks go to an inbox)."""
    match msg:
        case PendingPodEvent():
            return s.pending_pods(msg.pod.scheduler_name)
        case ClusterEventMsg():
            return s.cluster_events(msg.resource)
        case SnapshotDelta():
            return s.snapshot_delta
        case SnapshotBootstrapRequest():
            return s.snapshot_bootstrap
        case PendingPodsRequest():
            return s.pending_bootstrap
        case PopRequest():
            return s.queue_pop
        case DoneRequest():
            return s.queue_done
        case LeaseRenewRequest():
            return s.queue_renew
        case RequeueRequest():
            return s.queue_requeue
        case AssumeRequest():
            return s.assume
        case ForgetRequest():
            return s.forget
        case Placement():
            return s.placements
        case PermitDecision():
            return s.permit(msg.pod_uid)
        case UnreserveRequest():
            return s.unreserve(msg.scheduler_id)
        case TraceEvent():
            return s.trace(msg.namespace, msg.name)
        case Heartbeat():
            return s.health(msg.service, msg.instance)
        case BootstrapChunk():
            return f"{s.inbox_prefix}.chunks"
        case _:
            return f"{s.inbox_prefix}.reply"


@pytest.mark.parametrize("msg_type", ALL_MESSAGE_TYPES, ids=lambda t: t.__name__)
async def test_publish_subscribe(bus: Bus, msg_type: type[Message]) -> None:
    sample = SAMPLES[msg_type]
    subject = subject_for(bus.subjects, sample)
    received: asyncio.Future[tuple[Message, Msg]] = asyncio.get_running_loop().create_future()

    async def handle(msg: Message, raw: Msg) -> None:
        received.set_result((msg, raw))

    endpoint = PublishEndpoint((msg_type,), lambda s: subject, "test", "roundtrip")
    await bus.subscribe(endpoint, handle)
    await bus.publish(endpoint, sample, trace_id="trace-7")
    msg, raw = await asyncio.wait_for(received, 5)
    assert type(msg) is msg_type
    assert msg == sample
    assert raw.subject == subject
    assert raw.headers == {TRACE_ID_HEADER: "trace-7"}


@pytest.mark.parametrize(("request_type", "reply_type"), REQUEST_REPLY_PAIRS, ids=lambda t: t.__name__)
async def test_request_reply(
    bus_factory: BusFactory, request_type: type[Message], reply_type: type[Message]
) -> None:
    responder, requester = await bus_factory(name="responder"), await bus_factory(name="requester")
    subject = subject_for(requester.subjects, SAMPLES[request_type])
    seen: list[Message] = []

    async def answer(msg: Message, raw: Msg) -> Message:
        seen.append(msg)
        return SAMPLES[reply_type]

    endpoint = RequestEndpoint(request_type, reply_type, lambda s: subject, "test", "roundtrip")
    await responder.subscribe(endpoint, answer)
    await responder.nc.flush()
    reply = await requester.request(endpoint, SAMPLES[request_type], timeout=5)
    assert seen == [SAMPLES[request_type]]
    assert reply == SAMPLES[reply_type]
