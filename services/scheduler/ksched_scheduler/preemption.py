"""What a scheduling cycle's PostFilter decided, carried out off the serial cycle.

For an unschedulable pod, upstream's failure handler updates the nominator from the PostFilter
result (override: the nominated node, or none; no result: keep the pod's current nomination) and,
with SchedulerAsyncPreemption, DefaultPreemption has started a goroutine that preempts. Here:

* :meth:`PreemptionRunner.after_failure` updates the replica's nominations at once (the preemptor on
  its node; lower-priority pods nominated there lose theirs) and submits the API effects to the
  profile's :class:`~ksched.plugins.defaultpreemption.PreemptionExecutor` as a task: clear the
  lower-priority nominations, mark each victim ``DisruptionTarget`` and delete it. When every victim
  is being deleted already, upstream's executor starts no goroutine, so nothing of that happens: the
  lower-priority pods keep their nominations and the preemptor is not held back (seed 9510, case
  1225: a second preemptor on a node whose victim was still terminating). The preemptor's
  own ``nominatedNodeName`` is written with its PodScheduled condition by the service's reporter
  (:func:`status_nomination`), as upstream's ``updatePod`` does, and the task starts once that write
  is done: upstream's write (one call) comes before its last victim's deletion (two calls, the
  ``DisruptionTarget`` patch first), so its queue meets the pod's own update while the preemption
  runs, and DefaultPreemption's PreEnqueue holds the pod back. A status write that came after the
  deletion would pass PreEnqueue and, with an extender among the rejectors (wildcard events), retry
  the pod at once (seed 8401, case 147, on a loaded machine);
* a ``Preempted`` event (``Preempted by pod <uid> on node <node>``, related to the preemptor) is
  recorded on each victim the task deleted;
* while a preemption for a pod is under way, another cycle of that pod does not start a second one.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from ksched.client.rest import Client
from ksched.framework.podinfo import PodInfo
from ksched.framework.results import NominatingMode, PostFilterResult
from ksched.logcontext import node_logging
from ksched.plugins.defaultpreemption import NAME, DefaultPreemption, PreemptionPlan, PreemptionResult
from ksched.plugins.defaultpreemption.effects import PreemptionReport
from ksched.reporting.reporter import PodRef, Reporter
from ksched.service.tasks import TaskGroup
from ksched_scheduler import metrics
from ksched_scheduler.cycle import CycleOutcome
from ksched_scheduler.nominations import NominationTracker

log = logging.getLogger(__name__)


def status_nomination(pod: PodInfo, result: PostFilterResult | None, evict_only: bool = False) -> str | None:
    """The ``nominatedNodeName`` to write with the pod's condition ("" clears it), or None to leave
    it: only an overriding result that changes it (upstream ``updatePod``); ``evict_only``: a pod
    group member whose group waits for no preemption, cleared (upstream ``clearNominatedNode``)."""
    current = pod.pod.status.nominated_node_name or ""
    if evict_only:
        return "" if current else None
    if result is None or result.mode != NominatingMode.OVERRIDE:
        return None
    return None if result.nominated_node_name == current else result.nominated_node_name


def preempted_message(preemptor_uid: str, node: str) -> str:
    """Upstream's ``Preempted`` event text on a victim."""
    return f"Preempted by pod {preemptor_uid} on node {node}"


def _ref(pod: PodInfo) -> PodRef:
    meta = pod.pod.metadata
    return PodRef(meta.namespace, meta.name, meta.uid)


class PreemptionRunner:
    """Applies PostFilter outcomes to the nominations and runs preemptions in the background."""

    def __init__(
        self,
        api: Client | None,
        reporter: Reporter | None,
        nominations: NominationTracker,
        tasks: TaskGroup,
    ) -> None:
        self.api = api
        self.tasks = tasks
        self.reporter = reporter
        self.nominations = nominations
        self.started = 0
        self.failed = 0

    def after_failure(self, outcome: CycleOutcome, after: asyncio.Future[Any] | None = None) -> str:
        """Upstream's nominator update for an unschedulable cycle, then the preemption itself, whose
        API calls start once ``after`` (the preemptor's status write) is done.
        Returns ``namespace/name`` of the victim the preemption deletes last ("" when it started none):
        the queue keeps the pod back until its feed shows that victim being deleted (upstream's
        DefaultPreemption PreEnqueue while the preemption runs)."""
        result, pod = outcome.post_filter, outcome.pod
        if result is None or result.mode != NominatingMode.OVERRIDE:
            return ""
        node = result.nominated_node_name
        if not node or outcome.evict_only:
            self.nominations.clear(pod.uid)
        else:
            self.nominations.nominate(pod, node)
        if not node or not isinstance(result, PreemptionResult):  # evict_only: the victims go all the same
            return ""
        plan = PreemptionPlan.from_result(pod.pod, result)
        last = plan.last_victim
        if last is None:
            return ""  # every victim is being deleted already: no preemption starts, nothing is cleared
        metrics.PREEMPTION_VICTIMS.observe(len(plan.victims))  # as upstream's executor, once it starts
        for lower in result.lower_priority_nominated:
            self.nominations.clear(lower.uid)
        if self.api is None:
            return ""
        plugin = outcome.fw.plugin(NAME)
        if not isinstance(plugin, DefaultPreemption):
            return ""
        if plugin.executor.is_running(pod.uid):
            return ""  # the victims of an earlier cycle are still being deleted
        self.started += 1
        with node_logging(node):  # the preemption task's log lines name the preemptor and its node
            plugin.executor.submit(
                self.api,
                plan,
                nominate=False,
                on_done=lambda report: self._done(plan, report),
                spawn=lambda coro: self.tasks.job("preemption", coro),
                after=after,
            )
        return last.key

    def _done(self, plan: PreemptionPlan, report: PreemptionReport) -> None:
        preemptor = PodInfo(plan.preemptor)
        deleted = set(report.deleted)
        if self.reporter is not None:
            note = preempted_message(preemptor.uid, plan.node_name)
            for victim in plan.victims:
                info = PodInfo(victim)
                if info.key in deleted:
                    self.reporter.event(
                        _ref(info),
                        "Normal",
                        "Preempted",
                        "Preempting",
                        note,
                        _ref(preemptor),
                        controller=plan.preemptor.spec.scheduler_name,
                    )
        if not report.ok:
            self.failed += 1
            log.warning(
                "preemption for %s on %s: %s", preemptor.key, plan.node_name, "; ".join(report.errors)
            )
