"""The ReplicaSet controller: as many active pods as ``spec.replicas``, created from the template as
``<rs>-<5 random characters>`` (``generateName``) and owned by the ReplicaSet; the excess deleted in
upstream's order (unscheduled, pending, not ready ... first); and the status counts."""

from __future__ import annotations

from collections import Counter

from ksched.api.timestamps import rfc3339

from ..apps_strategies import REPLICA_SET_STATUS_ORDER
from ..errors import ApiError
from ..jsonio import JSON, now
from ..pods import ordered
from ..registry import PODS
from ..store import Entry
from .common import (
    BURST,
    REPLICA_SETS,
    RETRY_DELAY,
    Controller,
    available_after,
    deletion_rank,
    is_active,
    is_available,
    is_ready,
    is_terminating,
    labels_of,
    pod_from_template,
)

FAILURE_CONDITION = "ReplicaFailure"


class ReplicaSetController(Controller):
    rt = REPLICA_SETS

    def sync(self, namespace: str, name: str) -> None:
        entry = self.get(namespace, name)
        if entry is None:
            return
        rs = entry.obj()
        spec = rs.get("spec") or {}
        pods = self.claim(entry, rs, PODS, spec.get("selector"))
        failure = None
        if not entry.deleting:
            active = [p for p in pods if is_active(p)]
            diff = len(active) - int(spec.get("replicas", 1))
            if diff < 0:
                failure = self._create(rs, min(-diff, BURST))
            elif diff > 0:
                on_node = Counter((p.get("spec") or {}).get("nodeName") or "" for p in active)
                for pod in sorted(active, key=lambda p: deletion_rank(p, on_node))[: min(diff, BURST)]:
                    self.delete_pod(pod)
            if failure is not None or diff:
                pods = self.owned(entry, PODS)
        self._write_status(entry, rs, pods, failure)

    def _create(self, rs: JSON, count: int) -> str | None:
        """Create ``count`` pods; the first refusal's message (the rest are not tried)."""
        template = (rs.get("spec") or {}).get("template") or {}
        for _ in range(count):
            try:
                self.create(PODS, pod_from_template(template, rs, self.rt))
            except ApiError as exc:
                self.queue(rs["metadata"].get("namespace", ""), rs["metadata"]["name"], RETRY_DELAY)
                return str(exc)
        return None

    def _write_status(self, entry: Entry, rs: JSON, pods: list[JSON], failure: str | None) -> None:
        spec = rs.get("spec") or {}
        min_ready = int(spec.get("minReadySeconds") or 0)
        template_labels = dict(((spec.get("template") or {}).get("metadata") or {}).get("labels") or {})
        at = now()
        active = [p for p in pods if is_active(p)]
        status: JSON = {
            "replicas": len(active),
            "fullyLabeledReplicas": sum(1 for p in active if template_labels.items() <= labels_of(p).items()),
            "readyReplicas": sum(1 for p in active if is_ready(p)),
            "availableReplicas": sum(1 for p in active if is_available(p, min_ready, at)),
            "terminatingReplicas": sum(1 for p in pods if is_terminating(p)),
            "observedGeneration": rs["metadata"].get("generation", 1),
        }
        for key in ("fullyLabeledReplicas", "readyReplicas", "availableReplicas"):
            if not status[key]:
                del status[key]
        before = (rs.get("status") or {}).get("conditions") or []
        conditions = [c for c in before if c.get("type") != FAILURE_CONDITION]
        if failure is not None:
            old = next((c for c in before if c.get("type") == FAILURE_CONDITION), None)
            conditions.append(
                {
                    "type": FAILURE_CONDITION,
                    "status": "True",
                    "lastTransitionTime": old.get("lastTransitionTime") if old else rfc3339(),
                    "reason": "FailedCreate",
                    "message": failure,
                }
            )
        if conditions:
            status["conditions"] = conditions
        self.write_status(rs, ordered(status, REPLICA_SET_STATUS_ORDER))
        wait = available_after(active, min_ready, at)
        if wait is not None:
            self.queue(entry.namespace, entry.name, wait)
