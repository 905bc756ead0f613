"""``--jetstream-replicas 3`` on a real 3-server JetStream cluster (three nats-server processes with
routes on loopback, as deploy/ runs them): streams and the KV ledger get three replicas, existing
one-replica streams and buckets (an installation from before the setting) are scaled up in place,
and a count the cluster cannot place fails naming the setting."""

from __future__ import annotations

import logging
import uuid
from collections.abc import AsyncIterator

import pytest

from ksched.bus.cluster import EmbeddedCluster, wait_for_meta_leader
from ksched.bus.connect import Bus, connect
from ksched.bus.embedded import EmbeddedNats
from ksched.bus.jetstream import (
    JetStreamReplicasError,
    TypedKV,
    _await_replicas,
    ensure_stream,
    ensure_streams,
)
from ksched.bus.messages import Placement
from ksched.bus.streams import ASSUMED_LEDGER, placement_stream, trace_stream
from ksched.bus.subjects import Subjects
from tests.bus.samples import sample


@pytest.fixture(scope="module")
async def cluster(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[list[EmbeddedNats]]:
    servers = EmbeddedCluster(3, tmp_path_factory.mktemp("cluster"))
    try:
        await servers.start()
        yield servers.servers
    finally:
        await servers.stop()


@pytest.fixture
async def cluster_bus(cluster: list[EmbeddedNats]) -> AsyncIterator[Bus]:
    subjects = Subjects(f"c{uuid.uuid4().hex[:10]}")
    bus = await connect([s.url for s in cluster], name="r3", subjects=subjects, jetstream_replicas=3)
    yield bus
    await bus.close()


async def test_streams_and_the_ledger_get_three_replicas(cluster_bus: Bus) -> None:
    infos = await ensure_streams(cluster_bus)
    assert {i.config.name: i.config.num_replicas for i in infos} == dict.fromkeys(
        cluster_bus.subjects.stream_names, 3
    )
    ledger = await TypedKV.open(cluster_bus, ASSUMED_LEDGER, Placement)
    assert (await cluster_bus.js.stream_info(f"KV_{ledger.bucket}")).config.num_replicas == 3


async def test_an_existing_single_replica_stream_and_bucket_are_scaled_up(
    cluster: list[EmbeddedNats], cluster_bus: Bus, caplog: pytest.LogCaptureFixture
) -> None:
    old = await connect(cluster[0].url, name="r1", subjects=cluster_bus.subjects)  # default: 1 replica
    try:
        assert (await ensure_stream(old, placement_stream(old.subjects))).config.num_replicas == 1
        await TypedKV.open(old, ASSUMED_LEDGER, Placement)
    finally:
        await old.close()
    with caplog.at_level(logging.WARNING, logger="ksched.bus"):
        info = await ensure_stream(cluster_bus, placement_stream(cluster_bus.subjects))
        ledger = await TypedKV.open(cluster_bus, ASSUMED_LEDGER, Placement)
    # TypedKV.open waited for the new replicas; a loaded machine can let a follower fall behind again
    # for a moment, so read the bucket's state as _await_replicas would
    kv_info = await _await_replicas(cluster_bus, f"KV_{ledger.bucket}", 3)
    assert kv_info.config.max_msgs_per_subject == 1  # the bucket's other settings are kept
    for scaled_info in (info, kv_info):  # returned once the new replicas have caught up
        assert scaled_info.config.num_replicas == 3 and scaled_info.cluster is not None
        followers = scaled_info.cluster.replicas or []
        assert scaled_info.cluster.leader and len(followers) == 2 and all(p.current for p in followers)
    scaled = [r.getMessage() for r in caplog.records if "scaling it to 3" in r.getMessage()]
    assert len(scaled) == 2 and all("1 replica(s)" in m and "KSCHED_JETSTREAM_REPLICAS" in m for m in scaled)
    assert await ledger.put("uid-1", sample(Placement)) > 0  # the scaled bucket works


async def test_more_replicas_than_the_cluster_has_are_refused(cluster: list[EmbeddedNats]) -> None:
    subjects = Subjects(f"c{uuid.uuid4().hex[:10]}")
    five = await connect([s.url for s in cluster], name="r5", subjects=subjects, jetstream_replicas=5)
    try:
        await wait_for_meta_leader([s.url for s in cluster])
        with pytest.raises(JetStreamReplicasError, match=r"refused 5 replica.*KSCHED_JETSTREAM_REPLICAS"):
            await ensure_stream(five, trace_stream(subjects))
    finally:
        await five.close()
