"""The scheduler's background work (assumes, and the reporter's API writes) runs as named jobs of
its TaskGroup: a bug in one ends the service with the job's name in the log instead of vanishing."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from ksched_scheduler import service as scheduler_service

from ksched.framework.testing import make_node, make_pod
from ksched.reporting.reporter import PodRef, Reporter
from ksched.service.tasks import TaskGroup
from tests.scheduler.harness import SchedulerHarness


async def test_a_crashing_assume_ends_the_service(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def broken(*_: Any) -> int:
        raise RuntimeError("a bug while sending the assume")

    monkeypatch.setattr(scheduler_service, "spread_slack", broken)
    h = SchedulerHarness([make_node("n1", allocatable={"cpu": "4", "memory": "8Gi", "pods": "110"})])
    with caplog.at_level(logging.ERROR, logger="ksched.service.tasks"):
        await h.service._schedule_one(h.leased(make_pod("p")))
        await h.service.tasks.drain(5.0)
    assert h.service.tasks.failed.is_set()
    assert "task assume failed; stopping the service" in caplog.text
    assert "a bug while sending the assume" in str(h.service.tasks.failure)


async def test_a_crashing_reporter_write_ends_the_service(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    tasks = TaskGroup()
    reporter = Reporter(api=Any, tasks=tasks)  # type: ignore[arg-type]

    async def broken(*_: Any, **__: Any) -> int:
        raise TypeError("a bug in the write")

    monkeypatch.setattr(reporter, "_call", broken)
    with caplog.at_level(logging.ERROR, logger="ksched.service.tasks"):
        reporter.unschedulable(PodRef("default", "p", "uid-p"), "0/1 nodes are available")
        await tasks.drain(5.0)
    assert tasks.failed.is_set() and isinstance(tasks.failure, TypeError)
    assert "task event failed; stopping the service" in caplog.text
