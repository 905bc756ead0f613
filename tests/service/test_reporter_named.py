"""A named event (a binding's Scheduled event) tells its writer whether it exists: True once written
or refused as already there (409), False when the write failed, and then a repeat writes it again
(the binder acknowledges a placement on True and naks it on False, issue 42)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from ksched.reporting.reporter import PodRef, Reporter
from ksched.service.tasks import TaskGroup

POD = PodRef("default", "a", "uid-a")


def answering(reporter: Reporter, monkeypatch: pytest.MonkeyPatch, answers: list[int]) -> list[str]:
    """The reporter's writes get ``answers`` in turn; returns the names of the Events written."""
    sent: list[str] = []

    async def write(method: str, path: str, body: Any, content_type: str = "") -> int:
        sent.append(body["metadata"]["name"])
        return answers.pop(0)

    monkeypatch.setattr(reporter, "_call", write)
    return sent


async def test_a_failed_named_event_is_written_again_when_repeated(monkeypatch: pytest.MonkeyPatch) -> None:
    reporter = Reporter(api=Any, tasks=TaskGroup())  # type: ignore[arg-type]
    sent = answering(reporter, monkeypatch, [0, 201])
    first = reporter.scheduled(POD, "n1", name_ns=1000)
    assert first is not None and await asyncio.wait_for(first, 1.0) is False
    again = reporter.scheduled(POD, "n1", name_ns=1000)
    assert again is not None and await asyncio.wait_for(again, 1.0) is True
    assert sent == ["a.3e8", "a.3e8"]
    done = reporter.scheduled(POD, "n1", name_ns=1000)  # written: not sent a third time
    assert done is not None and await asyncio.wait_for(done, 1.0) is True and len(sent) == 2


async def test_an_event_already_there_counts_as_written(monkeypatch: pytest.MonkeyPatch) -> None:
    reporter = Reporter(api=Any, tasks=TaskGroup())  # type: ignore[arg-type]
    answering(reporter, monkeypatch, [409])
    written = reporter.scheduled(POD, "n1", name_ns=1000)
    assert written is not None and await asyncio.wait_for(written, 1.0) is True
    assert reporter.scheduled(PodRef("default", "b", "uid-b"), "n1") is None  # unnamed: nothing to await
