"""The informer service against kubesim (HTTP) and a real nats-server: a replica in sync,
the pending feed, and optimistic assume with exactly one winner for the last slot."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import msgspec
import pytest
from ksched_informer.ledger import LEDGER_ENTRY
from ksched_informer.service import InformerService
from ksched_kubesim import KubeSim

from ksched.bus import endpoints
from ksched.bus.bootstrap import fetch_bootstrap
from ksched.bus.connect import Bus
from ksched.bus.jetstream import TypedKV
from ksched.bus.messages import (
    AssumeBatchRequest,
    AssumeRequest,
    PendingPod,
    PendingPodsRequest,
    Placement,
    PlacementBatch,
    decode,
)
from ksched.bus.streams import ASSUMED_LEDGER
from ksched.cache.follower import ReplicaFollower
from ksched.config import default_config
from tests.informer.conftest import informer_options
from tests.polling import until


def node(name: str, cpu: str = "2", zone: str = "z1") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {"kubernetes.io/hostname": name, "topology.kubernetes.io/zone": zone},
        },
        "status": {
            "capacity": {"cpu": cpu, "memory": "8Gi", "pods": "110"},
            "allocatable": {"cpu": cpu, "memory": "8Gi", "pods": "110"},
        },
    }


def pod(
    name: str, cpu: str = "100m", node_name: str = "", labels: dict[str, str] | None = None, **extra: Any
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "containers": [{"name": "c", "image": "pause", "resources": {"requests": {"cpu": cpu}}}],
        **extra,
    }
    if node_name:
        spec["nodeName"] = node_name
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "labels": labels or {}},
        "spec": spec,
    }


def assume_request(
    obj: dict[str, Any], node: str, informer: InformerService, generation: int, scheduler: str = "s1"
) -> AssumeRequest:
    """A replica's request to assume pod ``obj`` (as kubesim returned it) on ``node``."""
    meta = obj["metadata"]
    return AssumeRequest(
        placement=Placement(
            placement_id=f"{meta['uid']}:1",
            pod_uid=meta["uid"],
            namespace="default",
            name=meta["name"],
            node_name=node,
            scheduler_id=scheduler,
            profile="default-scheduler",
            epoch=informer.epoch,
            snapshot_generation=generation,
            resource_version=meta["resourceVersion"],
            pod=msgspec.json.encode(obj),
        )
    )


@pytest.fixture
async def informer(
    sim: tuple[KubeSim, Path], nats_url: str, bus_prefix: str, bus_factory: Any
) -> AsyncIterator[InformerService]:
    """The informer stops before ``bus_factory`` deletes the test's streams (it needs them to stop)."""
    _, kubeconfig = sim
    options = informer_options(nats_url, kubeconfig, bus_prefix, "informer-test")
    service = InformerService(options, default_config())
    await service.start()
    try:
        await until(lambda: service.ready)
        yield service
    finally:
        await service.stop()


async def test_replica_follows_the_cluster(
    sim: tuple[KubeSim, Path], informer: InformerService, bus_factory: Any
) -> None:
    kube, _ = sim
    kube.create(node("n1"))
    kube.create(pod("bound-1", node_name="n1"))
    await until(lambda: "n1" in informer.cache.snapshot.node_map)
    bus: Bus = await bus_factory("replica")
    follower = ReplicaFollower(bus, "r1")
    task = asyncio.create_task(follower.run())
    try:
        await asyncio.wait_for(follower.synced.wait(), 10)
        snap = follower.replica.snapshot
        assert "n1" in snap.node_map
        kube.create(node("n2", zone="z2"))
        kube.create(pod("bound-2", node_name="n2"))
        kube.create(
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team", "labels": {"a": "b"}}}
        )
        await until(lambda: "n2" in snap.node_map and len(snap.node_map["n2"].pods) == 1)
        await until(lambda: "team" in snap.objects.namespaces)
        kube.delete("Node", "n1")
        await until(lambda: "n1" not in snap.node_map)
        await until(lambda: follower.replica.generation == informer.cache.generation)
        assert sorted(snap.node_map) == sorted(informer.cache.snapshot.node_map)
        assert sorted(snap.pod_locations) == sorted(informer.cache.snapshot.pod_locations)
    finally:
        task.cancel()


async def test_a_replica_wakes_who_waits_for_a_generation_when_its_delta_arrives(
    sim: tuple[KubeSim, Path], informer: InformerService, bus_factory: Any
) -> None:
    """``ReplicaFollower.reached``: woken by the delta that brings the generation (no polling), at
    once when the replica has it already, False after its timeout when it never comes."""
    kube, _ = sim
    kube.create(node("n1"))
    await until(lambda: "n1" in informer.cache.snapshot.node_map)
    bus: Bus = await bus_factory("replica-wait")
    follower = ReplicaFollower(bus, "r-wait")
    task = asyncio.create_task(follower.run())
    try:
        await asyncio.wait_for(follower.synced.wait(), 10)
        await until(lambda: follower.replica.generation == informer.cache.generation)
        epoch, now = follower.replica.epoch, follower.replica.generation
        assert await follower.reached(epoch, now, timeout=0)
        assert not await follower.reached(epoch, now + 1, timeout=0.05)
        waiting = asyncio.create_task(follower.reached(epoch, now + 1, timeout=10))
        await asyncio.sleep(0.05)
        assert not waiting.done()
        kube.create(node("n2"))
        assert await asyncio.wait_for(waiting, 10)
        assert follower.replica.generation > now and "n2" in follower.replica.snapshot.node_map
    finally:
        task.cancel()


async def test_pending_pods_and_assume_conflict(
    sim: tuple[KubeSim, Path], informer: InformerService, bus_factory: Any
) -> None:
    kube, _ = sim
    kube.create(node("tight", cpu="1"))
    a = kube.create(pod("a", cpu="600m"))
    b = kube.create(pod("b", cpu="600m"))
    await until(lambda: len(informer.cache.pending) == 2 and "tight" in informer.cache.snapshot.node_map)
    bus: Bus = await bus_factory("scheduler")
    _, items = await fetch_bootstrap(
        bus,
        endpoints.PENDING_BOOTSTRAP,
        lambda inbox: PendingPodsRequest(requester="t", deliver=inbox),
        PendingPod,
    )
    assert sorted(p.name for p in items) == ["a", "b"]
    generation = informer.cache.generation

    replies = await asyncio.gather(
        bus.request(endpoints.ASSUME, assume_request(a, "tight", informer, generation, "s1")),
        bus.request(endpoints.ASSUME, assume_request(b, "tight", informer, generation, "s2")),
    )
    assert sorted(r.accepted for r in replies) == [False, True]
    loser = next(r for r in replies if not r.accepted)
    assert loser.code == "DoesNotFit" and loser.reason == "NodeResourcesFit: Insufficient cpu"
    assert loser.generation == informer.cache.generation  # the replica retries once it has this
    again = await bus.request(endpoints.ASSUME, assume_request(a, "tight", informer, generation, "s3"))
    assert not again.accepted


async def test_a_pod_is_refused_in_the_zone_of_a_pod_whose_anti_affinity_it_matches(
    sim: tuple[KubeSim, Path], informer: InformerService, bus_factory: Any
) -> None:
    """Issue 26's case over the bus: two replicas decided on one snapshot, A (required anti-affinity
    against app=x in its zone) on n1 and B (app=x, no constraints) on n2 of the same zone."""
    kube, _ = sim
    kube.create(node("n1", zone="a"))
    kube.create(node("n2", zone="a"))
    term = {"labelSelector": {"matchLabels": {"app": "x"}}, "topologyKey": "topology.kubernetes.io/zone"}
    anti = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
    a = kube.create(pod("a", affinity=anti))
    b = kube.create(pod("b", labels={"app": "x"}))
    await until(lambda: len(informer.cache.pending) == 2 and len(informer.cache.snapshot.nodes) == 2)
    bus: Bus = await bus_factory("scheduler")
    generation = informer.cache.generation
    first = await bus.request(endpoints.ASSUME, assume_request(a, "n1", informer, generation))
    second = await bus.request(endpoints.ASSUME, assume_request(b, "n2", informer, generation))
    assert first.accepted
    assert (second.accepted, second.code) == (False, "DoesNotFit")
    assert second.reason == "InterPodAffinity: node(s) didn't satisfy existing pods anti-affinity rules"


async def test_a_burst_larger_than_one_delta_reaches_the_replica(
    sim: tuple[KubeSim, Path], informer: InformerService, bus_factory: Any
) -> None:
    kube, _ = sim
    bus: Bus = await bus_factory("replica-burst")
    follower = ReplicaFollower(bus, "r-burst")
    task = asyncio.create_task(follower.run())
    try:
        await asyncio.wait_for(follower.synced.wait(), 10)
        for i in range(250):  # several MAX_OPS_PER_DELTA-sized deltas in one flush
            kube.create(node(f"burst-{i:03d}"))
        await until(lambda: len(follower.replica.snapshot.nodes) == 250)
        await until(lambda: follower.replica.generation == informer.cache.generation)
        assert follower.bootstraps == 1
    finally:
        task.cancel()


async def test_stop_gives_up_on_changes_nats_will_not_store(
    informer: InformerService,
    bus_factory: Any,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A stopping informer publishes its last changes only for a bounded time (here the streams are
    gone, so JetStream never answers): stop() returns instead of retrying for ever."""
    import ksched_informer.service as informer_service

    from ksched.framework.testing import make_node
    from tests.fixtures.nats import _delete_streams

    monkeypatch.setattr(informer_service, "FINAL_FLUSH_TIMEOUT", 0.5)
    await informer.tasks.cancel_all()  # no flush loop: the change below waits for the final flush
    await _delete_streams(await bus_factory("deleter"))
    await informer.on_node_event("ADDED", make_node("late-node", allocatable={"cpu": "1", "pods": "10"}))
    loop = asyncio.get_running_loop()
    started = loop.time()
    await informer.stop()
    assert loop.time() - started < 5
    assert "last snapshot changes not published" in caplog.text


async def test_dra_objects_reach_the_replica(
    sim: tuple[KubeSim, Path], informer: InformerService, bus_factory: Any
) -> None:
    """DeviceClasses, ResourceSlices, ResourceClaims and templates are list-watched into the snapshot,
    and a claim's status update travels as a delta."""
    kube, _ = sim
    resource = {"apiVersion": "resource.k8s.io/v1"}
    kube.create(
        resource
        | {
            "kind": "DeviceClass",
            "metadata": {"name": "gpu"},
            "spec": {"selectors": [{"cel": {"expression": 'device.driver == "gpu.example.com"'}}]},
        }
    )
    kube.create(
        resource
        | {
            "kind": "ResourceSlice",
            "metadata": {"name": "n1-gpu"},
            "spec": {
                "driver": "gpu.example.com",
                "nodeName": "n1",
                "pool": {"name": "n1", "generation": 1, "resourceSliceCount": 1},
                "devices": [{"name": "gpu-0"}],
            },
        }
    )
    request = {"name": "gpu", "exactly": {"deviceClassName": "gpu"}}
    kube.create(
        resource
        | {
            "kind": "ResourceClaimTemplate",
            "metadata": {"name": "one-gpu", "namespace": "default"},
            "spec": {"spec": {"devices": {"requests": [request]}}},
        }
    )
    kube.create(
        resource
        | {
            "kind": "ResourceClaim",
            "metadata": {"name": "c1", "namespace": "default"},
            "spec": {"devices": {"requests": [request]}},
        }
    )
    bus: Bus = await bus_factory("replica-dra")
    follower = ReplicaFollower(bus, "r-dra")
    task = asyncio.create_task(follower.run())
    try:
        await asyncio.wait_for(follower.synced.wait(), 10)
        objects = follower.replica.snapshot.objects
        await until(lambda: "default/c1" in objects.resource_claims)
        assert "gpu" in objects.device_classes
        assert objects.resource_slices["n1-gpu"].spec.devices[0].name == "gpu-0"
        allocation = {
            "devices": {
                "results": [{"request": "gpu", "driver": "gpu.example.com", "pool": "n1", "device": "gpu-0"}]
            }
        }
        claim = kube.get("ResourceClaim", "c1", "default", api_version="resource.k8s.io/v1")
        assert claim is not None
        kube.load(claim | {"status": {"allocation": allocation}})
        await until(lambda: objects.resource_claims["default/c1"].status.allocation is not None)
        kube.delete("ResourceSlice", "n1-gpu", api_version="resource.k8s.io/v1")
        await until(lambda: "n1-gpu" not in objects.resource_slices)
    finally:
        task.cancel()


async def test_a_batch_is_checked_in_order_and_recorded_as_one(
    sim: tuple[KubeSim, Path], informer: InformerService, bus_factory: Any
) -> None:
    """One AssumeBatchRequest: the second placement conflicts with the first (decided by another
    replica on the same snapshot) and gets the answer a single assume gives; the accepted ones are
    one ledger entry and one message to the binders."""
    kube, _ = sim
    kube.create(node("tight", cpu="1"))
    kube.create(node("roomy", cpu="8"))
    a, b, c = (kube.create(pod(name, cpu=cpu)) for name, cpu in (("a", "600m"), ("b", "600m"), ("c", "100m")))
    await until(lambda: len(informer.cache.pending) == 3 and len(informer.cache.snapshot.nodes) == 2)
    bus: Bus = await bus_factory("scheduler-batch")
    generation = informer.cache.generation
    items = [
        msgspec.structs.replace(assume_request(obj, where, informer, generation), session=session)
        for obj, where, session in ((a, "tight", "s1"), (b, "tight", "s2"), (c, "roomy", "s3"))
    ]
    batch = await bus.request(endpoints.ASSUME_BATCH, AssumeBatchRequest(items=items))
    assert [(r.accepted, r.code, r.reason) for r in batch.replies] == [
        (True, "", ""),
        (False, "DoesNotFit", "NodeResourcesFit: Insufficient cpu"),
        (True, "", ""),
    ]
    single = await bus.request(endpoints.ASSUME, msgspec.structs.replace(items[1], session="s4"))
    assert (single.accepted, single.code, single.reason) == (
        False,
        batch.replies[1].code,
        batch.replies[1].reason,
    )

    uids = [a["metadata"]["uid"], c["metadata"]["uid"]]
    assert informer.kv is not None
    keys = await informer.kv.keys()
    assert len(keys) == 1
    entry = await informer.kv.get(keys[0])
    assert entry is not None and isinstance(entry.value, PlacementBatch)
    assert [p.pod_uid for p in entry.value.placements] == uids
    assert not any(p.pod for p in entry.value.placements)  # the work-queue message carries the pods
    info = await bus.js.stream_info(bus.subjects.placement_stream)
    assert info.state.messages == 1
    stored = await bus.js.get_msg(bus.subjects.placement_stream, info.state.last_seq)
    published = decode(stored.data or b"", PlacementBatch)
    assert published.batch_id == entry.value.batch_id
    assert [p.pod_uid for p in published.placements] == uids
    assert all(p.assumed_at > 0 and p.pod for p in published.placements)


async def test_the_pending_bootstrap_carries_the_device_classes_when_asked(
    sim: tuple[KubeSim, Path], informer: InformerService, bus_factory: Any
) -> None:
    """The queue's NodeResourcesFit hints read them (DRAExtendedResource, docs/dra.md)."""
    kube, _ = sim
    kube.create(
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "DeviceClass",
            "metadata": {"name": "gpu"},
            "spec": {"extendedResourceName": "example.com/gpu"},
        }
    )
    await until(lambda: "gpu" in informer.cache.snapshot.objects.device_classes)
    bus: Bus = await bus_factory("queue")
    for asked in (False, True):

        def request(inbox: str, asked: bool = asked) -> PendingPodsRequest:
            return PendingPodsRequest(requester="t", deliver=inbox, device_classes=asked)

        reply, _ = await fetch_bootstrap(bus, endpoints.PENDING_BOOTSTRAP, request, PendingPod)
        classes = [msgspec.json.decode(raw) for raw in reply.device_classes]
        assert [(c["metadata"]["name"], c["spec"]["extendedResourceName"]) for c in classes] == (
            [("gpu", "example.com/gpu")] if asked else []
        )


async def test_the_entry_and_the_placements_are_both_stored_when_the_assume_is_answered(
    sim: tuple[KubeSim, Path],
    informer: InformerService,
    bus_factory: Any,
) -> None:
    kube, _ = sim
    kube.create(node("n1"))
    a = kube.create(pod("a"))
    await until(lambda: len(informer.cache.pending) == 1 and len(informer.cache.snapshot.nodes) == 1)
    bus: Bus = await bus_factory("scheduler")
    reply = await bus.request(endpoints.ASSUME, assume_request(a, "n1", informer, informer.cache.generation))
    assert reply.accepted
    assert informer.kv is not None
    keys = await informer.kv.keys()
    assert len(keys) == 1
    info = await bus.js.stream_info(bus.subjects.placement_stream)
    assert info.state.messages == 1


async def test_a_failed_ledger_write_keeps_the_published_placement_and_is_written_again(
    sim: tuple[KubeSim, Path],
    informer: InformerService,
    bus_factory: Any,
    caplog: pytest.LogCaptureFixture,
) -> None:
    kube, _ = sim
    kube.create(node("n1"))
    a = kube.create(pod("a"))
    await until(lambda: len(informer.cache.pending) == 1 and len(informer.cache.snapshot.nodes) == 1)
    bus: Bus = await bus_factory("scheduler")
    assert informer.kv is not None
    bucket = informer.kv.bucket
    await bus.js.delete_stream(f"KV_{bucket}")  # the ledger's writes fail; the work queue takes messages

    uid = a["metadata"]["uid"]
    reply = await bus.request(endpoints.ASSUME, assume_request(a, "n1", informer, informer.cache.generation))
    assert reply.accepted  # the binders have the placement: the pod is assumed
    assert "not written" in caplog.text and "the binders have it" in caplog.text
    assert uid in informer.cache.assumed
    info = await bus.js.stream_info(bus.subjects.placement_stream)
    assert info.state.messages == 1

    # the bucket comes back (a JetStream leader elected again, say): the entry is written again
    kv = await TypedKV.open(bus, ASSUMED_LEDGER, LEDGER_ENTRY)
    assert kv.bucket == bucket

    async def written() -> bool:
        keys = await kv.keys()
        if len(keys) != 1:
            return False
        entry = await kv.get(keys[0])
        return (
            entry is not None
            and isinstance(entry.value, PlacementBatch)
            and [p.pod_uid for p in entry.value.placements] == [uid]
        )

    await until(written, timeout=15)


async def test_closed_ledger_entries_are_purged_and_leave_no_delete_marker(
    sim: tuple[KubeSim, Path], informer: InformerService, bus_factory: Any
) -> None:
    """Once the watch shows a pod bound its entry is closed, and the next purge removes it from the
    bucket's stream below the oldest open entry: no message per pod, no delete marker left for a
    restore to read through (issue 39); the open entry stays."""
    kube, _ = sim
    kube.create(node("n1"))
    a, b = kube.create(pod("a")), kube.create(pod("b"))
    await until(lambda: len(informer.cache.pending) == 2 and len(informer.cache.snapshot.nodes) == 1)
    informer.ledger.purge_every = 0.0
    bus: Bus = await bus_factory("scheduler")
    for obj in (a, b):
        reply = await bus.request(
            endpoints.ASSUME, assume_request(obj, "n1", informer, informer.cache.generation)
        )
        assert reply.accepted
    assert informer.kv is not None
    stream = f"KV_{informer.kv.bucket}"
    assert (await bus.js.stream_info(stream)).state.messages == 2

    kube.bind("default", "a", "n1")
    await until(lambda: a["metadata"]["uid"] not in informer.cache.assumed)

    async def purged() -> bool:
        return (await bus.js.stream_info(stream)).state.messages == 1

    await until(purged, timeout=10)
    keys = await informer.kv.keys()
    assert len(keys) == 1
    entry = await informer.kv.get(keys[0])
    assert entry is not None and isinstance(entry.value, PlacementBatch)
    assert [p.pod_uid for p in entry.value.placements] == [b["metadata"]["uid"]]


async def test_closed_entries_are_deleted_one_by_one_when_the_purge_fails(
    sim: tuple[KubeSim, Path],
    informer: InformerService,
    bus_factory: Any,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """An informer user without the purge permission (a deployment's auth.conf not updated) deletes
    its closed entries as before rather than keeping them."""
    kube, _ = sim
    kube.create(node("n1"))
    a = kube.create(pod("a"))
    await until(lambda: len(informer.cache.pending) == 1 and len(informer.cache.snapshot.nodes) == 1)
    informer.ledger.purge_every = 0.0
    assert informer.kv is not None

    async def refused(seq: int) -> None:
        raise PermissionError(f"purge below {seq}: permissions violation")

    monkeypatch.setattr(informer.kv, "purge_below", refused)
    bus: Bus = await bus_factory("scheduler")
    reply = await bus.request(endpoints.ASSUME, assume_request(a, "n1", informer, informer.cache.generation))
    assert reply.accepted and len(await informer.kv.keys()) == 1
    kube.bind("default", "a", "n1")

    async def deleted() -> bool:
        assert informer.kv is not None
        return await informer.kv.keys() == []

    await until(deleted, timeout=10)
    assert "not purged" in caplog.text
