"""Fuzzing the queue service's subjects over a real nats-server: ``P.queue.pop|done|renew|requeue``
(request/reply) and its ordered consumer of ``P_feed``. Whatever arrives, the queue answers at
once, never fails a handler, and still schedules: a pod the (fake) informer adds after the garbage
is popped."""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ksched.bus import endpoints as ep
from ksched.bus.codec import Message, encode
from ksched.bus.endpoints import RequestEndpoint
from ksched.bus.messages import (
    ClusterEventMsg,
    DoneOutcome,
    DoneRequest,
    LeaseRenewRequest,
    PendingPodAction,
    PendingPodEvent,
    PopRequest,
    QueueListRequest,
    RequeueRequest,
)
from ksched.bus.subjects import SubjectKind
from ksched.framework.events import ActionType, EventResource
from tests.fixtures.nats import BusFactory
from tests.fuzz.bus_checks import Counts, check_request, crashes
from tests.fuzz.payloads import payloads
from tests.fuzz.profiles import fuzz_settings
from tests.ha.test_services import eventually
from tests.queue.fake_informer import FakeInformer
from tests.queue.test_service import Harness
from tests.queue.testing import event_msg, node, pending_event, pod

_fresh = itertools.count()


@pytest.fixture
async def queue(bus_factory: BusFactory) -> AsyncIterator[Harness]:
    harness = Harness(bus_factory)
    await harness.setup()
    harness.informer.list_pending(pod("seed"))
    await harness.start_queue(max_pop_wait=0.2, bootstrap_retry=0.05)
    yield harness
    await harness.close()


async def schedules_a_new_pod(harness: Harness) -> None:
    """The informer adds a pod; the queue hands it out (after whatever else it holds)."""
    name = f"fresh-{next(_fresh)}"
    await harness.informer.pod(PendingPodAction.ADD, pod(name))
    popped: set[str] = set()

    async def got_it() -> bool:
        popped.update(lp.pod.name for lp in await harness.pop(n=256, wait=0.1, replica="liveness"))
        return name in popped

    await eventually(got_it, timeout=15, what=f"pod {name} popped after the fuzzed messages")


def endpoints(harness: Harness) -> dict[str, tuple[RequestEndpoint[Any, Any], Message]]:
    """Each request subject of the queue, with a valid request to mutate."""
    return {
        "pop": (
            ep.QUEUE_POP,
            PopRequest(
                scheduler_id="fuzz", scheduler_names=["default-scheduler"], max_pods=2, wait_seconds=0.1
            ),
        ),
        "done": (
            ep.QUEUE_DONE,
            DoneRequest(
                lease_id="lease-1",
                scheduler_id="fuzz",
                pod_uid="uid-seed",
                namespace="default",
                name="seed",
                outcome=DoneOutcome.UNSCHEDULABLE,
                unschedulable_plugins=["NodeResourcesFit"],
                nominated_node_name="n1",
            ),
        ),
        "renew": (
            ep.QUEUE_RENEW,
            LeaseRenewRequest(scheduler_id="fuzz", lease_ids=["lease-1", "lease-2"]),
        ),
        "requeue": (
            ep.QUEUE_REQUEUE,
            RequeueRequest(
                pod_uid="uid-seed", namespace="default", name="seed", reason="bind failed", sender="binder"
            ),
        ),
        "list": (
            ep.QUEUE_LIST,
            QueueListRequest(requester="fuzz", name_contains="see", limit=10),
        ),
    }


@fuzz_settings(40)
@given(data=st.data(), which=st.sampled_from(["pop", "done", "renew", "requeue", "list"]))
async def test_request_subjects(
    queue: Harness, caplog: pytest.LogCaptureFixture, data: st.DataObject, which: str
) -> None:
    caplog.clear()
    endpoint, valid = endpoints(queue)[which]
    payload = data.draw(payloads(valid), label="payload")
    await check_request(queue.replica, endpoint, payload)
    await check_request(queue.replica, endpoint, encode(valid))
    assert crashes(caplog) == []


def feed_samples(informer: FakeInformer) -> list[tuple[str, Message]]:
    """Valid feed messages of the informer's current epoch, with their subjects."""
    subjects = informer.bus.subjects
    add = pending_event(PendingPodAction.ADD, pod("feed-sample", priority=5), epoch=informer.epoch)
    event = event_msg(
        EventResource.NODE,
        ActionType.ADD,
        new=node("n1"),
        epoch=informer.epoch,
        generation=informer.generation,
    )
    assert isinstance(event, ClusterEventMsg) and isinstance(add, PendingPodEvent)
    return [
        (subjects.pending_pods("default-scheduler"), add),
        (subjects.cluster_events(EventResource.NODE), event),
    ]


@fuzz_settings(25)
@given(data=st.data(), count=st.integers(1, 3))
async def test_feed_stream(
    queue: Harness, caplog: pytest.LogCaptureFixture, data: st.DataObject, count: int
) -> None:
    caplog.clear()
    informer = queue.informer
    before = Counts.of(SubjectKind.FEED)
    for _ in range(count):
        subject, valid = data.draw(st.sampled_from(feed_samples(informer)), label="subject")
        payload = data.draw(payloads(valid), label="payload")
        ack = await informer.bus.js.publish(subject, payload)
        informer.stream_seq = ack.seq
    await schedules_a_new_pod(queue)
    assert Counts.of(SubjectKind.FEED).errors == before.errors
    assert crashes(caplog) == []
