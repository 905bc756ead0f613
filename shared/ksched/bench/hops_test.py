from __future__ import annotations

from ksched.bench import hops
from ksched.bus.messages import TraceEvent


def event(name: str, phase: str, ts: float, duration: float | None = None, trace: str = "t") -> TraceEvent:
    return TraceEvent(
        trace_id=f"{trace}-{name}",
        pod_uid=f"uid-{name}",
        namespace="bench",
        name=name,
        service="s",
        instance="i",
        phase=phase,
        ts=ts,
        duration=duration,
    )


def attempt(name: str, at: float) -> list[TraceEvent]:
    """A pod created at ``at``: each phase a millisecond after the one before, the cycle 2 ms."""
    ms = 0.001
    return [
        event(name, "queued", at + 1 * ms),
        event(name, "popped", at + 2 * ms),
        event(name, "snapshot", at + 3 * ms, 0.0),
        event(name, "filter", at + 3 * ms, 2 * ms),
        event(name, "assumed", at + 6 * ms, 3 * ms),
        event(name, "assume_check", at + 7 * ms, 1 * ms),
        event(name, "prebind", at + 9 * ms, 0.0),
        event(name, "bound", at + 9 * ms, 2 * ms),
    ]


def test_each_hop_is_the_time_between_two_phases_of_one_attempt() -> None:
    events = attempt("a", 100.0) + attempt("b", 200.0)
    events += [*attempt("retried", 300.0), event("retried", "queued", 300.5, trace="second")]
    events.append(event("other-namespace", "queued", 1.0))
    created = {"a": 100.0, "b": 200.0, "retried": 300.0, "unseen": 400.0}
    seen = {"a": 100.012, "b": 200.012, "retried": 300.012}
    result = hops.breakdown(events, "bench", created, seen)
    assert set(result) == set(hops.HOPS)
    assert {row["pods"] for row in result.values()} == {2}  # one attempt each, created and seen
    p50 = {hop: row["p50"] for hop, row in result.items()}
    assert p50["created -> queued (watch, informer, feed)"] == 1.0
    assert p50["cycle"] == 2.0
    assert p50["cycle -> assume sent"] == 1.0
    assert p50["informer: check, ledger, placement"] == 1.0
    assert p50["informer -> scheduler (reply)"] == 1.0
    assert p50["informer -> binder"] == 1.0
    assert p50["bind call"] == 2.0
    assert p50["bound -> watch"] == 1.0
    assert p50["total"] == 12.0
    assert hops.breakdown([], "bench", created, seen) == {}
