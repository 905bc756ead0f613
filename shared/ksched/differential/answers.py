"""The real scheduler's answer for one pod, read from its log: the first scheduling attempt of the pod
(what ``ksched simulate``, which tries each pod once, decides too).

The answer has the shape of the goldens of ``../shared/fidelity-public`` (``NNN.expected.json``):
``pod``, ``node`` (None when not placed), ``feasible`` (sorted), ``scores`` {node: {plugin: weighted
score}}, ``totals``, ``top_nodes``, ``message`` (the FailedScheduling text), ``scoring_skipped``,
and for a pod that was not placed ``nominated`` and ``victims``; ``binding_failed`` for a pod whose
scheduling cycle chose a node and whose binding failed (``node`` None, ``message`` the error, as the
API server shows it; :func:`ksched.differential.compare.as_scheduled` is what ``ksched simulate``,
which does not bind, is compared with).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ksched.differential.extender import score_key, weighted
from ksched.differential.klog import Entry

ATTEMPT = "Attempting to schedule pod"
GROUP_ATTEMPT = "Attempting to schedule a pod belonging to a pod group"
"""A member's attempt in a pod group cycle (schedule_one_podgroup.go at V(4))."""
SCORED = "Plugin scored node for pod"
EXTENDER_SCORED = "Extender scored node for pod"
"""An extender's raw score (schedule_one.go at V(10)), kept weighted under ``extender/NAME``."""
TOTAL = "Calculated node's final score for pod"
BOUND = "Successfully bound pod to node"
NO_FIT = "Unable to schedule pod; no fit; waiting"
NO_NODES = "Unable to schedule pod; no nodes are registered to the cluster; waiting"
GROUP_WAIT = "Unable to schedule pod belonging to a pod group; waiting"
GROUP_ENDS: dict[str, tuple[str, str, str]] = {
    "Successfully scheduled a pod group": ("True", "Scheduled", ""),
    "Unable to schedule a pod group": ("False", "Unschedulable", "pod group is unschedulable"),
    "Pod group is waiting for preemption": (
        "False",
        "Unschedulable",
        "pod group is unschedulable, pod group is waiting for preemption to complete",
    ),
}
"""How a pod group cycle ended (schedule_one_podgroup.go, V(2)), and the ``PodGroupScheduled``
condition (status, reason, message) it writes then (the message is the status's ``Message()``: its
error, ``pod group is unschedulable``, then its reasons)."""
FAILED_ENDS = (NO_FIT, NO_NODES, GROUP_WAIT)
SCHEDULING_ERROR = "Error scheduling pod; retrying"
"""An attempt that ended in an Error status (a non-ignorable extender's failure, a plugin's error):
its ``err`` is the PodScheduled message (reason ``SchedulerError``) and the FailedScheduling text,
compared like any other; nothing is nominated."""
BIND_FAILED = "Failed to bind pod"
"""The binding cycle failed (a bind extender's error, the API's refusal): the scheduling cycle chose a
node (its scores and totals are logged), and the :data:`SCHEDULING_ERROR` line that follows gives the
error, the PodScheduled message (reason ``SchedulerError``)."""
PRE_BIND_ERROR = 'running PreBind plugin "'
"""How the :data:`SCHEDULING_ERROR` of a PreBind plugin's failure begins: the binding cycle failed,
on the node the pod was nominated to when its binding began (1.36 writes that nomination first when a
PreBind plugin has work to do), with no :data:`BIND_FAILED` line."""
UPSTREAM_BUGS = ("nil or empty request mappings, no update of pod",)
"""Errors of kube-scheduler 1.36.2 that ksched does not copy (docs/dra.md, "Where ksched differs on
purpose"): DynamicResources' PreBind fails for a pod with claims of its own and an extended resource
that the chosen node's device plugin offers (``patchPodExtendedResourceClaimStatus`` with no mapping)."""
NOMINATION = "Updating pod condition and nominated node name"
PREEMPTION_START = "Start the preemption asynchronously"
PREEMPTED = "Preemptor Pod preempted victim Pod"
ALREADY_DELETING = "Victim Pod is already being deleted, skipping the API call for it"
PREEMPTION_DONE = "Async Preemption finished completely"


@dataclass
class Attempt:
    """What the log says about a pod's first attempt so far."""

    pod: str
    started: bool = False
    ended: bool = False
    node: str | None = None
    feasible_count: int | None = None
    scores: dict[str, dict[str, int]] = field(default_factory=dict)
    totals: dict[str, int] = field(default_factory=dict)
    message: str | None = None
    nomination_seen: bool = False
    nominated: str | None = None
    preemption_started: bool = False
    preemption_done: bool = False
    already_deleting: bool = False
    """A victim of its preemption was being deleted already (upstream skips it)."""
    victims: list[str] = field(default_factory=list)
    group_wait: bool = False
    """A pod group member that fit (scored, assumed) while its group did not."""
    failed_with_error: bool = False
    """Ended with :data:`SCHEDULING_ERROR` (``message`` is the error)."""
    bind_failed: bool = False
    """Ended with :data:`BIND_FAILED` (``message`` is the error once its line is read), or with a
    PreBind plugin's error (:data:`PRE_BIND_ERROR`)."""
    binding_node: str | None = None
    """The node it was nominated to before it ended (a binding cycle with PreBind work began there)."""

    @property
    def complete(self) -> bool:
        """Nothing more to wait for: ended, and when not placed, the nomination is recorded and, for a
        nominated pod, the asynchronous preemption has deleted its victims (its first line may come
        after the nomination's)."""
        if not self.ended:
            return False
        if self.bind_failed:
            return self.message is not None
        if self.node is not None or self.failed_with_error:
            return True
        if self.nominated and not self.group_wait:  # its asynchronous preemption is logged after
            return self.preemption_started and self.preemption_done
        # a member whose group waits for a preemption is nominated where it was assumed, and may
        # have preempted nothing itself (seed 4102, case 5 of the gangs)
        return self.nomination_seen and (self.preemption_done or not self.preemption_started)

    @property
    def maybe_no_goroutine(self) -> bool:
        """Nominated, with a victim being deleted already and no asynchronous preemption seen yet:
        upstream starts none when every victim of its candidate is (``prepareCandidateAsync``), and
        then nothing more is logged; its first line otherwise comes within milliseconds."""
        return (
            self.ended
            and self.nomination_seen
            and self.nominated is not None
            and not self.group_wait
            and self.already_deleting
            and not self.preemption_started
        )


def first_attempt(entries: Sequence[Entry], pod: str) -> Attempt:
    """The first attempt of ``pod`` (``ns/name``) in ``entries``, as far as they go."""
    out = Attempt(pod)
    for e in entries:
        values = e.values
        if e.msg in (PREEMPTION_START, PREEMPTED, ALREADY_DELETING, PREEMPTION_DONE):
            if values.get("preemptor") == pod and out.started:
                _preemption(out, e)
            continue
        if values.get("pod") != pod:
            continue
        if e.msg in (ATTEMPT, GROUP_ATTEMPT):
            if out.started:
                break  # a later attempt: only the first one counts
            out.started = True
        elif not out.started:
            continue
        elif out.ended:
            if e.msg == SCHEDULING_ERROR and out.bind_failed and out.message is None:
                out.message = values.get("err") or ""
            elif e.msg == NOMINATION and not out.nomination_seen:
                out.nomination_seen = True
                out.nominated = values.get("nominatedNodeName") or None
        elif e.msg == SCORED:
            out.scores.setdefault(values["node"], {})[values["plugin"]] = int(values["score"])
        elif e.msg == EXTENDER_SCORED and (name := score_key(values["extender"])) is not None:
            out.scores.setdefault(values["node"], {})[name] = weighted(
                values["extender"], int(values["score"])
            )
        elif e.msg == TOTAL:
            out.totals[values["node"]] = int(values["score"])
        elif e.msg == BOUND:
            out.ended = True
            out.node = values.get("node")
            count = values.get("feasibleNodes")
            out.feasible_count = int(count) if count and count.isdigit() else None
        elif e.msg in FAILED_ENDS:
            out.ended = True
            out.message = values.get("err")
            out.group_wait = e.msg == GROUP_WAIT
        elif e.msg == NOMINATION:
            out.binding_node = values.get("nominatedNodeName") or None
        elif e.msg == SCHEDULING_ERROR:
            out.ended = True
            out.message = values.get("err")
            if (out.message or "").startswith(PRE_BIND_ERROR) and out.binding_node:
                out.bind_failed = True
            else:
                out.failed_with_error = True
        elif e.msg == BIND_FAILED:
            out.ended = True
            out.bind_failed = True
    return out


def bound_attempt(entries: Sequence[Entry], pod: str) -> Attempt | None:
    """The attempt of ``pod`` that placed it (the last one), None if none did."""
    starts = [
        i for i, e in enumerate(entries) if e.msg in (ATTEMPT, GROUP_ATTEMPT) and e.values.get("pod") == pod
    ]
    for i in reversed(starts):
        attempt = first_attempt(entries[i:], pod)
        if attempt.node is not None:
            return attempt
    return None


def _preemption(out: Attempt, e: Entry) -> None:
    if e.msg == PREEMPTION_START:
        out.preemption_started = True
    elif e.msg == PREEMPTION_DONE:
        out.preemption_done = True
    else:
        out.already_deleting |= e.msg == ALREADY_DELETING
        victim = e.values.get("victim")
        if victim and victim not in out.victims:
            out.victims.append(victim)


def answer(attempt: Attempt) -> dict[str, Any]:
    """The golden of one pod from its attempt (see the module's docstring). ``feasible`` is None
    when the log does not tell (a placement without scores on more than one feasible node)."""
    node = attempt.node
    feasible: list[str] | None
    skipped = False
    if node is None and (attempt.group_wait or attempt.bind_failed) and attempt.totals:
        # it fit; its group did not, or its binding failed
        feasible, totals = sorted(attempt.totals), attempt.totals
    elif node is None and attempt.bind_failed and attempt.binding_node:
        # placed without scoring (the only feasible node) where its binding began
        feasible, totals, skipped = [attempt.binding_node], {}, True
    elif node is None and attempt.bind_failed:
        feasible, totals = None, {}  # placed without scoring on a node the log does not name
    elif node is None:
        feasible, totals = [], {}
    elif attempt.totals:
        feasible, totals = sorted(attempt.totals), attempt.totals
    elif attempt.feasible_count in (1, None):
        feasible, totals, skipped = [node], {}, True
    else:
        feasible, totals = None, {}
    best = max(totals.values(), default=None)
    top = sorted(n for n, t in totals.items() if t == best) if totals else ([node] if node else [])
    if not top and attempt.bind_failed and attempt.binding_node:
        top = [attempt.binding_node]
    out: dict[str, Any] = {
        "pod": attempt.pod,
        "node": node,
        "feasible": feasible,
        "scores": attempt.scores if totals else {},
        "totals": totals,
        "top_nodes": top,
        "message": attempt.message,
        "scoring_skipped": skipped,
    }
    if attempt.bind_failed:
        out["binding_failed"] = True
        if any(bug in (attempt.message or "") for bug in UPSTREAM_BUGS):
            out["upstream_bug"] = True
    elif node is None and not attempt.failed_with_error:
        out["nominated"] = attempt.nominated
        out["victims"] = sorted(attempt.victims)
        if attempt.maybe_no_goroutine:
            # upstream did not gate it (no preemption under way): any event may try it again at once
            out["preemption_not_started"] = True
    return out
