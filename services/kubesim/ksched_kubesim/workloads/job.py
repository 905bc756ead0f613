"""The Job controller, after upstream's ``pkg/controller/job``: up to ``parallelism`` active pods
(``<job>-<random>``, or ``<job>-<index>-<random>`` with the completion index label, annotation,
hostname and ``JOB_COMPLETION_INDEX`` for Indexed Jobs), each with the
``batch.kubernetes.io/job-tracking`` finalizer that the controller removes once it has counted the
finished pod; failed pods replaced until ``backoffLimit``; the Job complete once ``completions`` pods
(or indexes) succeeded, failed past its backoff limit, or suspended; and the status counts.

kubesim's kubelet never finishes a pod: a Job's pods run until something sets their phase to
Succeeded or Failed. Not modelled: pod failure and success policies, backoff limits per index, the
exponential delay before re-creating failed pods, ``activeDeadlineSeconds``, TTL after finish.
"""

from __future__ import annotations

import contextlib
import copy

from ksched.api.timestamps import rfc3339

from ..apps_strategies import JOB_STATUS_ORDER
from ..errors import ApiError
from ..jsonio import JSON
from ..pods import ordered
from ..registry import PODS
from .common import (
    BURST,
    JOBS,
    Controller,
    is_active,
    is_deleting,
    is_ready,
    is_terminating,
    phase,
    pod_from_template,
)

TRACKING_FINALIZER = "batch.kubernetes.io/job-tracking"
INDEX_KEY = "batch.kubernetes.io/job-completion-index"
INDEX_ENV = "JOB_COMPLETION_INDEX"
#: upstream ``names.MaxGeneratedNameLength``
MAX_GENERATED_NAME = 58


def _spec(job: JSON) -> JSON:
    return job.get("spec") or {}


def _indexed(job: JSON) -> bool:
    return _spec(job).get("completionMode") == "Indexed"


def index_of(pod: JSON) -> int | None:
    value = (pod["metadata"].get("annotations") or {}).get(INDEX_KEY)
    return int(value) if isinstance(value, str) and value.isdigit() else None


def format_indexes(indexes: set[int]) -> str:
    """Upstream's text of completed indexes: intervals ``0-2``, two in a row as ``4,5``."""
    intervals: list[list[int]] = []
    for i in sorted(indexes):
        if intervals and intervals[-1][1] == i - 1:
            intervals[-1][1] = i
        else:
            intervals.append([i, i])
    parts = []
    for first, last in intervals:
        if last == first:
            parts.append(str(first))
        else:
            parts.append(f"{first}{',' if last == first + 1 else '-'}{last}")
    return ",".join(parts)


def parse_indexes(text: str) -> set[int]:
    out: set[int] = set()
    for part in filter(None, (text or "").split(",")):
        low, _, high = part.partition("-")
        out.update(range(int(low), int(high or low) + 1))
    return out


def _condition(kind: str, reason: str, message: str) -> JSON:
    stamp = rfc3339()
    return {
        "type": kind,
        "status": "True",
        "lastProbeTime": stamp,
        "lastTransitionTime": stamp,
        "reason": reason,
        "message": message,
    }


def finished(job: JSON) -> bool:
    return any(
        c.get("type") in ("Complete", "Failed") and c.get("status") == "True"
        for c in (job.get("status") or {}).get("conditions") or []
    )


class JobController(Controller):
    rt = JOBS

    def sync(self, namespace: str, name: str) -> None:
        entry = self.get(namespace, name)
        if entry is None:
            return
        job = entry.obj()
        spec = _spec(job)
        pods = self.claim(entry, job, PODS, spec.get("selector"))
        status = dict(job.get("status") or {})
        done = finished(job) or entry.deleting
        # count the pods that finished, then let them go
        succeeded, failed = int(status.get("succeeded") or 0), int(status.get("failed") or 0)
        completed = parse_indexes(status.get("completedIndexes", ""))
        for pod in pods:
            if TRACKING_FINALIZER not in (pod["metadata"].get("finalizers") or []):
                continue
            if phase(pod) == "Succeeded":
                succeeded += 1
                if index_of(pod) is not None:
                    completed.add(index_of(pod) or 0)
            elif phase(pod) == "Failed" or (is_deleting(pod) and not done):
                failed += 1
            elif not done:
                continue
            self._release(pod)
        pods = self.owned(entry, PODS)
        active = [p for p in pods if is_active(p)]
        if _indexed(job):
            completions = int(spec.get("completions") or 0)
            completed = {i for i in completed if i < completions}
            succeeded = len(completed)
        conditions = list(status.get("conditions") or [])
        if not done and not status.get("startTime") and not spec.get("suspend"):
            status["startTime"] = rfc3339()
        if not done:
            outcome = self._outcome(job, succeeded, failed, completed, len(active))
            if outcome is not None:
                for pod in active:
                    self.delete_pod(pod)
                conditions += outcome
                if outcome[-1]["type"] == "Complete":
                    status["completionTime"] = rfc3339()
            elif spec.get("suspend"):
                for pod in active:
                    self.delete_pod(pod)
            else:
                self._manage(job, pods, active, completed, succeeded)
            pods = self.owned(entry, PODS)
            active = [p for p in pods if is_active(p)]
        status.update(
            {
                "active": len(active),
                "succeeded": succeeded,
                "failed": failed,
                "terminating": sum(1 for p in pods if is_terminating(p)),
                "completedIndexes": format_indexes(completed) if _indexed(job) else "",
                "uncountedTerminatedPods": {},
                "ready": sum(1 for p in active if is_ready(p)),
                "conditions": conditions,
            }
        )
        for key in ("active", "succeeded", "failed", "completedIndexes", "conditions"):
            if not status[key]:
                del status[key]
        self.write_status(job, ordered(status, JOB_STATUS_ORDER))

    @staticmethod
    def _outcome(
        job: JSON, succeeded: int, failed: int, completed: set[int], active: int
    ) -> list[JSON] | None:
        """The conditions that finish the Job now, if any."""
        spec = _spec(job)
        if failed > int(spec.get("backoffLimit", 6)):
            message = "Job has reached the specified backoff limit"
            return [
                _condition("FailureTarget", "BackoffLimitExceeded", message),
                _condition("Failed", "BackoffLimitExceeded", message),
            ]
        completions = spec.get("completions")
        if completions is None:
            done = succeeded > 0 and not active
        elif _indexed(job):
            done = len(completed) >= int(completions)
        else:
            done = succeeded >= int(completions)
        if not done:
            return None
        message = "Reached expected number of succeeded pods"
        return [
            _condition("SuccessCriteriaMet", "CompletionsReached", message),
            _condition("Complete", "CompletionsReached", message),
        ]

    def _manage(
        self, job: JSON, pods: list[JSON], active: list[JSON], completed: set[int], succeeded: int
    ) -> None:
        spec = _spec(job)
        parallelism = int(spec.get("parallelism", 1))
        completions = spec.get("completions")
        terminating = sum(1 for p in pods if is_terminating(p))
        wanted = parallelism
        if completions is not None:
            wanted = min(parallelism, int(completions) - succeeded)
        if spec.get("podReplacementPolicy") == "Failed":
            wanted -= terminating
        wanted = max(wanted, 0)
        if len(active) > wanted:
            for pod in sorted(
                active, key=lambda p: (is_ready(p), p["metadata"].get("creationTimestamp") or "")
            )[: len(active) - wanted]:
                self.delete_pod(pod)
            return
        missing = min(wanted - len(active), BURST)
        indexes: list[int | None] = [None] * missing
        if _indexed(job):
            taken = set(completed)
            taken.update(i for p in active if (i := index_of(p)) is not None)
            free = [i for i in range(int(completions or 0)) if i not in taken]
            indexes = list(free[:missing])
        for index in indexes:
            try:
                self.create(PODS, self._new_pod(job, index))
            except ApiError:
                self.queue(job["metadata"].get("namespace", ""), job["metadata"]["name"], 1.0)
                return

    def _new_pod(self, job: JSON, index: int | None) -> JSON:
        name = job["metadata"]["name"]
        template = copy.deepcopy(_spec(job).get("template") or {})
        meta = template.setdefault("metadata", {})
        meta["finalizers"] = [*(meta.get("finalizers") or []), TRACKING_FINALIZER]
        generate_name = f"{name}-"
        if index is not None:
            meta["annotations"] = {**(meta.get("annotations") or {}), INDEX_KEY: str(index)}
            meta["labels"] = {**(meta.get("labels") or {}), INDEX_KEY: str(index)}
            spec = template.setdefault("spec", {})
            spec["hostname"] = f"{name}-{index}"
            for kind in ("initContainers", "containers"):
                for container in spec.get(kind) or []:
                    env = container.setdefault("env", [])
                    if not any(v.get("name") == INDEX_ENV for v in env):
                        env.append(
                            {
                                "name": INDEX_ENV,
                                "valueFrom": {"fieldRef": {"fieldPath": f"metadata.labels['{INDEX_KEY}']"}},
                            }
                        )
            suffix = f"-{index}-"
            generate_name = f"{name}{suffix}"
            if len(generate_name) > MAX_GENERATED_NAME:
                generate_name = generate_name[: MAX_GENERATED_NAME - len(suffix)] + suffix
        return pod_from_template(template, job, self.rt, generate_name)

    def _release(self, pod: JSON) -> None:
        """Remove the tracking finalizer from a counted pod."""
        meta = pod["metadata"]
        kept = [f for f in meta.get("finalizers") or [] if f != TRACKING_FINALIZER]
        if kept:
            meta["finalizers"] = kept
        else:
            meta.pop("finalizers", None)
        with contextlib.suppress(ApiError):  # changed meanwhile: that change brings the Job back
            self.update(PODS, pod)
