"""Upgrade: an older release kept the informer's ledger in ``P_P_assumed``. A new informer (kubesim
over HTTP, a real nats-server) moves it to ``P_assumed`` when it leads and restores the assumption
from it, so a placement accepted before the upgrade is neither lost nor decided twice."""

from __future__ import annotations

from pathlib import Path

import msgspec
from ksched_informer.service import InformerService
from ksched_kubesim import KubeSim

from ksched.bus.codec import encode
from ksched.bus.messages import Placement
from ksched.bus.streams import legacy_assumed_ledger_bucket
from ksched.bus.tokens import encode_token
from ksched.config import default_config
from tests.fixtures.nats import BusFactory
from tests.informer.conftest import informer_options
from tests.informer.test_service import node, pod
from tests.polling import until


async def test_informer_restores_assumptions_from_the_old_ledger(
    sim: tuple[KubeSim, Path], nats_url: str, bus_prefix: str, bus_factory: BusFactory
) -> None:
    kube, kubeconfig = sim
    kube.create(node("n1"))
    created = kube.create(pod("web-1"))
    uid = created["metadata"]["uid"]
    bus = await bus_factory("old-informer")
    legacy_name = legacy_assumed_ledger_bucket(bus.subjects)
    legacy = await bus.js.create_key_value(bucket=legacy_name)
    placement = Placement(
        placement_id=f"{uid}:1",
        pod_uid=uid,
        namespace="default",
        name="web-1",
        node_name="n1",
        scheduler_id="s1",
        profile="default-scheduler",
        epoch="old-epoch",
        snapshot_generation=1,
        pod=msgspec.json.encode(created),
    )
    await legacy.put(encode_token(uid), encode(placement))

    options = informer_options(nats_url, kubeconfig, bus_prefix, "informer-upgraded")
    informer = InformerService(options, default_config())
    await informer.start()
    try:
        await until(lambda: informer.ready)
        assert informer.kv is not None and informer.kv.bucket == f"{bus_prefix}_assumed"
        assumption = informer.cache.assumed.get(uid)
        assert assumption is not None and assumption.node == "n1"
        entry = await informer.kv.get(encode_token(uid))
        assert entry is not None and isinstance(entry.value, Placement)  # an entry of before batches
        assert entry.value.placement_id == f"{uid}:1"
        names = [info.config.name for info in await bus.js.streams_info()]
        assert f"KV_{legacy_name}" not in names
        placements = await bus.js.stream_info(bus.subjects.placement_stream)
        assert placements.state.messages == 1  # re-published for the binder (same msg id)
    finally:
        await informer.stop()
