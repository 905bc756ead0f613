"""The backoffQ alone (``ksched_queue.backoff_queue``, upstream backoff_queue.go): durations,
window alignment, the two heaps, their order, and popping what completed."""

from __future__ import annotations

import pytest
from ksched_queue.backoff_queue import BackoffQueue
from ksched_queue.queued_pod import QueuedPod, decode_pending_pod

from tests.queue.testing import START, FakeClock, pending_of, pod

PROFILE = "default-scheduler"


def entry(name: str, *, seq: int, failed_at: float, unschedulable: int = 0, errors: int = 0) -> QueuedPod:
    pending = pending_of(pod(name))
    e = QueuedPod(pending, decode_pending_pod(pending), failed_at, seq)
    e.unschedulable_count = unschedulable
    e.info.consecutive_errors = errors
    if unschedulable:
        e.info.unschedulable_plugins = {"NodeResourcesFit"}
    return e


def by_seq(a: QueuedPod, b: QueuedPod) -> bool:
    return a.seq < b.seq


def queue(clock: FakeClock, **kw: float | bool) -> BackoffQueue:
    return BackoffQueue([PROFILE], by_seq, clock=clock, **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("initial", "maximum", "count", "expected"),
    [
        (1.0, 10.0, 0, 0.0),
        (1.0, 10.0, 1, 1.0),
        (1.0, 10.0, 2, 2.0),
        (1.0, 10.0, 4, 8.0),
        (1.0, 10.0, 5, 10.0),  # capped
        (1.0, 10.0, 1000, 10.0),  # no overflow
        (0.5, 60.0, 3, 2.0),
        (2.0, 1.0, 1, 1.0),  # max below initial
    ],
)
def test_duration(initial: float, maximum: float, count: int, expected: float) -> None:
    q = queue(FakeClock(START), initial=initial, maximum=maximum)
    assert q.duration(count) == expected


def test_negative_durations_are_refused() -> None:
    with pytest.raises(ValueError, match="must not be negative"):
        queue(FakeClock(START), initial=-1.0)


def test_backoff_end_is_aligned_to_the_window_and_counts_errors_first() -> None:
    clock = FakeClock(START)
    q = queue(clock)
    rejected = entry("a", seq=1, failed_at=START + 0.7, unschedulable=3)
    assert q.backoff_time(rejected) == START + 4  # floor(START + 0.7 + 4)
    errored = entry("b", seq=2, failed_at=START + 0.7, unschedulable=3, errors=1)
    assert q.backoff_time(errored) == START + 1  # consecutive errors count, not unschedulable attempts
    unaligned = queue(clock, pop_from_backoff=False)
    assert unaligned.backoff_time(entry("c", seq=3, failed_at=START + 0.7, unschedulable=1)) == START + 1.7


def test_a_backoff_ending_within_the_current_window_is_still_running() -> None:
    clock = FakeClock(START + 0.2)
    q = queue(clock)
    e = entry("a", seq=1, failed_at=START - 0.5, unschedulable=1)  # ends at floor(START + 0.5) = START
    assert q.is_backing_off(e)
    clock.advance(0.8)  # START + 1.0: the next window
    assert not q.is_backing_off(e)


def test_zero_maximum_means_no_backoff() -> None:
    q = queue(FakeClock(START), maximum=0.0)
    assert q.backoff_time(entry("a", seq=1, failed_at=START, unschedulable=5)) == 0.0


def test_rejected_and_errored_pods_wait_in_separate_heaps() -> None:
    clock = FakeClock(START)
    q = queue(clock)
    rejected = entry("rejected", seq=2, failed_at=START, unschedulable=1)
    errored = entry("errored", seq=1, failed_at=START, errors=1)
    q.add(rejected)
    q.add(errored)
    assert len(q) == 2 and "uid-rejected" in q and q.get("uid-errored") is errored
    # only the heap of pods rejected by plugins is popped from while activeQ is empty
    assert q.has_poppable(PROFILE)
    assert q.head([PROFILE]) is rejected
    q.pop_head(rejected)
    assert not q.has_poppable(PROFILE) and q.head([PROFILE]) is None
    assert q.delete(errored) and not q.delete(errored) and len(q) == 0


def test_order_is_backoff_end_then_the_active_order() -> None:
    clock = FakeClock(START)
    q = queue(clock)
    late = entry("late", seq=1, failed_at=START, unschedulable=3)  # ends START + 4
    early_second = entry("early-second", seq=3, failed_at=START, unschedulable=1)  # START + 1
    early_first = entry("early-first", seq=2, failed_at=START, unschedulable=1)  # START + 1, seq first
    for e in (late, early_second, early_first):
        q.add(e)
    assert q.head([PROFILE]) is early_first
    clock.advance(1.0)
    assert q.pop_all_completed() == []  # ending within the current window: still running
    clock.advance(1.0)
    done = q.pop_all_completed()
    assert [e.uid for e in done] == ["uid-early-first", "uid-early-second"]
    assert [e.uid for e in q] == ["uid-late"]
    clock.advance(3.0)
    assert [e.uid for e in q.pop_all_completed()] == ["uid-late"]


def test_update_reorders_within_the_heap_that_holds_the_pod() -> None:
    clock = FakeClock(START)
    q = queue(clock)
    a = entry("a", seq=1, failed_at=START, unschedulable=3)
    b = entry("b", seq=2, failed_at=START, unschedulable=1)
    q.add(a)
    q.add(b)
    assert q.head([PROFILE]) is b
    b.unschedulable_count, b.backoff_expiration = 5, None  # now ends after a
    q.update(b)
    assert q.head([PROFILE]) is a
