"""A pod group cycle on a scheduler replica (GenericWorkload; docs/gang.md): upstream's pod group
algorithm (``ksched.framework.podgroup_cycle``) over the members the queue leased together, each
member scheduled by the replica's :class:`~ksched_scheduler.cycle.SchedulingCycle` on its snapshot.

A member that fits is assumed in the replica's snapshot, reserved and asked Permit; one that waits
there is held in the framework's waiting pods, where a later member's Permit (GangScheduling's
quorum) allows it. Whatever a member still waits for after the cycle goes with its placement to the
binder. A group that is not schedulable has every local assumption undone before this returns.
"""

from __future__ import annotations

from collections.abc import Sequence

from ksched.api.core import Pod
from ksched.framework.podgroup_cycle import GroupResult, MemberAttempt, PodGroupRun, member_order
from ksched.framework.podinfo import PodInfo
from ksched.framework.status import Code, Status
from ksched_scheduler.cycle import SCHEDULED, UNSCHEDULABLE, CycleOutcome, SchedulingCycle


class GroupCycle:
    """Runs pod group cycles on one replica's :class:`SchedulingCycle`."""

    def __init__(self, cycle: SchedulingCycle) -> None:
        self.cycle = cycle

    @staticmethod
    def order(members: Sequence[tuple[Pod, float]]) -> list[int]:
        """The cycle's order of ``(pod, first attempt time)`` (priority, then first attempt)."""
        return member_order([(PodInfo(pod), at) for pod, at in members])

    def run(self, pods: Sequence[Pod]) -> GroupResult[CycleOutcome]:
        """The group cycle of ``pods`` (in the cycle's order), every member in flight (upstream pops
        them together: their nominations keep no room, :meth:`Nominator.in_flight`)."""
        run: PodGroupRun[CycleOutcome] = PodGroupRun()
        with self.cycle.nominator.in_flight(p.metadata.uid for p in pods):
            for pod in pods:
                if not run.add(self.member(self.cycle.run(pod, pod_group_cycle=True))):
                    break
        return self.finish(run)

    async def run_async(self, pods: Sequence[Pod]) -> GroupResult[CycleOutcome]:
        """:meth:`run` consulting the profile's extenders."""
        run: PodGroupRun[CycleOutcome] = PodGroupRun()
        with self.cycle.nominator.in_flight(p.metadata.uid for p in pods):
            for pod in pods:
                if not run.add(self.member(await self.cycle.run_async(pod, pod_group_cycle=True))):
                    break
        return self.finish(run)

    def member(self, out: CycleOutcome) -> MemberAttempt[CycleOutcome]:
        """One member's part: assumed (maybe waiting at Permit), assumed on the node a preemption
        nominated (upstream assumes it there so the rest of the group sees it), or not placed."""
        if out.kind == SCHEDULED:
            return self._assumed(out, None)
        if out.kind == UNSCHEDULABLE and out.nominated_node:
            rejected = Status(Code.UNSCHEDULABLE, out.message)
            failure = self.cycle.reserve_and_permit(out, out.nominated_node)
            if failure is None:
                return self._assumed(out, rejected)
            # upstream: the member's status is that failure, its nomination cleared; the eviction
            # its PostFilter started during the cycle goes on
            self.cycle.failed_on(out, out.nominated_node, failure)
            out.node, out.nominated_node, out.evict_only = "", "", bool(out.victims)
        code = Code.UNSCHEDULABLE if out.kind == UNSCHEDULABLE else Code.ERROR
        return MemberAttempt(out.pod, Status(code, out.message), out)

    def _assumed(self, out: CycleOutcome, preempting: Status | None) -> MemberAttempt[CycleOutcome]:
        waiting = out.fw.waiting_pods
        if out.permit is not None:
            waiting.add(out.pod, out.permit_waits)

        def revert() -> None:
            waiting.remove(out.pod.uid)
            self.cycle.forget_locally(out)

        return MemberAttempt(out.pod, preempting, out, out.permit, preempting is not None, revert)

    @staticmethod
    def finish(run: PodGroupRun[CycleOutcome]) -> GroupResult[CycleOutcome]:
        """End the cycle: the members going to binding take what they still wait for at Permit."""
        result = run.finish()
        for member in result.members:
            out = member.record
            held = out.fw.waiting_pods.remove(out.pod.uid)
            if held is not None and result.status is None:
                out.permit_waits = dict(held.pending)
        return result
