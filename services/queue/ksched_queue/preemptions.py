"""The preemptions the scheduler replicas run, as the queue sees them.

Upstream (SchedulerAsyncPreemption) a pod whose PostFilter started a preemption is kept out of the
active queue while the preemption's goroutine deletes the victims: DefaultPreemption's PreEnqueue
gates it ("waiting for the preemption for this pod to be finished") as long as
``Executor.IsPodRunningPreemption`` says so, which is until the last victim is being deleted (or
gone) in the scheduler's lister. Gated by DefaultPreemption, the pod is then moved by a Pod/Delete
event only (its ``GatingPluginEvents``), not by its own status update nor by the victims' updates.

Here the preemption runs in a replica; the end of the attempt names the victim it deletes last
(``DoneRequest.preemption_last_victim``). :class:`QueuePreemptions` marks the pod running in the
queue-side DefaultPreemption's executor, so that plugin's PreEnqueue gates it as upstream's does, and
ends the mark when the feed shows that victim being deleted or gone. A mark the feed never ends (the
replica failed to delete a victim, or went away) ends after ``timeout`` seconds, and the pod is then
activated, as upstream activates the preemptor when an API call of the preemption failed.
"""

from __future__ import annotations

from dataclasses import dataclass

from ksched.plugins.defaultpreemption.effects import PreemptionExecutor

PREEMPTION_TIMEOUT = 30.0
"""Seconds after which a preemption the feed did not see end is taken for failed."""


@dataclass(slots=True)
class _Running:
    victim: str
    deadline: float
    executor: PreemptionExecutor


class QueuePreemptions:
    """Pods waiting for their preemption, by uid, and the victim (``namespace/name``) that ends it."""

    def __init__(self, timeout: float = PREEMPTION_TIMEOUT) -> None:
        self.timeout = timeout
        self._by_pod: dict[str, _Running] = {}
        self._by_victim: dict[str, set[str]] = {}

    def __len__(self) -> int:
        return len(self._by_pod)

    def __contains__(self, uid: object) -> bool:
        return uid in self._by_pod

    def begin(self, uid: str, victim: str, executor: PreemptionExecutor, now: float) -> None:
        """``uid``'s preemption runs until ``victim`` is being deleted (PreEnqueue gates it meanwhile)."""
        self.end(uid)
        executor.begin(uid)
        self._by_pod[uid] = _Running(victim, now + self.timeout, executor)
        self._by_victim.setdefault(victim, set()).add(uid)

    def end(self, uid: str) -> bool:
        """The mark of ``uid`` is gone (PreEnqueue passes again); False if it had none."""
        running = self._by_pod.pop(uid, None)
        if running is None:
            return False
        running.executor.end(uid)
        waiting = self._by_victim.get(running.victim)
        if waiting is not None:
            waiting.discard(uid)
            if not waiting:
                del self._by_victim[running.victim]
        return True

    def waits_for(self, victim: str) -> bool:
        """Whether some preemption ends when ``victim`` (``namespace/name``) is being deleted."""
        return victim in self._by_victim

    def victim_deleting(self, victim: str) -> list[str]:
        """``victim`` is being deleted or gone: the preemptions it ends, ended."""
        uids = sorted(self._by_victim.get(victim, ()))
        for uid in uids:
            self.end(uid)
        return uids

    def expired(self, now: float) -> list[str]:
        """The preemptions past their deadline, ended."""
        uids = sorted(uid for uid, running in self._by_pod.items() if running.deadline <= now)
        for uid in uids:
            self.end(uid)
        return uids
