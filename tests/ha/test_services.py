"""The informer and queue services with leader election, in process, against kubesim (HTTP) and a
real nats-server: a standby serves nothing and reports ready as a standby; a graceful stop hands
over at once; /readyz follows the NATS connection down and back up."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from ksched_informer.service import InformerService
from ksched_queue.server import QueueServer
from ksched_queue.settings import QueueSettings

from ksched.bus import endpoints
from ksched.bus.bootstrap import fetch_bootstrap
from ksched.bus.connect import Bus
from ksched.bus.embedded import EmbeddedNats
from ksched.bus.messages import PendingPod, PendingPodsRequest, PopRequest
from ksched.client.leader import ElectionConfig
from ksched.config import default_config
from ksched.service.lifecycle import serve
from ksched.service.options import CommonOptions
from tests.fixtures.nats import BusFactory
from tests.informer.conftest import informer_options
from tests.polling import until


def election(lease: str, identity: str) -> ElectionConfig:
    """Shorter than the defaults (15/10/2) so a test does not wait long; same proportions."""
    return ElectionConfig(
        name=lease,
        identity=identity,
        namespace="kube-system",
        lease_duration=4.0,
        renew_deadline=2.0,
        retry_period=0.5,
    )


async def eventually(
    check: Callable[[], Any], timeout: float = 15.0, interval: float = 0.05, what: str = "condition"
) -> Any:
    """:func:`tests.polling.until` with the patience of these tests (and of the fuzzing ones)."""
    return await until(check, timeout, interval, what)


async def status_of(port: int, path: str = "/readyz") -> int:
    try:
        async with (
            aiohttp.ClientSession() as http,
            http.get(f"http://127.0.0.1:{port}{path}", timeout=aiohttp.ClientTimeout(total=2)) as r,
        ):
            return r.status
    except (aiohttp.ClientError, TimeoutError):
        return 0


async def debug_of(port: int) -> dict[str, Any]:
    async with aiohttp.ClientSession() as http, http.get(f"http://127.0.0.1:{port}/debug") as r:
        result: dict[str, Any] = await r.json()
        return result


class Informers:
    """Informer services started in this test, stopped at the end; losing leadership is recorded."""

    def __init__(self, nats_url: str, kubeconfig: Path, prefix: str) -> None:
        self.nats_url = nats_url
        self.kubeconfig = kubeconfig
        self.prefix = prefix
        self.lease = f"informer-{uuid.uuid4().hex[:8]}"
        self.started: list[InformerService] = []
        self.lost: list[str] = []

    async def start(self, identity: str) -> InformerService:
        options = informer_options(
            self.nats_url, self.kubeconfig, self.prefix, identity, election=election(self.lease, identity)
        )
        service = InformerService(options, default_config())
        service.leadership.on_lost = lambda: self.lost.append(identity)
        await service.start()
        self.started.append(service)
        return service

    async def stop_all(self) -> None:
        for service in self.started:
            if not service._stopping:
                await service.stop()


@pytest.fixture
async def informers(kubesim_kubeconfig: Path, nats_url: str, bus_prefix: str) -> AsyncIterator[Informers]:
    made = Informers(nats_url, kubesim_kubeconfig, bus_prefix)
    try:
        yield made
    finally:
        await made.stop_all()


class QueueRun:
    """A :class:`QueueServer` served as a task (as ``ksched queue`` runs it), with its stop event."""

    def __init__(self, settings: QueueSettings, lost: list[str]) -> None:
        self.settings = settings
        self.stop = asyncio.Event()
        self.server = QueueServer(settings)
        self.server.leadership.on_lost = lambda: lost.append(settings.common.identity)
        self.task = asyncio.create_task(serve(self.server, self.stop))

    async def port(self) -> int:
        """The HTTP port, once the queue serves or waits as a standby."""
        await self.server.started.wait()
        return self.server.port

    async def close(self) -> None:
        self.stop.set()
        await asyncio.wait_for(self.task, 15)


def queue_settings(nats_url: str, prefix: str, kubeconfig: Path, lease: str, identity: str) -> QueueSettings:
    return QueueSettings(
        scheduler_config=default_config(),
        common=CommonOptions(
            identity=identity, nats=nats_url, subject_prefix=prefix, kubeconfig=str(kubeconfig)
        ),
        bootstrap_timeout=2.0,
        bootstrap_retry=0.1,
        election=election(lease, identity),
    )


async def test_a_standby_informer_waits_and_takes_over_on_graceful_stop(
    informers: Informers, bus_factory: BusFactory
) -> None:
    a = await informers.start("inf-a")
    await eventually(lambda: a.ready)
    b = await informers.start("inf-b")
    b_elector, a_elector = b.leadership.elector, a.leadership.elector
    assert b_elector is not None and a_elector is not None
    await eventually(lambda: b_elector.leader == "inf-a")
    # The standby: ready as a standby, no list-watch, no cache, and it says so in /debug.
    assert await status_of(b.health.port) == 200
    assert await status_of(a.health.port) == 200
    debug = await debug_of(b.health.port)
    assert debug["leader_election"]["leading"] is False and debug["leader_election"]["leader"] == "inf-a"
    assert b.reflectors == [] and not b.ready and b.cache.generation == 0
    await asyncio.sleep(1.0)  # a few renewals: the standby stays a standby
    assert not b_elector.is_leader and a_elector.is_leader

    stopping = time.monotonic()
    await a.stop()
    await asyncio.wait_for(b_elector.wait_leader(), 5)
    handover = time.monotonic() - stopping
    assert handover < 2.0, handover  # released, not expired (leaseDuration is 4 s)
    await eventually(lambda: b.ready)
    bus: Bus = await bus_factory("scheduler")
    reply, _ = await fetch_bootstrap(
        bus,
        endpoints.PENDING_BOOTSTRAP,
        lambda inbox: PendingPodsRequest(requester="t", deliver=inbox),
        PendingPod,
    )
    assert reply.epoch == b.epoch != a.epoch
    assert informers.lost == []  # a graceful stop is not a lost leadership


async def test_queue_standby_serves_nothing_until_it_leads(
    informers: Informers, bus_factory: BusFactory, kubesim_kubeconfig: Path, nats_url: str, bus_prefix: str
) -> None:
    informer = await informers.start("inf-q")
    await eventually(lambda: informer.ready)
    lease = f"queue-{uuid.uuid4().hex[:8]}"
    lost: list[str] = []
    qa = QueueRun(queue_settings(nats_url, bus_prefix, kubesim_kubeconfig, lease, "queue-a"), lost)
    port_a = await asyncio.wait_for(qa.port(), 10)
    await eventually(lambda: _is(port_a, 200))
    qb = QueueRun(queue_settings(nats_url, bus_prefix, kubesim_kubeconfig, lease, "queue-b"), lost)
    try:
        port_b = await asyncio.wait_for(qb.port(), 10)
        await eventually(lambda: _is(port_b, 200))  # a standby is ready as such
        assert (await debug_of(port_b))["feed"]["epoch"] == ""  # never bootstrapped: not serving
        assert (await debug_of(port_a))["feed"]["epoch"] == informer.epoch
        bus: Bus = await bus_factory("scheduler")
        # a scheduler name no pod has: pods other tests left pending in the session's kubesim stay out
        pop = PopRequest(scheduler_id="s", scheduler_names=[f"standby-{lease}"], max_pods=1)
        assert (await bus.request(endpoints.QUEUE_POP, pop)).pods == []
        await qa.close()
        debug = await eventually(
            lambda: _debug_when(port_b, lambda d: d["feed"]["epoch"] == informer.epoch), timeout=5
        )
        assert debug["feed"]["epoch"] == informer.epoch  # the new leader bootstrapped and serves
        assert (await bus.request(endpoints.QUEUE_POP, pop)).pods == []
        assert lost == []
    finally:
        await qb.close()
        if not qa.task.done():
            await qa.close()


async def _debug_when(port: int, ok: Callable[[dict[str, Any]], bool]) -> dict[str, Any] | None:
    debug = await debug_of(port)
    return debug if ok(debug) else None


async def test_readiness_follows_nats_down_and_back(
    tmp_path: Path, kubesim_kubeconfig: Path, bus_prefix: str
) -> None:
    """Both singletons (leading, with election on) report not ready while NATS is gone and ready
    again once a server is back on the same port with the same JetStream store."""
    store = tmp_path / "jetstream"
    first = EmbeddedNats(store_dir=str(store))
    await first.start()
    port = first.port
    url = first.url
    informers = Informers(url, kubesim_kubeconfig, bus_prefix)
    lost: list[str] = []
    queue: QueueRun | None = None
    second: EmbeddedNats | None = None
    try:
        informer = await informers.start("inf-nats")
        await eventually(lambda: informer.ready)
        lease = f"queue-{uuid.uuid4().hex[:8]}"
        queue = QueueRun(queue_settings(url, bus_prefix, kubesim_kubeconfig, lease, "queue-nats"), lost)
        queue_port = await asyncio.wait_for(queue.port(), 10)
        ports = {"informer": informer.health.port, "queue": queue_port}
        for name, p in ports.items():
            await _wait_status(p, 200, 15, f"{name} ready")

        await first.stop()
        for name, p in ports.items():
            await _wait_status(p, 503, 10, f"{name} not ready without NATS")
        assert await status_of(ports["informer"], "/livez") == 200  # alive, just not ready

        second = EmbeddedNats(port=port, store_dir=str(store))
        await second.start()
        for name, p in ports.items():
            await _wait_status(p, 200, 15, f"{name} ready again")
        assert lost == [] and informers.lost == []
    finally:
        if queue is not None:
            await queue.close()
        await informers.stop_all()
        if second is not None:
            await second.stop()
        await first.stop()


async def _is(port: int, status: int) -> bool:
    return await status_of(port) == status


async def _wait_status(port: int, status: int, timeout: float, what: str) -> None:
    await eventually(lambda: _is(port, status), timeout=timeout, what=what)
