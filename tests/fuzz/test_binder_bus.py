"""Fuzzing what the binder consumes, over a real nats-server with kubesim (HTTP) and a real informer:
``Placement`` messages on the ``P_placements`` work queue (a durable pull consumer) and
``PermitDecision`` on ``P.binder.permit.<uid>`` (core). A malformed placement is reported and
terminated, a well-formed one is bound or failed and acknowledged: the work queue never keeps a
message, and afterwards the binder still binds a pod that waits on Permit until it is allowed."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st
from ksched_binder.options import BinderOptions
from ksched_binder.service import BinderService
from ksched_kubesim import KubeSim

from ksched.bus import endpoints
from ksched.bus.codec import encode
from ksched.bus.messages import PermitDecision, Placement
from ksched.bus.subjects import SubjectKind
from ksched.config import default_config
from ksched.service.options import CommonOptions
from tests.fuzz.bus_checks import Counts, crashes
from tests.fuzz.cluster import Cluster
from tests.fuzz.payloads import payloads
from tests.fuzz.profiles import fuzz_settings
from tests.ha.test_services import eventually


class Binder:
    def __init__(self, cluster: Cluster, service: BinderService) -> None:
        self.cluster = cluster
        self.service = service

    def bound_to(self, obj: dict[str, Any]) -> str:
        meta = obj["metadata"]
        current = self.cluster.kube.get("Pod", meta["name"], meta["namespace"])
        return str(((current or {}).get("spec") or {}).get("nodeName") or "")

    async def placement(self, permit: float = 0.0) -> tuple[dict[str, Any], Placement]:
        """A fresh pending pod and its placement, waiting on Permit for ``permit`` seconds if set."""
        obj = await self.cluster.fresh_pod()
        waits = {"*": permit} if permit else {}
        return obj, msgspec.structs.replace(self.cluster.placement(obj), permit_waits=waits)

    def permit(self, p: Placement, allow: bool = True) -> PermitDecision:
        return PermitDecision(
            pod_uid=p.pod_uid, namespace=p.namespace, name=p.name, plugin="*", allow=allow, sender="fuzz"
        )

    async def still_binds(self) -> None:
        """A pod waiting on Permit is bound once allowed; the work queue is empty afterwards."""
        obj, p = await self.placement(permit=10.0)
        bus = self.cluster.bus
        await bus.js.publish(bus.subjects.placements, encode(p), headers={"Nats-Msg-Id": p.placement_id})

        async def allowed_and_bound() -> bool:
            await bus.publish(endpoints.PERMIT.to(p.pod_uid), self.permit(p))
            return self.bound_to(obj) == p.node_name

        await eventually(allowed_and_bound, timeout=15, what=f"pod {p.name} bound")
        consumer = self.service.consumer
        assert consumer is not None
        await eventually(lambda: _empty(consumer), timeout=15, what="the work queue drained")


async def _empty(consumer: Any) -> bool:
    return bool(await consumer.pending() == 0)


@pytest.fixture
async def binder(
    cluster: Cluster, sim: tuple[KubeSim, Path], nats_url: str, bus_prefix: str
) -> AsyncIterator[Binder]:
    options = BinderOptions(
        common=CommonOptions(
            identity="binder-fuzz", nats=nats_url, kubeconfig=str(sim[1]), subject_prefix=bus_prefix
        ),
        workers=4,
        ack_wait=5.0,
    )
    service = BinderService(options, default_config())
    await service.start()
    try:
        made = Binder(cluster, service)
        await made.still_binds()
        yield made
    finally:
        await service.stop()


@fuzz_settings(20)
@given(data=st.data(), which=st.sampled_from(["placement", "permit"]))
async def test_binder_inputs(
    binder: Binder, caplog: pytest.LogCaptureFixture, data: st.DataObject, which: str
) -> None:
    caplog.clear()
    caplog.set_level(logging.WARNING)
    bus = binder.cluster.bus
    before = Counts.of(SubjectKind.PERMIT)
    if which == "placement":
        _, valid = await binder.placement()
        await bus.js.publish(bus.subjects.placements, data.draw(payloads(valid), label="payload"))
    else:
        _, waiting = await binder.placement(permit=0.5)  # a lost decision costs its timeout
        await bus.js.publish(bus.subjects.placements, encode(waiting))
        payload = data.draw(payloads(binder.permit(waiting, allow=data.draw(st.booleans()))), label="payload")
        await bus.nc.publish(bus.subjects.permit(waiting.pod_uid), payload)
    await binder.still_binds()
    assert Counts.of(SubjectKind.PERMIT).errors == before.errors
    assert crashes(caplog) == []
