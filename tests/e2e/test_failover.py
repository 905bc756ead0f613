"""Failover of the singleton services: two informers and two queues (leader + hot standby each, with
the default lease timings 15s/10s/2s). While pods are being scheduled, the leading informer and the
leading queue are killed with SIGKILL at the same moment: the standbys take the Leases over, no pod
is lost and none is bound twice. The failover times are printed (docs/ha.md records them)."""

from __future__ import annotations

import asyncio
import signal
import time

import pytest
from kubernetes_asyncio.client import ApiClient

from ksched.launcher.stack import Stack
from tests.e2e.testing import (
    UNDER_LOAD,
    all_bound,
    assert_bound_once,
    bound_count,
    create_pods,
    create_pool,
    eventually,
    holder,
    pool_pods,
    ready,
    stack_fixture,
)

pytestmark = pytest.mark.e2e

LEASE_DURATION = 15.0
RETRY_PERIOD = 2.0


stack = stack_fixture("failover", informers=2, queues=2, **UNDER_LOAD)


async def test_kill_9_of_both_leaders_fails_over_and_loses_nothing(stack: Stack, api: ApiClient) -> None:
    leaders = {s: await holder(api, f"ksched-{s}") for s in ("informer", "queue")}
    assert leaders["informer"] in ("informer-0", "informer-1"), leaders
    assert leaders["queue"] in ("queue-0", "queue-1"), leaders
    standbys = {s: next(n for n in (f"{s}-0", f"{s}-1") if n != leaders[s]) for s in leaders}
    for name in standbys.values():
        assert await ready(stack.http_url(name)), f"{name}: a standby reports ready"

    ns = "failover"
    await create_pool(api, ns, 5)
    pods = pool_pods(ns, 300)
    await create_pods(api, pods[:150])

    async def some_bound() -> bool:
        return await bound_count(api, ns) >= 20

    await eventually(some_bound, timeout=60, interval=0.05)  # scheduling is under way

    killed_at = time.monotonic()
    await asyncio.gather(
        stack.kill(leaders["informer"], signal.SIGKILL), stack.kill(leaders["queue"], signal.SIGKILL)
    )
    creating = asyncio.create_task(create_pods(api, pods[150:]))
    led_at: dict[str, float] = {}
    serving_at: dict[str, float] = {}
    deadline = killed_at + 2 * LEASE_DURATION
    while len(serving_at) < 2 and time.monotonic() < deadline:
        for service, standby in standbys.items():
            if service not in led_at and await holder(api, f"ksched-{service}") == standby:
                led_at[service] = time.monotonic()
            if service in led_at and service not in serving_at and await ready(stack.http_url(standby)):
                serving_at[service] = time.monotonic()
        await asyncio.sleep(0.05)
    await creating
    assert set(serving_at) == {"informer", "queue"}, (led_at, serving_at)
    failover = {s: round(t - killed_at, 2) for s, t in led_at.items()}
    serving = {s: round(t - killed_at, 2) for s, t in serving_at.items()}
    print(f"\nfailover (kill -9 -> standby holds the Lease) s: {failover}; -> standby ready s: {serving}")
    for service, seconds in failover.items():
        # The Lease lasts 15 s after its last renewal (every 2 s), as seen by the standby's watch.
        assert LEASE_DURATION - RETRY_PERIOD - 0.5 <= seconds <= LEASE_DURATION + RETRY_PERIOD, (
            service,
            seconds,
        )

    placed = await eventually(lambda: all_bound(api, ns, 300), timeout=120)
    print(f"all 300 pods bound {time.monotonic() - killed_at:.1f} s after the kill")
    assert set(placed) == {p["metadata"]["name"] for p in pods}
    await assert_bound_once(api, ns)

    # The killed instances come back as standbys; the new leaders keep their Leases.
    for service in ("informer", "queue"):
        await stack.restart(leaders[service])
    await asyncio.sleep(2 * RETRY_PERIOD)
    for service, standby in standbys.items():
        assert await holder(api, f"ksched-{service}") == standby
