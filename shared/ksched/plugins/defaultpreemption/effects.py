"""Carrying out a preemption through the API server (upstream ``preemption.Executor`` with
SchedulerAsyncPreemption), off the scheduling cycle.

How a service performs the effects of a :class:`~.result.PreemptionResult` for preemptor ``P``
nominated to node ``N``:

1. set ``P``'s ``status.nominatedNodeName`` to ``N`` (upstream's scheduling-failure handler does this
   together with the ``PodScheduled=False`` condition; ``execute_preemption(nominate=True)`` does
   only the nomination) so every scheduler replica keeps room for ``P`` on ``N`` (two-pass Filter);
2. if no victim is left to delete (each is being deleted already), stop here: upstream's async
   executor then starts no goroutine, so it neither clears nominations nor deletes anything;
   otherwise clear ``status.nominatedNodeName`` of ``result.lower_priority_nominated`` (they may no
   longer fit on ``N``; clearing sends them back to the active queue);
3. for each victim not already being deleted: add the condition ``DisruptionTarget=True``, reason
   ``PreemptionByScheduler``, message ``<schedulerName>: preempting to accommodate a higher
   priority pod`` with a strategic-merge patch of ``pods/status``, then delete the pod (default
   grace period). NotFound at either step means the victim is already gone. All victims but the
   last are handled concurrently, the last one after them (skipped when another failed);
4. keep ``P`` out of the active queue until step 3 is over: :meth:`PreemptionExecutor.submit` marks
   ``P`` synchronously (call it before ``P`` can be requeued) and the plugin's PreEnqueue rejects it
   while the mark stands; the mark ends when the task does, or once the last victim is gone from
   (or being deleted in) the scheduler's snapshot.

Nothing here touches the scheduler's snapshot: victims leave it through the informer's delete
events, and ``P`` is scheduled again (onto the freed room) when its rejecting plugins' queueing
hints fire on those events.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from ksched.api.core import Pod
from ksched.api.kinds import POD
from ksched.api.timestamps import rfc3339
from ksched.client.rest import STRATEGIC_MERGE_PATCH, Client
from ksched.plugins.defaultpreemption.result import PreemptionResult

log = logging.getLogger(__name__)

DISRUPTION_TARGET: Final = "DisruptionTarget"
REASON_PREEMPTION_BY_SCHEDULER: Final = "PreemptionByScheduler"
_NOT_FOUND = 404


def disruption_message(scheduler_name: str) -> str:
    return f"{scheduler_name}: preempting to accommodate a higher priority pod"


@dataclass(frozen=True, slots=True)
class PreemptionPlan:
    """What one preemption changes through the API."""

    preemptor: Pod
    node_name: str
    victims: tuple[Pod, ...]
    lower_priority_nominated: tuple[Pod, ...] = ()

    @classmethod
    def from_result(cls, preemptor: Pod, result: PreemptionResult) -> PreemptionPlan:
        return cls(
            preemptor=preemptor,
            node_name=result.nominated_node_name,
            victims=tuple(v.pod for v in result.victims),
            lower_priority_nominated=tuple(p.pod for p in result.lower_priority_nominated),
        )

    @property
    def to_delete(self) -> list[Pod]:
        """The victims :func:`execute_preemption` deletes: those not being deleted already (upstream
        skips the others; with none, it starts no preemption)."""
        return [v for v in self.victims if v.metadata.deletion_timestamp is None]

    @property
    def last_victim(self) -> Pod | None:
        """The victim :func:`execute_preemption` deletes last, after the others (None: it deletes none)."""
        victims = self.to_delete
        return victims[-1] if victims else None


@dataclass(slots=True)
class PreemptionReport:
    """What :func:`execute_preemption` did; ``errors`` empty means everything succeeded."""

    nominated: bool = False
    cleared: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    already_gone: list[str] = field(default_factory=list)
    skipped_terminating: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.errors


def _key(pod: Pod) -> str:
    return f"{pod.metadata.namespace}/{pod.metadata.name}"


def disruption_condition(victim: Pod, scheduler_name: str) -> dict[str, Any] | None:
    """The DisruptionTarget condition to add, or None when the pod already has it as is."""
    message = disruption_message(scheduler_name)
    for cond in victim.status.conditions:
        if cond.type == DISRUPTION_TARGET and (cond.status, cond.reason, cond.message) == (
            "True",
            REASON_PREEMPTION_BY_SCHEDULER,
            message,
        ):
            return None
    cond_out: dict[str, Any] = {
        "type": DISRUPTION_TARGET,
        "status": "True",
        "reason": REASON_PREEMPTION_BY_SCHEDULER,
        "message": message,
        "lastTransitionTime": rfc3339(),
    }
    if victim.metadata.generation:
        cond_out["observedGeneration"] = victim.metadata.generation
    return cond_out


class ApiError(Exception):
    def __init__(self, status: int, body: str) -> None:
        super().__init__(f"{status}: {body}")
        self.status = status


async def _checked(api: Client, method: str, path: str, body: Any = None) -> None:
    """One request (no timeout, as the generated client had); ApiError for an error response."""
    status, data = await api.request(method, path, body, STRATEGIC_MERGE_PATCH, timeout=None)
    if status >= 400:
        raise ApiError(status, data.decode("utf-8", "replace")[:500])


def _pod_path(pod: Pod) -> str:
    return POD.object_path(pod.metadata.namespace, pod.metadata.name)


async def _patch_status(api: Client, pod: Pod, status: dict[str, Any]) -> None:
    await _checked(api, "PATCH", _pod_path(pod) + "/status", {"status": status})


async def preempt_victim(core: Client, victim: Pod, scheduler_name: str, report: PreemptionReport) -> None:
    """Mark ``victim`` DisruptionTarget and delete it; NotFound counts as done."""
    key = _key(victim)
    try:
        condition = disruption_condition(victim, scheduler_name)
        if condition is not None:
            await _patch_status(core, victim, {"conditions": [condition]})
        await _checked(core, "DELETE", _pod_path(victim))
        report.deleted.append(key)
    except ApiError as exc:
        if exc.status != _NOT_FOUND:
            report.errors.append(f"preempting victim {key}: {exc}")
            return
        report.already_gone.append(key)


async def execute_preemption(
    core: Client,
    plan: PreemptionPlan,
    *,
    nominate: bool = True,
    on_last_victim: Callable[[Pod], None] | None = None,
) -> PreemptionReport:
    """Perform steps 1-3 of the module docstring with the API client."""
    report = PreemptionReport()
    preemptor = plan.preemptor
    if nominate:
        try:
            await _patch_status(core, preemptor, {"nominatedNodeName": plan.node_name})
            report.nominated = True
        except ApiError as exc:
            report.errors.append(f"nominating {_key(preemptor)} to {plan.node_name}: {exc}")
            return report
    victims = plan.to_delete
    report.skipped_terminating.extend(_key(v) for v in plan.victims if v not in victims)
    if not victims:
        return report
    for pod in plan.lower_priority_nominated:
        if not pod.status.nominated_node_name:
            continue
        try:
            await _patch_status(core, pod, {"nominatedNodeName": None})
            report.cleared.append(_key(pod))
        except ApiError as exc:  # not critical, as upstream
            if exc.status != _NOT_FOUND:
                log.warning("cannot clear nominatedNodeName of %s: %s", _key(pod), exc)
    scheduler = preemptor.spec.scheduler_name
    await asyncio.gather(*(preempt_victim(core, v, scheduler, report) for v in victims[:-1]))
    if report.errors:
        return report
    if on_last_victim is not None:
        on_last_victim(victims[-1])
    await preempt_victim(core, victims[-1], scheduler, report)
    return report


Spawn = Callable[[Coroutine[Any, Any, PreemptionReport]], asyncio.Task[Any]]
"""Runs a preemption's coroutine as a task."""

AFTER_TIMEOUT = 5.0
"""Seconds a preemption waits at most for what it runs after (:meth:`PreemptionExecutor.submit`)."""


class PreemptionExecutor:
    """Preemptions in flight, by preemptor uid (upstream ``Executor.preempting``)."""

    def __init__(self) -> None:
        self._running: dict[
            str, str | None
        ] = {}  # preemptor uid -> uid of the last victim, once it is being deleted
        self._tasks: set[asyncio.Task[Any]] = set()

    def is_running(self, preemptor_uid: str, victim_gone: Callable[[str], bool] | None = None) -> bool:
        """Whether ``preemptor_uid`` still waits for its preemption; done once the last victim is
        gone from (or being deleted in) the snapshot, as ``victim_gone`` tells."""
        if preemptor_uid not in self._running:
            return False
        last = self._running[preemptor_uid]
        if last is None or victim_gone is None:
            return True
        return not victim_gone(last)

    def begin(self, preemptor_uid: str) -> None:
        self._running[preemptor_uid] = None

    def end(self, preemptor_uid: str) -> None:
        self._running.pop(preemptor_uid, None)

    def running(self) -> Sequence[str]:
        return list(self._running)

    def submit(
        self,
        api_client: Client,
        plan: PreemptionPlan,
        *,
        nominate: bool = True,
        on_done: Callable[[PreemptionReport], None] | None = None,
        spawn: Spawn | None = None,
        after: asyncio.Future[Any] | None = None,
    ) -> asyncio.Task[Any]:
        """Mark the preemptor now and run :func:`execute_preemption` as a task (needs a running loop).
        ``on_done`` gets the report (a service re-activates the preemptor when it is not ``ok``);
        ``spawn`` runs the task (a service's TaskGroup job: named, and a bug ends the service);
        ``after``: what the effects wait for first (the preemptor's status write, at most
        :data:`AFTER_TIMEOUT` s, whatever its outcome)."""
        uid = plan.preemptor.metadata.uid
        self.begin(uid)

        def last_victim(pod: Pod) -> None:
            if uid in self._running:
                self._running[uid] = pod.metadata.uid

        async def run() -> PreemptionReport:
            try:  # the wait inside: a task cancelled while it waits ends the mark too
                if after is not None and not after.done():
                    await asyncio.wait({after}, timeout=AFTER_TIMEOUT)
                report = await execute_preemption(
                    api_client, plan, nominate=nominate, on_last_victim=last_victim
                )
            except Exception as exc:  # a transport failure: report it, never lose the mark
                report = PreemptionReport(errors=[f"preemption of {_key(plan.preemptor)}: {exc!r}"])
            finally:
                self.end(uid)
            if on_done is not None:
                on_done(report)
            return report

        task: asyncio.Task[Any] = (
            spawn(run()) if spawn is not None else asyncio.get_running_loop().create_task(run())
        )
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task
