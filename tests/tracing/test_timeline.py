"""Timeline grouping, phase durations and rendering (pure: synthetic events)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from ksched.bus.messages import TraceEvent
from ksched.tracing import timeline
from ksched.tracing.phases import Phase
from ksched.tracing.reader import Reorder, Traced

T0 = 1_750_000_000.0


def ev(
    trace: str, phase: str, at: float, service: str = "queue", duration: float | None = None, **details: Any
) -> TraceEvent:
    return TraceEvent(
        trace_id=trace,
        pod_uid="uid-1",
        namespace="team-a",
        name="web-1",
        service=service,
        instance=f"{service}-0",
        phase=phase,
        ts=T0 + at,
        duration=duration,
        details=details,
    )


def two_attempts() -> list[TraceEvent]:
    """First attempt unschedulable, second bound; given out of order on purpose."""
    return [
        ev("t2", Phase.BOUND, 5.060, "binder", duration=0.004, node="n2"),
        ev("t1", Phase.QUEUED, 0.0, queue="active", event="PodAdd"),
        ev("t1", Phase.POPPED, 0.010, scheduler="s0", attempt=1),
        ev(
            "t1",
            Phase.FILTER,
            0.011,
            "scheduler",
            duration=0.002,
            nodes=3,
            feasible=0,
            rejected={"TaintToleration": 1, "NodeResourcesFit": 2},
            message="0/3 nodes are available: ...",
        ),
        ev("t1", Phase.UNSCHEDULABLE, 0.013, "scheduler", plugins=["NodeResourcesFit", "TaintToleration"]),
        ev("t1", Phase.REQUEUED, 0.015, queue="unschedulable", event="ScheduleAttemptFailure"),
        ev("t2", Phase.QUEUED, 5.0, queue="active", event="NodeAdd"),
        ev("t2", Phase.POPPED, 5.020),
        ev("t2", Phase.FILTER, 5.021, "scheduler", duration=0.001, nodes=4, feasible=1),
        ev("t2", Phase.ASSUMED, 5.023, "scheduler", duration=0.002, node="n2"),
        ev("t2", Phase.PREBIND, 5.050, "binder", duration=0.0001, node="n2"),
    ]


def test_attempts_are_grouped_by_trace_id_and_ordered_by_time() -> None:
    groups = timeline.attempts(two_attempts())
    assert [a.trace_id for a in groups] == ["t1", "t2"]
    assert [s.event.phase for s in groups[1].steps] == [
        Phase.QUEUED,
        Phase.POPPED,
        Phase.FILTER,
        Phase.ASSUMED,
        Phase.PREBIND,
        Phase.BOUND,
    ]
    assert groups[0].outcome == Phase.REQUEUED
    assert groups[1].outcome == Phase.BOUND and groups[1].node == "n2"


def test_phase_duration_is_measured_or_the_gap_to_the_next_event() -> None:
    steps = timeline.attempts(two_attempts())[1].steps
    queued, popped, filtered = steps[0], steps[1], steps[2]
    assert not queued.measured and queued.took == pytest.approx(0.020, abs=1e-6)  # waited in the queue
    assert not popped.measured and popped.took == pytest.approx(0.001, abs=1e-6)
    assert filtered.measured and filtered.took == pytest.approx(0.001, abs=1e-6)
    assert steps[-1].took == pytest.approx(0.004, abs=1e-6)  # bound: measured
    assert [round(s.offset, 3) for s in steps] == [0.0, 0.02, 0.021, 0.023, 0.05, 0.06]
    # the attempt ends when the last measured phase ends
    assert timeline.attempts(two_attempts())[1].total == pytest.approx(0.064, abs=1e-6)


def test_last_unmeasured_event_has_no_duration() -> None:
    attempt = timeline.attempts(two_attempts())[0]
    assert attempt.steps[-1].took is None


def test_render_shows_attempts_phases_durations_and_details() -> None:
    text = timeline.render("team-a", "web-1", two_attempts())
    lines = text.splitlines()
    assert lines[0].startswith("pod team-a/web-1  uid uid-1  2 attempts, 11 events")
    assert any(
        line.startswith("attempt 1 of 2  trace t1") and "requeued after 15.0 ms" in line for line in lines
    )
    assert any(
        line.startswith("attempt 2 of 2  trace t2") and "bound on n2 after 64.0 ms" in line for line in lines
    )
    queued = next(line for line in lines if " queued " in line and "PodAdd" in line)
    assert "(10.0 ms)" in queued and "queue=active event=PodAdd" in queued
    rejected = next(line for line in lines if "rejected by" in line)
    assert "rejected by: NodeResourcesFit 2, TaintToleration 1" in rejected
    assert " 2.0 ms" in rejected and "(2.0 ms)" not in rejected  # measured: no parentheses
    message = lines[lines.index(rejected) + 1]
    assert message.strip() == "message: 0/3 nodes are available: ..."


def test_render_of_nothing_says_so() -> None:
    assert timeline.render("ns", "gone", []) == "no trace events for pod ns/gone"


def test_top_scores_are_rendered_as_pairs() -> None:
    line, extra = timeline.describe({"node": "a", "top": [["a", 300], ["b", 250]]})
    assert line == "node=a top scores: a=300, b=250"
    assert extra == []


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(0.00042, "0.42 ms"), (0.0123, "12.3 ms"), (1.2345, "1.234 s"), (123.0, "2m03.0s"), (None, "")],
)
def test_fmt_duration(seconds: float | None, text: str) -> None:
    assert timeline.fmt_duration(seconds) == text


def test_json_has_every_field_and_the_pod_key() -> None:
    event = two_attempts()[3]
    doc = json.loads(timeline.to_json(event, 42))
    assert doc["key"] == "team-a/web-1" and doc["seq"] == 42
    assert doc["phase"] == "filter" and doc["trace_id"] == "t1" and doc["duration"] == 0.002
    assert doc["details"]["rejected"] == {"TaintToleration": 1, "NodeResourcesFit": 2}
    assert "t" not in doc and "v" not in doc


def test_live_renderer_prints_a_header_per_new_attempt() -> None:
    live = timeline.LiveRenderer(with_pod=True)
    events = sorted(two_attempts(), key=lambda e: e.ts)
    lines = [line for e in events for line in live.lines(e)]
    headers = [line for line in lines if line.startswith("--")]
    assert headers[0].startswith("-- team-a/web-1 attempt trace t1 at ")
    assert len(headers) == 2
    assert all(line.startswith("team-a/web-1  ") for line in lines if not line.startswith("--"))


def test_reorder_releases_held_events_in_time_order() -> None:
    held = Reorder(hold=0.3)
    late, early = ev("t1", Phase.POPPED, 0.010), ev("t1", Phase.QUEUED, 0.0)
    held.add(Traced(2, late), now=100.0)
    held.add(Traced(1, early), now=100.1)
    assert held.due(now=100.2) == []
    assert [t.seq for t in held.due(now=100.45)] == [1, 2]
    assert len(held) == 0
