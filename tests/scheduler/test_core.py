"""A scheduler replica's bookkeeping and decisions without NATS (``ksched_scheduler.core``): how its
assumes are numbered and what a decision counted, the leases it holds, the placements it keeps for
Unreserve, and what it does with a replica behind a pod or a refused assume."""

from __future__ import annotations

from itertools import count
from typing import Any, cast

import msgspec
import pytest
from ksched_scheduler import core
from ksched_scheduler.core import CATCHING_UP, STALLED, Basis, SchedulerCore
from ksched_scheduler.cycle import CycleOutcome

from ksched.api.scheduling import PodGroup
from ksched.bus.messages import AssumeRejectCode, AssumeReply, LeasedPod, PendingPod


def leased(uid: str, *, epoch: str = "e", min_generation: int = 0) -> LeasedPod:
    pod = PendingPod(uid=uid, namespace="ns", name=uid, scheduler_name="default-scheduler")
    return LeasedPod(
        lease_id=f"l-{uid}",
        deadline=0.0,
        lease_seconds=30.0,
        pod=pod,
        epoch=epoch,
        min_generation=min_generation,
    )


def sessions() -> SchedulerCore:
    numbers = count(1)
    return SchedulerCore("s1", session=lambda: f"session-{next(numbers)}")


def outcome(name: str) -> CycleOutcome:
    return cast(CycleOutcome, name)  # the core keeps outcomes, never reads them


def named(kept: CycleOutcome | None) -> object:
    return cast(object, kept)


def test_a_decision_counts_the_assumes_still_without_an_answer() -> None:
    c = sessions()
    first = c.basis("e", 4)
    assert first == Basis("e", 4, first_unanswered=1)
    one, two = c.next_seq(first), c.next_seq(first)
    assert (one.seq, two.seq) == (1, 2)
    assert c.basis("e", 5) == Basis("e", 5, first_unanswered=1)
    c.answered([1])
    assert c.basis("e", 5).first_unanswered == 2
    c.answered([2])
    assert c.basis("e", 5).first_unanswered == 3  # none unanswered: from the next one


def test_an_assume_without_an_answer_starts_a_new_session_the_numbers_go_on() -> None:
    c = sessions()
    c.next_seq(c.basis("e", 1))
    assert c.session == "session-1"
    c.unreachable()
    c.answered([1])
    assert c.session == "session-2"
    assert c.next_seq(c.basis("e", 1)).seq == 2


def test_held_leases() -> None:
    c = sessions()
    a, b = leased("a"), leased("b")
    c.hold(a)
    c.hold(b)
    c.release("l-a")
    c.release("l-gone")  # an expired lease, already let go
    assert list(c.held) == ["l-b"]


def test_a_placement_is_kept_until_bound_or_unreserved() -> None:
    c = sessions()
    c.remember("a:1:1", leased("a"), outcome("oa"), 1.0)
    c.remember("b:1:2", leased("b"), outcome("ob"), 2.0)
    assert named(c.bound("a")) == "oa"
    assert c.bound("a") is None and c.unreserve("a:1:1") is None  # nothing held any more
    entry = c.unreserve("b:1:2")
    assert entry is not None and named(entry.outcome) == "ob" and entry.sent_at == 2.0
    assert c.bound("b") is None and not c.inflight


def test_a_pods_newer_placement_is_what_its_binding_ends() -> None:
    """An Unreserve of the pod's older placement leaves the newer one kept (and bound later)."""
    c = sessions()
    c.remember("a:1:1", leased("a"), outcome("old"), 1.0)
    c.remember("a:2:2", leased("a"), outcome("new"), 2.0)
    old = c.unreserve("a:1:1")
    assert old is not None and named(old.outcome) == "old"
    assert named(c.bound("a")) == "new"


def test_the_oldest_placements_are_forgotten_past_the_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(core, "MAX_REMEMBERED", 2)
    c = sessions()
    for uid in "abc":
        c.remember(f"{uid}:1:1", leased(uid), outcome(uid), 0.0)
    assert list(c.inflight) == ["b:1:1", "c:1:1"]
    assert c.bound("a") is None and named(c.bound("c")) == "c"


@pytest.mark.parametrize(
    ("batch", "epoch", "want"),
    [
        ([], "e", 0),
        ([leased("a", min_generation=3), leased("b", min_generation=9)], "e", 9),
        # leased before a failover of the informer: generations of another epoch do not compare
        ([leased("a", min_generation=3), leased("b", epoch="e0", min_generation=9)], "e", 3),
    ],
)
def test_the_generation_a_batch_waits_for(batch: list[LeasedPod], epoch: str, want: int) -> None:
    assert core.needed_generation(batch, epoch) == want


@pytest.mark.parametrize(
    ("now_epoch", "now_generation", "want"),
    [
        ("e", 7, None),  # caught up
        ("e", 8, None),
        ("e", 4, STALLED),  # no delta moved it: its stream is lost
        ("e", 5, CATCHING_UP),  # moving, not there yet
        ("e2", 1, None),  # bootstrapped a new epoch meanwhile
    ],
)
def test_a_replica_behind_a_pod(now_epoch: str, now_generation: int, want: str | None) -> None:
    assert core.behind("e", 4, 7, now_epoch, now_generation) == want


@pytest.mark.parametrize(
    ("code", "resync", "catch_up"),
    [
        (AssumeRejectCode.STALE_EPOCH, True, False),
        (AssumeRejectCode.DOES_NOT_FIT, False, True),
        (AssumeRejectCode.ALREADY_ASSUMED, False, False),
        (AssumeRejectCode.QUORUM_NOT_MET, False, False),
        ("Unreachable", False, False),
    ],
)
def test_what_a_refused_assume_makes_the_replica_do(code: str, resync: bool, catch_up: bool) -> None:
    refused = core.refusal(AssumeReply(accepted=False, code=code, reason="why"))
    assert (refused.resync, refused.catch_up) == (resync, catch_up)
    assert refused.message == f"{code}: why"


def pod_group(gang: dict[str, Any] | None) -> PodGroup:
    policy = {"gang": gang} if gang is not None else {"basic": {}}
    raw = {"metadata": {"name": "g", "namespace": "ns"}, "spec": {"schedulingPolicy": policy}}
    return msgspec.convert(raw, PodGroup)


@pytest.mark.parametrize(
    ("gate", "group", "want"),
    [
        (True, pod_group({"minCount": 2}), True),
        (False, pod_group({"minCount": 2}), False),
        (True, pod_group(None), False),
        (True, None, False),  # not (yet) in the replica's snapshot
    ],
)
def test_which_groups_are_committed_together(gate: bool, group: PodGroup | None, want: bool) -> None:
    assert core.is_gang(gate, group) is want


def test_percentiles_in_milliseconds() -> None:
    assert core.percentiles([]) == {}
    assert core.percentiles([0.001 * i for i in range(1, 101)]) == {"p50": 51.0, "p99": 100.0, "samples": 100}
