"""When the informer's flush loop publishes: a pod that becomes pending after a quiet spell at once,
changes that keep coming at most every ``flush_interval`` after the flush before, all of them in one
feed batch; a change no scheduler waits for gathers what follows it for ``flush_interval``, unless a
pod becomes pending meanwhile."""

from __future__ import annotations

import asyncio
import time

import msgspec
from ksched_informer.publisher import Publisher
from nats.aio.msg import Msg

from ksched.aio import cancel_and_wait
from ksched.api.core import Pod
from ksched.bus import endpoints, jetstream
from ksched.bus.connect import Bus
from ksched.bus.messages import ClusterEventMsg, FeedBatch, PendingPodAction, PendingPodEvent
from ksched.cache.ledger import ClusterCache
from tests.polling import until


def pod(i: int) -> Pod:
    return msgspec.convert(
        {
            "metadata": {"name": f"p{i}", "namespace": "ns", "uid": f"u{i}", "resourceVersion": "1"},
            "spec": {"schedulerName": "default-scheduler", "containers": [{"name": "c"}]},
        },
        Pod,
    )


async def test_a_lone_change_goes_at_once_and_changes_that_keep_coming_wait_for_the_interval(
    bus: Bus,
) -> None:
    await jetstream.ensure_streams(bus)
    received: list[tuple[float, list[str]]] = []

    async def on_feed(message: FeedBatch | PendingPodEvent | ClusterEventMsg, _raw: Msg) -> None:
        assert isinstance(message, FeedBatch)
        names = [e.pod.name for e in message.events if isinstance(e, PendingPodEvent)]
        received.append((time.monotonic(), names))

    sub = await jetstream.subscribe_ordered(
        bus, endpoints.FEED, on_feed, stream=bus.subjects.feed_stream, new_only=True
    )
    interval = 1.0  # long, so that "at once" and "after the interval" differ on a loaded machine
    publisher = Publisher(ClusterCache(), bus.subjects, "epoch", lambda: True)
    publisher.bus = bus
    loop = asyncio.create_task(publisher.flush_loop(interval))
    try:
        changed = time.monotonic()
        publisher.emit_pending(PendingPodAction.ADD, pod(0))
        await until(lambda: len(received) == 1)
        assert received[0][1] == ["p0"]
        assert received[0][0] - changed < interval / 2  # no wait after a quiet spell
        await until(lambda: publisher.last_flush > float("-inf"))  # its ack in too

        # right after that flush: the next changes wait until the interval has passed, then go together
        flushed = publisher.last_flush
        publisher.emit_pending(PendingPodAction.ADD, pod(1))
        await asyncio.sleep(0.05)
        publisher.emit_pending(PendingPodAction.ADD, pod(2))
        await until(lambda: len(received) == 2, timeout=10)
        assert received[1][1] == ["p1", "p2"]
        await until(lambda: publisher.last_flush > flushed)
        assert publisher.last_flush - flushed >= interval

        # after a quiet spell, a pod placed (no scheduler waits for it) waits for what follows
        await asyncio.sleep(interval)
        changed = time.monotonic()
        publisher.emit_pending(PendingPodAction.DELETE, pod(0), "bound")
        publisher.emit_pending(PendingPodAction.DELETE, pod(1), "bound")
        await asyncio.sleep(0.05)
        publisher.emit_pending(PendingPodAction.DELETE, pod(2), "bound")
        await until(lambda: len(received) == 3, timeout=10)
        assert received[2][1] == ["p0", "p1", "p2"]
        assert received[2][0] - changed >= interval

        # ... unless a pod becomes pending meanwhile: then all go at once
        await asyncio.sleep(interval)
        changed = time.monotonic()
        publisher.emit_pending(PendingPodAction.DELETE, pod(3), "deleted")
        await asyncio.sleep(0.05)
        publisher.emit_pending(PendingPodAction.ADD, pod(4))
        await until(lambda: len(received) == 4, timeout=10)
        assert received[3][1] == ["p3", "p4"]
        assert received[3][0] - changed < interval / 2
    finally:
        await cancel_and_wait(loop)
        await sub.unsubscribe()
