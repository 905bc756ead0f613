"""The reporter's backlog is bounded: a producer that waits in ``Reporter.room`` goes on only once the
API has taken enough of its earlier writes (the binder waits there before its next placement)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from ksched.reporting.reporter import PodRef, Reporter
from ksched.service.tasks import TaskGroup


def held_writes(reporter: Reporter, monkeypatch: pytest.MonkeyPatch) -> tuple[asyncio.Event, list[str]]:
    """The reporter's API writes wait until the event returned is set, then record the pod each
    event is about (in the list returned) and succeed."""
    release = asyncio.Event()
    written: list[str] = []

    async def held_write(method: str, path: str, body: Any, content_type: str = "") -> int:
        await release.wait()
        written.append(body["regarding"]["name"])
        return 201

    monkeypatch.setattr(reporter, "_call", held_write)
    return release, written


async def test_room_waits_while_the_backlog_is_full(monkeypatch: pytest.MonkeyPatch) -> None:
    reporter = Reporter(api=Any, tasks=TaskGroup(), max_backlog=2)  # type: ignore[arg-type]
    release, written = held_writes(reporter, monkeypatch)
    reporter.scheduled(PodRef("default", "a", "uid-a"), "n1")
    await asyncio.wait_for(reporter.room(), 1.0)  # one pending: below the bound
    reporter.scheduled(PodRef("default", "b", "uid-b"), "n1")
    assert reporter.pending == 2
    waiter = asyncio.create_task(reporter.room())
    await asyncio.sleep(0.05)
    assert not waiter.done(), "room() returned with the backlog at its bound"
    release.set()
    await asyncio.wait_for(waiter, 1.0)
    await reporter.drain(1.0)
    assert sorted(written) == ["a", "b"] and reporter.pending == 0
