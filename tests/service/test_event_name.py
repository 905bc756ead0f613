"""Event names as upstream's recorder makes them (client-go ``GenerateEventName``): the regarding
object's name, a dot, the time in hexadecimal nanoseconds; a UUID when that is no valid name."""

from __future__ import annotations

import asyncio
import re
import time
import uuid
from typing import Any

import pytest

from ksched.reporting.reporter import PodRef, Reporter, event_name
from ksched.service.tasks import TaskGroup


def test_the_name_is_the_object_s_and_the_time_in_hex_nanoseconds() -> None:
    assert event_name("bind-me", 0x18EB480564F1706E) == "bind-me.18eb480564f1706e"


@pytest.mark.parametrize(
    "regarding",
    [
        "p" * 240,  # valid, but no room for the dot and 16 hex digits within 253 characters
        "Upper-Case",  # not a valid object name (an object the API validated would not have it)
    ],
)
def test_a_name_that_would_not_be_valid_is_a_uuid(regarding: str) -> None:
    name = event_name(regarding, 0x18EB480564F1706E)
    assert str(uuid.UUID(name)) == name
    assert event_name(regarding, 0x18EB480564F1706E) == name  # the same happening, the same Event
    assert event_name(regarding, 0x18EB480564F1706F) != name


def test_a_pod_name_just_short_enough_keeps_upstream_s_form() -> None:
    regarding = "p" * (253 - 17)
    assert event_name(regarding, 0x18EB480564F1706E) == f"{regarding}.18eb480564f1706e"


def recording_reporter(monkeypatch: pytest.MonkeyPatch) -> tuple[Reporter, list[dict[str, Any]]]:
    """A reporter whose API writes succeed and are kept (their bodies, in the list returned)."""
    reporter = Reporter(api=Any, tasks=TaskGroup())  # type: ignore[arg-type]
    bodies: list[dict[str, Any]] = []

    async def write(method: str, path: str, body: Any, content_type: str = "") -> int:
        bodies.append(body)
        return 201

    monkeypatch.setattr(reporter, "_call", write)
    return reporter, bodies


async def test_the_reporter_names_its_events_so(monkeypatch: pytest.MonkeyPatch) -> None:
    reporter, bodies = recording_reporter(monkeypatch)
    before = time.time_ns()
    reporter.scheduled(PodRef("default", "bind-me", "uid-1"), "n1")
    await asyncio.wait_for(reporter.drain(1.0), 2.0)
    after = time.time_ns()
    (body,) = bodies
    match = re.fullmatch(r"bind-me\.([0-9a-f]+)", body["metadata"]["name"])
    assert match is not None, body["metadata"]["name"]
    assert before <= int(match.group(1), 16) <= after


async def test_a_repeat_named_by_the_same_time_is_written_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """A redelivered placement in the binder that reported it: no second write, no series."""
    reporter, bodies = recording_reporter(monkeypatch)
    pod = PodRef("default", "bind-me", "uid-1")
    reporter.scheduled(pod, "n1", 0x18EB480564F1706E)
    reporter.scheduled(pod, "n1", 0x18EB480564F1706E)
    await asyncio.wait_for(reporter.drain(1.0), 2.0)
    assert [b["metadata"]["name"] for b in bodies] == ["bind-me.18eb480564f1706e"]


async def test_the_reporting_controller_is_the_pod_s_profile(monkeypatch: pytest.MonkeyPatch) -> None:
    """As upstream's recorder per profile (``profile.NewRecorderFactory``): a second scheduler's
    events name its schedulerName; without a profile, the reporter's own (default-scheduler)."""
    reporter, bodies = recording_reporter(monkeypatch)
    reporter.scheduled(PodRef("default", "ours", "uid-1"), "n1", controller="ksched")
    reporter.unschedulable(PodRef("default", "huge", "uid-2"), "0/1 nodes are available", controller="ksched")
    reporter.scheduled(PodRef("default", "theirs", "uid-3"), "n1")
    await asyncio.wait_for(reporter.drain(1.0), 2.0)
    controllers = {b["regarding"]["name"]: b["reportingController"] for b in bodies if "regarding" in b}
    assert controllers == {"ours": "ksched", "huge": "ksched", "theirs": "default-scheduler"}
