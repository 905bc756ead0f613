"""The Lease elector against kubesim over HTTP: acquire, renew, take over an expired Lease, release on
shutdown, lose a race (409), step down on a partition before a standby takes over, and never two
leaders at once while leadership moves around."""

from __future__ import annotations

import asyncio
import json
import random
import re
import time
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from prometheus_client import REGISTRY

from ksched.aio import cancel_and_wait
from ksched.api.timestamps import micro_time
from ksched.client.config import load_configuration
from ksched.client.leader import ElectionConfig, ElectionThread, LeaseElector, json_object
from ksched.client.rest import Client
from tests.ha.proxy import CuttableProxy

NAMESPACE = "kube-system"
MICRO_TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")
# Short but proportioned like the defaults (15/10/2): the safety margin is lease - renew = 1 s.
FAST = {"lease_duration": 2.0, "renew_deadline": 1.0, "retry_period": 0.2}


def lease_name() -> str:
    return f"t-{uuid.uuid4().hex[:10]}"


def election(name: str, identity: str, **kw: Any) -> ElectionConfig:
    return ElectionConfig(name=name, identity=identity, namespace=NAMESPACE, **{**FAST, **kw})


async def api_via(kubeconfig: Path, host: str | None = None) -> Client:
    return Client(await load_configuration(str(kubeconfig), master=host))


async def raw(api: Client, method: str, path: str, body: Any = None) -> dict[str, Any]:
    """A call as the server answers it."""
    status, data = await api.request(
        method, f"/apis/coordination.k8s.io/v1/namespaces/{NAMESPACE}/leases{path}", body
    )
    assert status in (200, 201), data
    result: dict[str, Any] = json.loads(data)
    return result


async def read_lease(api: Client, name: str) -> dict[str, Any]:
    return await raw(api, "GET", f"/{name}")


def upstream_of(api: Client) -> tuple[str, str, int]:
    """(scheme, host, port) of the API server ``api`` talks to."""
    url = urlsplit(str(api.configuration.host))
    return url.scheme, url.hostname or "127.0.0.1", url.port or 443


async def until(check: Callable[[], bool], timeout: float, interval: float = 0.005) -> float:
    """Wait for ``check()``; the monotonic time it first held."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not reached in {timeout}s")
        await asyncio.sleep(interval)
    return time.monotonic()


@dataclass
class Candidate:
    """An elector plus what its callbacks saw: whether it is acting, and when that changed."""

    elector: LeaseElector
    acting: bool = False
    started: list[float] = field(default_factory=list)
    stopped: list[float] = field(default_factory=list)
    task: asyncio.Task[None] | None = None

    def on_started(self) -> None:
        self.acting = True
        self.started.append(time.monotonic())

    def on_stopped(self) -> None:
        self.acting = False
        self.stopped.append(time.monotonic())

    def campaign(self, forever: bool = False) -> None:
        async def run() -> None:
            while True:
                await self.elector.run()
                if not forever:
                    return

        self.task = asyncio.create_task(run())

    async def stop(self) -> None:
        if self.task is not None:
            await cancel_and_wait(self.task)
            self.task = None
        await self.elector.stop()


def candidate(api: Client, name: str, identity: str, **kw: Any) -> Candidate:
    c = Candidate(elector=LeaseElector(api, election(name, identity, **kw)))
    c.elector.on_started_leading = c.on_started
    c.elector.on_stopped_leading = c.on_stopped
    return c


@pytest.fixture
async def candidates() -> AsyncIterator[list[Candidate]]:
    made: list[Candidate] = []
    yield made
    for c in made:
        await c.stop()


def test_a_plain_text_answer_is_no_decode_error() -> None:
    """kube-apiserver's 429 body is plain text: the renewal's error reads "HTTP 429" (the chaos
    report tells a refusal from a starved leader by it), not a JSONDecodeError."""
    assert json_object(b"Too many requests, please try again later.\n") is None
    assert json_object(b"") is None and json_object(b"[1]") is None
    assert json_object(b'{"kind": "Lease"}') == {"kind": "Lease"}


def test_config_is_checked_like_client_go() -> None:
    with pytest.raises(ValueError, match="must be greater than renewDeadline"):
        ElectionConfig(name="x", identity="a", lease_duration=10, renew_deadline=10)
    with pytest.raises(ValueError, match=r"greater than 1.2 x retryPeriod"):
        ElectionConfig(name="x", identity="a", renew_deadline=2, retry_period=2)
    with pytest.raises(ValueError, match="whole number of seconds"):
        ElectionConfig(name="x", identity="a", lease_duration=14.5)
    with pytest.raises(ValueError, match="lease kube-system/: lease name must not be empty"):
        ElectionConfig(name="", identity="a")
    defaults = ElectionConfig(name="x", identity="a")
    assert (defaults.lease_duration, defaults.renew_deadline, defaults.retry_period) == (15, 10, 2)


async def test_acquires_a_new_lease_and_renews_it(k8s_client: Client, candidates: list[Candidate]) -> None:
    name = lease_name()
    a = candidate(k8s_client, name, "a")
    candidates.append(a)
    a.campaign()
    await asyncio.wait_for(a.elector.wait_leader(), 5)
    assert a.elector.is_leader and a.acting
    first = await read_lease(k8s_client, name)
    spec = first["spec"]
    assert spec["holderIdentity"] == "a"
    assert spec["leaseDurationSeconds"] == 2
    assert spec["leaseTransitions"] == 0
    assert MICRO_TIME.match(spec["acquireTime"]) and MICRO_TIME.match(spec["renewTime"])
    await asyncio.sleep(3 * FAST["retry_period"] + 0.1)
    later = await read_lease(k8s_client, name)
    assert later["spec"]["holderIdentity"] == "a"
    assert later["spec"]["renewTime"] > spec["renewTime"]
    assert later["spec"]["acquireTime"] == spec["acquireTime"]
    assert later["spec"]["leaseTransitions"] == 0
    assert int(later["metadata"]["resourceVersion"]) > int(first["metadata"]["resourceVersion"])
    assert a.elector.is_leader and a.elector.status()[0]
    assert REGISTRY.get_sample_value("leader_election_master_status", {"name": name}) == 1


async def test_standby_takes_over_only_after_the_lease_expires(
    k8s_client: Client, candidates: list[Candidate]
) -> None:
    """A leader that died without releasing: the standby waits a full leaseDuration from when it
    first saw the record, then takes over with leaseTransitions + 1."""
    name = lease_name()
    now = micro_time(time.time())
    await raw(
        k8s_client,
        "POST",
        "",
        {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": name},
            "spec": {
                "holderIdentity": "dead-leader",
                "leaseDurationSeconds": 2,
                "acquireTime": now,
                "renewTime": now,
                "leaseTransitions": 4,
            },
        },
    )
    b = candidate(k8s_client, name, "b")
    candidates.append(b)
    started = time.monotonic()
    b.campaign()
    await until(lambda: b.elector.leader == "dead-leader", 2)
    assert b.elector.status() == (True, f"standby for {NAMESPACE}/{name} (leader: dead-leader)")
    await asyncio.wait_for(b.elector.wait_leader(), 5)
    waited = time.monotonic() - started
    assert 1.9 <= waited < 2.0 + FAST["retry_period"] + 0.5, waited
    spec = (await read_lease(k8s_client, name))["spec"]
    assert spec["holderIdentity"] == "b"
    assert spec["leaseTransitions"] == 5


async def test_release_on_shutdown_empties_the_holder(
    k8s_client: Client, candidates: list[Candidate]
) -> None:
    name = lease_name()
    a = candidate(k8s_client, name, "a")
    a.campaign()
    await asyncio.wait_for(a.elector.wait_leader(), 5)
    await a.stop()
    assert not a.elector.is_leader and not a.acting and len(a.stopped) == 1
    spec = (await read_lease(k8s_client, name))["spec"]
    assert spec.get("holderIdentity") in ("", None)
    assert spec["leaseDurationSeconds"] == 1
    assert spec["leaseTransitions"] == 0
    assert MICRO_TIME.match(spec["renewTime"])


async def test_a_watching_standby_takes_over_a_released_lease_at_once(
    k8s_client: Client, candidates: list[Candidate]
) -> None:
    name = lease_name()
    slow = {"lease_duration": 10.0, "renew_deadline": 6.0, "retry_period": 4.0}  # polls far apart
    a = candidate(k8s_client, name, "a", **slow)
    b = candidate(k8s_client, name, "b", **slow)
    candidates.extend([a, b])
    a.campaign()
    await asyncio.wait_for(a.elector.wait_leader(), 5)
    b.campaign()
    await until(lambda: b.elector.leader == "a" and b.elector._watch_live, 3)
    await asyncio.sleep(0.5)
    stopping = time.monotonic()
    await a.stop()
    await asyncio.wait_for(b.elector.wait_leader(), 5)
    handover = time.monotonic() - stopping
    assert handover < 2.0, handover  # far less than a polling period (4 s) or the lease (10 s)
    assert a.stopped[-1] < b.started[0]
    spec = (await read_lease(k8s_client, name))["spec"]
    assert spec["holderIdentity"] == "b" and spec["leaseTransitions"] == 1


async def test_a_leader_whose_lease_was_taken_steps_down(
    k8s_client: Client, candidates: list[Candidate]
) -> None:
    """Someone else wrote the Lease: the leader's renewal hits 409 Conflict (stale resourceVersion),
    it re-reads, sees another holder and stops at once, without touching the Lease."""
    name = lease_name()
    a = candidate(k8s_client, name, "a")
    candidates.append(a)
    a.campaign()
    await asyncio.wait_for(a.elector.wait_leader(), 5)
    lease = await read_lease(k8s_client, name)
    lease["spec"]["holderIdentity"] = "intruder"
    lease["spec"]["leaseDurationSeconds"] = 30
    await raw(k8s_client, "PUT", f"/{name}", lease)
    assert a.task is not None
    await asyncio.wait_for(a.task, 2)  # run() returned: leadership lost
    assert not a.acting and not a.elector.is_leader
    assert "intruder" in a.elector.lost_reason
    spec = (await read_lease(k8s_client, name))["spec"]
    assert spec["holderIdentity"] == "intruder"


async def test_a_partitioned_leader_stops_before_the_standby_starts(
    kubesim_kubeconfig: Path, k8s_client: Client, candidates: list[Candidate]
) -> None:
    scheme, host, port = upstream_of(k8s_client)
    proxy = CuttableProxy(host, port)
    await proxy.start()
    api_a = await api_via(kubesim_kubeconfig, f"{scheme}://127.0.0.1:{proxy.port}")
    try:
        name = lease_name()
        a = candidate(api_a, name, "a")
        b = candidate(k8s_client, name, "b")
        candidates.extend([a, b])
        a.campaign()
        await asyncio.wait_for(a.elector.wait_leader(), 5)
        b.campaign()
        await until(lambda: b.elector.leader == "a", 3)
        both: list[float] = []

        async def sample() -> None:
            while True:
                if (a.acting or a.elector.is_leader) and (b.acting or b.elector.is_leader):
                    both.append(time.monotonic())
                await asyncio.sleep(0.002)

        sampler = asyncio.create_task(sample())
        cut = time.monotonic()
        proxy.partition()
        await asyncio.wait_for(b.elector.wait_leader(), 6)
        sampler.cancel()
        assert not both, "two leaders at once"
        assert a.stopped and a.stopped[0] < b.started[0]
        assert a.stopped[0] - cut <= FAST["renew_deadline"] + 0.1
        margin = b.started[0] - a.stopped[0]
        assert margin >= 0.5, margin  # ~ leaseDuration - renewDeadline
        assert b.started[0] - cut <= FAST["lease_duration"] + 0.3
        await a.stop()  # cannot release through the partition; must not hang
    finally:
        proxy.heal()
        await proxy.stop()
        await api_a.close()


async def test_exactly_one_leader_at_any_moment(
    kubesim_kubeconfig: Path, k8s_client: Client, candidates: list[Candidate]
) -> None:
    """Three candidates, each behind its own cuttable link; for ~10 s the leader is partitioned,
    shut down or restarted at random. Sampled every few milliseconds: never two leaders."""
    scheme, host, port = upstream_of(k8s_client)
    name = lease_name()
    proxies: list[CuttableProxy] = []
    apis: list[Client] = []
    for i in range(3):
        proxy = CuttableProxy(host, port)
        await proxy.start()
        proxies.append(proxy)
        apis.append(await api_via(kubesim_kubeconfig, f"{scheme}://127.0.0.1:{proxy.port}"))
        candidates.append(candidate(apis[i], name, f"c{i}"))
    rng = random.Random(11)
    samples = 0
    overlaps: list[str] = []
    leader_seen: set[str] = set()
    try:
        for c in candidates:
            c.campaign(forever=True)

        async def sample() -> None:
            nonlocal samples
            while True:
                leading = [c.elector.identity for c in candidates if c.acting or c.elector.is_leader]
                samples += 1
                if len(leading) > 1:
                    overlaps.append(",".join(leading))
                leader_seen.update(leading)
                await asyncio.sleep(0.002)

        sampler = asyncio.create_task(sample())
        # ~10 s of chaos, longer (up to 30 s) until leadership has moved at least once.
        start = time.monotonic()
        while time.monotonic() < start + 10 or (len(leader_seen) < 2 and time.monotonic() < start + 30):
            await asyncio.sleep(rng.uniform(0.5, 1.5))
            leaders = [i for i, c in enumerate(candidates) if c.acting]
            action = rng.choice(["partition", "stop", "nothing"])
            if leaders and action == "partition":
                proxies[leaders[0]].partition()
            elif leaders and action == "stop":
                await candidates[leaders[0]].stop()
                candidates[leaders[0]].campaign(forever=True)
            for i, proxy in enumerate(proxies):
                if proxy.cut and not candidates[i].acting and rng.random() < 0.5:
                    proxy.heal()
        sampler.cancel()
        assert not overlaps, overlaps[:5]
        assert samples > 1000
        assert len(leader_seen) >= 2, leader_seen  # leadership did move
        assert sum(len(c.started) for c in candidates) >= 3
    finally:
        for proxy in proxies:
            proxy.heal()
        for c in candidates:
            await c.stop()
        candidates.clear()
        for proxy in proxies:
            await proxy.stop()
        for api in apis:
            await api.close()


def _burn(seconds: float) -> None:
    """Hold the event loop: pure Python work that never yields (a relist, a burst of decisions)."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        sum(range(200))


async def test_a_busy_loop_does_not_starve_the_renewal_thread(kube136_client: Client) -> None:
    """The loop held for 3 x renewDeadline: the elector's own thread renews all along, so the
    leader never steps down; the same election on the busy loop itself does (the reason for the
    thread). On the real API server: kubesim in this process would be held as well."""
    name = lease_name()
    stopped: list[str] = []
    thread = ElectionThread(
        kube136_client, election(name, "busy"), on_stopped_leading_now=lambda: stopped.append("now")
    )
    ended = thread.start()
    try:
        await asyncio.wait_for(thread.wait_leader(), 10)
        before = (await read_lease(kube136_client, name))["spec"]["renewTime"]
        _burn(3 * FAST["renew_deadline"])
        assert thread.is_leader and not stopped and not ended.done(), thread.lost_reason
        during = (await read_lease(kube136_client, name))["spec"]["renewTime"]
        assert during > before
        assert thread.describe()["thread"] is True
    finally:
        await thread.stop()
    await asyncio.wait_for(ended, 5)
    assert stopped == []  # stopping is not losing: nothing ran "now"
    assert (await read_lease(kube136_client, name))["spec"]["holderIdentity"] == ""  # released

    same_loop = candidate(kube136_client, lease_name(), "same-loop")
    same_loop.campaign()
    try:
        await asyncio.wait_for(same_loop.elector.wait_leader(), 10)
        _burn(3 * FAST["renew_deadline"])
        await until(lambda: bool(same_loop.stopped), 5)
        assert "renewDeadline" in same_loop.elector.lost_reason
    finally:
        await same_loop.stop()
