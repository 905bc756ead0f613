"""NodeResourcesFit's hints in the queue for extended resources backed by DRA (DRAExtendedResource,
docs/dra.md): the queue keeps the DeviceClasses (from the pending-pods bootstrap, then the feed), so a
pod asking for a resource some class backs is requeued by a node that fits it without offering the
resource as allocatable, as upstream's ``isSchedulableAfterNodeChange`` with the DRA manager's
extended-resource cache requeues it; a pod asking for a resource no class backs is not."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
from ksched_queue.core import QueueCore
from ksched_queue.service import QueueService
from ksched_queue.settings import QueueSettings, build_core

from ksched.api.core import Pod
from ksched.api.kinds import convert
from ksched.api.lifecycle import PodLifecycle
from ksched.api.resource import DeviceClass
from ksched.bus.messages import DoneOutcome
from ksched.features import FeatureGates
from ksched.framework.events import ActionType, EventResource
from ksched.service.options import CommonOptions
from tests.polling import until
from tests.queue.fake_informer import FakeInformer
from tests.queue.test_service import Harness, queue_settings
from tests.queue.testing import START, FakeClock, event_msg, new_core, node, pending_of, pod

FIT = "NodeResourcesFit"
GPU = "example.com/gpu"
FPGA = "example.com/fpga"


def gpu_class(name: str = "gpu", resource: str | None = GPU) -> DeviceClass:
    spec: dict[str, Any] = {"selectors": [{"cel": {"expression": 'device.driver == "gpu.example.com"'}}]}
    if resource:
        spec["extendedResourceName"] = resource
    return convert(
        {"metadata": {"name": name, "creationTimestamp": "2026-01-01T00:00:00Z"}, "spec": spec}, DeviceClass
    )


def wants(resource: str, name: str = "p") -> Pod:
    return pod(name, requests={"cpu": "4", resource: "1"})


def unschedulable_by_fit(core: QueueCore, clock: FakeClock, p: Pod) -> None:
    core.queue.add(pending_of(p))
    entry = core.queue.pop()
    assert entry is not None
    assert core.queue.failed(entry.uid, (FIT,), ()) == PodLifecycle.UNSCHEDULABLE
    clock.advance(5)


def node_added(core: QueueCore, cpu: str) -> int:
    return core.apply_cluster_event(event_msg(EventResource.NODE, ActionType.ADD, None, node("new", cpu=cpu)))


def bootstrapped(*classes: DeviceClass) -> tuple[QueueCore, FakeClock]:
    core, clock = new_core()
    core.rebuild("e1", 0, 1, [], [msgspec.json.encode(c) for c in classes])
    return core, clock


@pytest.mark.parametrize(
    ("resource", "cpu", "moved"),
    [
        (GPU, "8", 1),  # fits once DRA serves the GPU: requeued (upstream)
        (GPU, "2", 0),  # too little cpu anyway
        (FPGA, "8", 0),  # no class backs it and the node has none
    ],
)
def test_a_new_node_requeues_a_pod_whose_resource_dra_backs(resource: str, cpu: str, moved: int) -> None:
    core, clock = bootstrapped(gpu_class())
    unschedulable_by_fit(core, clock, wants(resource))
    assert node_added(core, cpu) == moved


@pytest.mark.parametrize(("resource", "moved"), [(GPU, 1), (FPGA, 0)])
def test_a_node_update_requeues_a_pod_whose_resource_dra_backs(resource: str, moved: int) -> None:
    """Upstream ``haveAnyRequestedResourcesIncreased``: a backed resource the node does not offer
    counts as increased (``shouldDelegateResourceToDRA``), whatever else changed."""
    core, clock = bootstrapped(gpu_class())
    unschedulable_by_fit(core, clock, wants(resource))
    before, after = node("n1", cpu="8", memory="8Gi"), node("n1", cpu="8", memory="16Gi")
    event = event_msg(EventResource.NODE, ActionType.UPDATE_NODE_ALLOCATABLE, before, after)
    assert core.apply_cluster_event(event) == moved


def test_the_feed_keeps_the_classes() -> None:
    core, clock = bootstrapped()
    unschedulable_by_fit(core, clock, wants(GPU))
    assert node_added(core, "8") == 0  # no class backs it yet
    # a class that backs it: its own hint requeues the pod (isSchedulableAfterDeviceClassEvent)
    assert (
        core.apply_cluster_event(event_msg(EventResource.DEVICE_CLASS, ActionType.ADD, None, gpu_class()))
        == 1
    )
    unschedulable_by_fit(core, clock, wants(GPU, "q"))
    assert node_added(core, "8") == 1
    unschedulable_by_fit(core, clock, wants(GPU, "r"))
    assert (
        core.apply_cluster_event(event_msg(EventResource.DEVICE_CLASS, ActionType.DELETE, gpu_class(), None))
        == 0
    )
    assert node_added(core, "8") == 0  # the class is gone


def test_a_rebuild_replaces_the_classes() -> None:
    core, clock = bootstrapped(gpu_class())
    core.rebuild("e2", 0, 1, [], [])
    unschedulable_by_fit(core, clock, wants(GPU))
    assert node_added(core, "8") == 0


def test_without_the_gate_dra_backs_nothing() -> None:
    base = queue_settings()
    off = QueueSettings(
        scheduler_config=base.scheduler_config,
        common=CommonOptions(identity="q", feature_gates=FeatureGates.parse("DRAExtendedResource=false")),
    )
    clock = FakeClock(START)
    core = build_core(off, clock, on_incoming=None)
    assert core.device_classes is None
    core.rebuild("e1", 0, 1, [], [msgspec.json.encode(gpu_class())])
    unschedulable_by_fit(core, clock, wants(GPU))
    assert node_added(core, "8") == 0
    assert (
        core.apply_cluster_event(event_msg(EventResource.DEVICE_CLASS, ActionType.ADD, None, gpu_class("x")))
        == 0
    )


# --- the bootstrap over NATS ---------------------------------------------------------------------------
async def test_the_bootstrap_brings_the_classes(harness: Harness) -> None:
    informer: FakeInformer = harness.informer
    informer.device_classes = [msgspec.json.encode(gpu_class())]
    informer.list_pending(wants(GPU))
    service: QueueService = await harness.start_queue()
    (lp,) = await harness.pop()
    await harness.done(lp, DoneOutcome.UNSCHEDULABLE, unschedulable_plugins=[FIT])
    await until(lambda: service.core.state_of("uid-p") == PodLifecycle.UNSCHEDULABLE)
    await informer.event(EventResource.NODE, ActionType.ADD, None, node("small", cpu="2"))
    assert await harness.pop(wait=0.3) == []
    await informer.event(EventResource.NODE, ActionType.ADD, None, node("big", cpu="8"))
    (again,) = await harness.pop(wait=3)
    assert again.pod.uid == "uid-p" and again.attempts == 2
