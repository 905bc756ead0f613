"""The pod group scheduling cycle's algorithm (upstream ``schedule_one_podgroup.go``,
``podGroupSchedulingDefaultAlgorithm`` and ``submitPodGroupAlgorithmResult``'s rules), independent of
how a member is scheduled: the scheduler service and ``ksched simulate`` supply that.

Every member is tried in order (priority, then first attempt); a member that fits (or needs a
preemption) is assumed and asked Permit, so later members see it. The group is schedulable iff some
member's Permit said Success; one that needs a preemption makes the whole group wait for it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from ksched.api.scheduling import REASON_SCHEDULED, REASON_SCHEDULER_ERROR, REASON_UNSCHEDULABLE
from ksched.framework.podinfo import PodInfo
from ksched.framework.status import Code, Status

T = TypeVar("T")

POD_GROUP_UNSCHEDULABLE = "pod group is unschedulable"
"""Upstream ``errPodGroupUnschedulable``: the error of a group that cannot be placed."""
WAITING_FOR_PREEMPTION = "pod group is waiting for preemption to complete"


@dataclass(slots=True)
class MemberAttempt(Generic[T]):
    """One member's part in the cycle, as the caller's scheduling of it went."""

    pod: PodInfo
    #: None: the member fits and is assumed, reserved and past Permit (``permit``); else why not
    status: Status | None
    #: the caller's own record of the attempt (a CycleOutcome, a simulation outcome ...)
    record: T
    #: Permit's answer for an assumed member: None (allowed) or its Wait status
    permit: Status | None = None
    #: the member does not fit but a preemption nominated a node; it is assumed there
    requires_preemption: bool = False
    #: undoes the member's assumption and Reserve (None when nothing was assumed)
    revert: Callable[[], None] | None = None

    @property
    def assumed(self) -> bool:
        return self.revert is not None


@dataclass(slots=True)
class GroupResult(Generic[T]):
    """What the cycle decided: ``status`` None is schedulable (its assumed members go on to bind);
    Unschedulable or an Error status otherwise (every assumption already reverted)."""

    members: list[MemberAttempt[T]]
    status: Status | None
    waiting_on_preemption: bool = False

    def member_status(self, member: MemberAttempt[T]) -> Status | None:
        """The status the member's attempt ends with (upstream ``submitPodGroupAlgorithmResult``):
        None for a member that goes to binding."""
        group = self.status
        if group is not None and group.code == Code.ERROR:
            return member.status if member.status is not None and member.status.code == Code.ERROR else group
        if member.status is None:
            if group is None:
                return None
            if self.waiting_on_preemption:
                return group
            return _pod_group_unschedulable(member.permit)
        if member.requires_preemption and not self.waiting_on_preemption:
            return _pod_group_unschedulable(member.permit)
        return member.status

    def nominated_where_assumed(self, member: MemberAttempt[T]) -> bool:
        """Whether the member fit while its group, unschedulable, waits for another member's
        preemption: upstream nominates it on the node it was assumed on (ModeOverride, SuggestedHost)."""
        return member.status is None and self.status is not None and self.waiting_on_preemption

    def evicts_unnominated(self, member: MemberAttempt[T]) -> bool:
        """Whether the member preempted in the group's cycle while the group waits for no preemption:
        upstream's PostFilter evicted its victims already (actuatePodPreemption), and its failure
        handler clears its nomination (clearNominatedNode)."""
        return member.requires_preemption and not self.waiting_on_preemption

    def condition(self) -> tuple[str, str, str]:
        """The PodGroupScheduled condition's (status, reason, message) for this outcome."""
        status = self.status
        if status is None:
            return "True", REASON_SCHEDULED, ""
        if status.code == Code.ERROR:
            return "False", REASON_SCHEDULER_ERROR, status.message
        return "False", REASON_UNSCHEDULABLE, status.message


def _pod_group_unschedulable(permit: Status | None) -> Status:
    reasons = permit.reasons if permit is not None else ()
    return Status(Code.UNSCHEDULABLE, *reasons, error=RuntimeError(POD_GROUP_UNSCHEDULABLE))


def member_order(pods: Sequence[tuple[PodInfo, float]]) -> list[int]:
    """Indexes of ``(pod, first attempt time)`` in the cycle's order: higher priority first, then the
    earlier first attempt (upstream sorts the popped members so)."""
    return sorted(range(len(pods)), key=lambda i: (-pods[i][0].priority, pods[i][1]))


class PodGroupRun(Generic[T]):
    """Upstream's default pod group algorithm, fed one member attempt at a time (so the caller may
    schedule members synchronously or not): :meth:`add` each, in order, while it says go on, then
    :meth:`finish`. A schedulable group keeps its members' assumptions for binding; any other
    outcome reverts them all."""

    def __init__(self) -> None:
        self.result: GroupResult[T] = GroupResult(
            [], Status(Code.UNSCHEDULABLE, error=RuntimeError(POD_GROUP_UNSCHEDULABLE))
        )
        self._requires_preemption = False

    def add(self, tried: MemberAttempt[T]) -> bool:
        """Record one member's attempt; False: the cycle stops here (an error)."""
        result = self.result
        result.members.append(tried)
        if tried.status is not None and not tried.requires_preemption:
            if tried.status.is_rejected():
                return True  # the group may still be schedulable without it
            message = f"failed to schedule other pod from a pod group: {tried.status.message}"
            result.status = Status.as_error(message)
            result.waiting_on_preemption = False
            return False
        self._requires_preemption = self._requires_preemption or tried.requires_preemption
        if tried.assumed and tried.permit is None:
            if self._requires_preemption:
                result.status = Status(
                    Code.UNSCHEDULABLE, WAITING_FOR_PREEMPTION, error=RuntimeError(POD_GROUP_UNSCHEDULABLE)
                )
                result.waiting_on_preemption = True
            else:
                result.status = None
        return True

    def finish(self) -> GroupResult[T]:
        result = self.result
        if result.status is not None:
            for tried in reversed(result.members):
                if tried.revert is not None:
                    tried.revert()
        return result


def run_pod_group(
    members: Sequence[PodInfo], attempt: Callable[[PodInfo], MemberAttempt[T]]
) -> GroupResult[T]:
    """:class:`PodGroupRun` over ``members`` (already in order) with a synchronous ``attempt``."""
    run: PodGroupRun[T] = PodGroupRun()
    for pod in members:
        if not run.add(attempt(pod)):
            break
    return run.finish()
