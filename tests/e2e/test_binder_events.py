"""kill -9 of a binder whose Scheduled events trail its bindings (issue 42): before, a killed binder
took its queued events with it (the chaos run on kubesim left ~1,135-1,229 events for 1,500 bound
pods); now a placement is acknowledged only once its event is written, so the placements of the
unwritten ones come again after the ack wait and the other binder writes their events."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from kubernetes_asyncio.client import ApiClient

from ksched.launcher.stack import Stack, StackOptions
from ksched.reporting.reporter import BEFORE_NAMED_EVENT, NAMED_EVENT_DELAY
from ksched.service.faults import FAULTS_ENV
from tests.e2e.test_batch_crashes import _crash_and_recover
from tests.e2e.testing import UNDER_LOAD, running_stack
from tests.faults import arm

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def hooks(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("hooks")


@pytest.fixture(scope="module")
async def stack(tmp_path_factory: pytest.TempPathFactory, hooks: Path) -> AsyncIterator[Stack]:
    # each Scheduled event waits 1 s before it is written: the events trail the bindings, as under load
    arm(hooks, NAMED_EVENT_DELAY, "delay 1")
    env = {FAULTS_ENV: str(hooks)}
    options = StackOptions(tmp_path_factory.mktemp("events"), binders=2, extra_env=env, **UNDER_LOAD)
    async with running_stack(options) as s:
        yield s


async def test_binder_killed_with_scheduled_events_unwritten(
    stack: Stack, api: ApiClient, hooks: Path
) -> None:
    """A binder kills itself just before writing a Scheduled event, 1 s after the binding (its
    placement and those bound meanwhile would have been acknowledged by then); every pod ends bound
    once, each with its Scheduled event."""
    victim = await _crash_and_recover(stack, api, hooks, "kill-events", BEFORE_NAMED_EVENT)
    assert victim.startswith("binder-")
