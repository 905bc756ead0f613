"""What one pod created in a quiet cluster costs on the bus, counted on the real nats-server as it
passes through the real services: the informer publishes its pending-pod event in one flush, and
its assumption and its binding together in the next one (one snapshot delta and one feed batch for
both, docs/architecture.md "Batches on the assume path"), not one flush each."""

from __future__ import annotations

import asyncio

import nats
import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client import ApiClient
from nats.aio.msg import Msg

from ksched.bus.subjects import Subjects
from ksched.launcher.stack import Stack
from tests import kube
from tests.e2e.testing import eventually, pod, stack_fixture

pytestmark = pytest.mark.e2e

# no status update after the binding; the informer holds an assumption until the binding, however
# slow a loaded machine makes it (20 ms by default), so what is counted does not depend on timing
stack = stack_fixture("lone", nodes=5, pod_start_delay=3600, extra_env={"KSCHED_INFORMER_BINDING_HOLD": "30"})


async def test_a_lone_pod_is_published_in_two_flushes(stack: Stack, api: ApiClient) -> None:
    subjects = Subjects(stack.options.prefix)
    nc = await nats.connect(stack.nats_urls)
    seen: dict[str, list[bytes]] = {"feed": [], "delta": []}

    async def on_feed(msg: Msg) -> None:
        seen["feed"].append(msg.data)

    async def on_delta(msg: Msg) -> None:
        seen["delta"].append(msg.data)

    v1 = client.CoreV1Api(api)
    try:
        await nc.subscribe(f"{subjects.prefix}.feed.>", cb=on_feed)
        await nc.subscribe(subjects.snapshot_delta, cb=on_delta)
        await nc.flush()
        for i in range(3):  # each alone: the one before is bound and its flushes are out
            name = f"lone-{i}"
            await v1.create_namespaced_pod("default", kube.body(pod(name)))

            async def bound(name: str = name) -> str:
                return str((await v1.read_namespaced_pod(name, "default")).spec.node_name or "")

            await eventually(bound, timeout=30)
            await asyncio.sleep(0.5)  # well past the informer's hold for the binding (20 ms)
        for i in range(3):
            tag = f"lone-{i}".encode()
            feed = [m for m in seen["feed"] if tag in m]
            deltas = [m for m in seen["delta"] if tag in m]
            # pending, then assumed + bound: two feed batches; the assumption and the binding: one delta
            assert (len(feed), len(deltas)) == (2, 1), (i, feed, deltas)
    finally:
        await nc.close()
