"""kill -9 inside a batch of the assume path (docs/bus.md, "Batches"): the informer killed after
writing a batch to its ledger and before publishing it to the binders loses no pod (its successor
restores the batch from the ledger and publishes it); a binder killed with a batch half bound
binds every pod once (the batch comes again; a pod already bound is a repeat, not a second
binding, and gets no second Scheduled event)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client import ApiClient

from ksched.launcher.stack import Stack, StackOptions
from ksched.service.faults import FAULTS_ENV
from tests.e2e.testing import (
    UNDER_LOAD,
    all_bound,
    assert_bound_once,
    create_pods,
    create_pool,
    eventually,
    pool_pods,
    running_stack,
)

pytestmark = pytest.mark.e2e

PODS = 400


@pytest.fixture(scope="module")
def hooks(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("hooks")


@pytest.fixture(scope="module")
async def stack(tmp_path_factory: pytest.TempPathFactory, hooks: Path) -> AsyncIterator[Stack]:
    workdir = tmp_path_factory.mktemp("batches")
    options = StackOptions(workdir, binders=2, extra_env={FAULTS_ENV: str(hooks)}, **UNDER_LOAD)
    async with running_stack(options) as s:
        yield s


async def _crash_and_recover(stack: Stack, api: ApiClient, hooks: Path, ns: str, hook: str) -> str:
    """Arm ``hook``, schedule PODS pods, restart the service that killed itself; every pod ends bound
    once. Returns the name of the service that was killed."""
    await create_pool(api, ns, 10)
    (hooks / hook).touch()
    pods = pool_pods(ns, PODS)
    await create_pods(api, pods)

    async def killed() -> str | None:
        return next((name for name, proc in stack.procs.items() if not proc.running), None)

    victim: str = await eventually(killed, timeout=60)
    assert not (hooks / hook).exists()  # it fired
    await stack.restart(victim)

    await eventually(lambda: all_bound(api, ns, PODS), timeout=180, interval=1.0)
    names = sorted(p["metadata"]["name"] for p in pods)

    async def every_pod_has_its_event() -> bool:
        # A batch a killed binder left unacknowledged comes again after the ack wait (30 s): the
        # pods it had bound get their Scheduled event then if the killed binder had not sent it.
        items = (await client.EventsV1Api(api).list_namespaced_event(ns)).items
        return sorted({e.regarding.name for e in items if e.reason == "Scheduled"}) == names

    await eventually(every_pod_has_its_event, timeout=120, interval=1.0)
    await assert_bound_once(api, ns)
    return victim


async def test_informer_killed_between_ledger_write_and_placement_publish(
    stack: Stack, api: ApiClient, hooks: Path
) -> None:
    victim = await _crash_and_recover(stack, api, hooks, "kill-ledger", "informer-after-ledger")
    assert victim == "informer"
    log = stack.procs["informer"].log_path.read_text(errors="replace")
    assert "killing this process" in log
    # the successor found the batch the killed one had written but not published
    assert "assumed placements from the ledger" in log.split("killing this process", 1)[1]


async def test_binder_killed_with_a_batch_half_bound(stack: Stack, api: ApiClient, hooks: Path) -> None:
    victim = await _crash_and_recover(stack, api, hooks, "kill-mid-batch", "binder-mid-batch")
    assert victim.startswith("binder-")
