"""The scheduler's trace events: the snapshot generation a cycle used, the filter summary (nodes
rejected per plugin and the FailedScheduling message of an unschedulable pod), the top scores,
and the assume outcome. Counts and scores are computed by the tracer's background task from the
cycle's Diagnosis / ScheduleResult, so a scheduled pod costs the cycle no per-node work."""

from __future__ import annotations

import heapq
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from ksched.bus.messages import AssumeReply, LeasedPod
from ksched.framework.algorithm import ScheduleResult, top_score_rows
from ksched.framework.results import Diagnosis
from ksched.tracing import Phase, Tracer
from ksched.tracing.scores import score_table
from ksched_scheduler.cycle import SCHEDULED, UNSCHEDULABLE, CycleOutcome

PRE_FILTER = "PreFilter"
"""Counted for nodes a PreFilter result ruled out when no single plugin is named."""

MAX_REJECTION_GROUPS = 16
"""The most (plugin, reason) groups of rejected nodes an unschedulable pod's ``filter`` event lists."""
MAX_NAMES_PER_GROUP = 20
"""The most node names listed per (plugin, reason) group (the count covers them all)."""
MAX_SCORED_NODES = 10
"""The best nodes whose per-plugin weighted scores a ``score`` event lists."""


def rejections_by_plugin(diagnosis: Diagnosis, num_nodes: int) -> dict[str, int]:
    """Nodes rejected per plugin: each listed node under its status' plugin, the nodes not listed
    (a PreFilter rejection or narrowing) under the ``absent`` status' plugin."""
    counts: dict[str, int] = {}
    statuses = diagnosis.node_to_status
    for _, status in statuses:
        plugin = status.plugin or "unknown"
        counts[plugin] = counts.get(plugin, 0) + 1
    missing = num_nodes - len(statuses)
    if missing > 0:
        plugin = statuses.absent.plugin or PRE_FILTER
        counts[plugin] = counts.get(plugin, 0) + missing
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def rejection_groups(diagnosis: Diagnosis, num_nodes: int) -> list[dict[str, Any]]:
    """The rejected nodes grouped by plugin and reason, largest group first: ``plugin``, ``reason``,
    ``count`` and up to :data:`MAX_NAMES_PER_GROUP` ``nodes`` (sorted). Nodes a PreFilter ruled out
    are not listed one by one: their group has the ``absent`` status and only a count. At most
    :data:`MAX_REJECTION_GROUPS` groups (the rest are summed into a last ``"..."`` group)."""
    groups: dict[tuple[str, tuple[str, ...]], list[str]] = {}
    extenders = diagnosis.extender_rejections
    statuses = diagnosis.node_to_status
    for name, status in statuses:
        plugin = status.plugin or "unknown"
        if extenders and name in extenders:
            plugin = f"Extender {extenders[name]}"
        key = (plugin, status.all_reasons())
        names = groups.get(key)
        if names is None:
            groups[key] = [name]
        else:
            names.append(name)
    rows: list[dict[str, Any]] = [
        {
            "plugin": plugin,
            "reason": ", ".join(reasons),
            "count": len(names),
            "nodes": heapq.nsmallest(MAX_NAMES_PER_GROUP, names),
        }
        for (plugin, reasons), names in groups.items()
    ]
    missing = num_nodes - len(statuses)
    if missing > 0:
        absent = statuses.absent
        rows.append(
            {"plugin": absent.plugin or PRE_FILTER, "reason": absent.message, "count": missing, "nodes": []}
        )
    rows.sort(key=lambda row: (-row["count"], row["plugin"], row["reason"]))
    if len(rows) > MAX_REJECTION_GROUPS:
        rest = rows[MAX_REJECTION_GROUPS - 1 :]
        rows = rows[: MAX_REJECTION_GROUPS - 1]
        rows.append({"plugin": "...", "reason": "", "count": sum(r["count"] for r in rest), "nodes": []})
    return rows


ScoreRow = list[Any]
"""A scored node: ``[name, total, [weighted score per plugin]]`` (a row of the event's table as is)."""


def score_rows(result: ScheduleResult, k: int = MAX_SCORED_NODES) -> tuple[list[str], list[ScoreRow]]:
    """The plugins and the ``k`` best scored nodes, best first, from the arrays the algorithm kept by
    reference (no rows when it kept none)."""
    nodes, totals, per_plugin = result.scored_nodes, result.score_totals, result.plugin_score_arrays
    matrix = result.plugin_score_matrix
    if nodes is None or totals is None or per_plugin is None or matrix is None:
        return [], []
    rows = top_score_rows(result, k)
    if not rows:
        return [], []
    at = np.array(rows, dtype=np.intp)
    # one gather for every plugin: a row per node of its score per plugin
    per_node: list[list[int]] = matrix.take(at, axis=1).T.tolist()
    best: list[int] = totals.take(at).tolist()
    return list(per_plugin), [[nodes[i].name, t, s] for i, t, s in zip(rows, best, per_node, strict=True)]


def _filter_details(outcome: CycleOutcome, diagnosis: Diagnosis | None) -> Callable[[], Mapping[str, Any]]:
    nodes, evaluated, feasible, message = (
        outcome.num_nodes,
        outcome.evaluated_nodes,
        outcome.feasible_nodes,
        outcome.message,
    )
    kind = outcome.kind

    def build() -> Mapping[str, Any]:
        details: dict[str, Any] = {"nodes": nodes, "feasible": feasible}
        if kind == SCHEDULED:
            details["evaluated"] = evaluated
        if diagnosis is not None:
            details["rejected"] = rejections_by_plugin(diagnosis, nodes)
            if kind != SCHEDULED:
                details["rejections"] = rejection_groups(diagnosis, nodes)
        if kind != SCHEDULED and message:
            details["message"] = message
        return details

    return build


def _score_details(result: ScheduleResult, node: str) -> Callable[[], Mapping[str, Any]]:
    def build() -> Mapping[str, Any]:
        plugins, rows = score_rows(result)
        return {"node": node, "top": [row[:2] for row in rows[:3]], **score_table(plugins, rows)}

    return build


def trace_cycle(
    tracer: Tracer,
    leased: LeasedPod,
    outcome: CycleOutcome,
    *,
    epoch: str,
    generation: int,
    arrived: float,
    waited: float,
    started: float,
    elapsed: float,
) -> None:
    """Events of one cycle: ``snapshot`` (at ``arrived``; measured: the wait for the replica to reach
    the pod's generation), ``filter`` (the whole algorithm's time, PreFilter..Permit), ``score``
    when several nodes were scored, and ``unschedulable`` / ``error`` when it failed. Releases the
    outcome's diagnosis and result (kept only by the pending events)."""
    pod = leased.pod
    key = (leased.trace_id, pod.uid, pod.namespace, pod.name)
    diagnosis, result = outcome.diagnosis, outcome.result
    outcome.diagnosis = outcome.result = None
    if not tracer.enabled:
        return
    parent = leased.traceparent  # the queue's ``popped`` span (OpenTelemetry export)
    snapshot = {"epoch": epoch, "generation": generation, "min_generation": leased.min_generation}
    tracer.emit(Phase.SNAPSHOT, *key, ts=arrived, duration=waited, details=snapshot, parent=parent)
    filtered = _filter_details(outcome, diagnosis)
    tracer.emit(Phase.FILTER, *key, ts=started, duration=elapsed, details=filtered, parent=parent)
    done = started + elapsed
    if outcome.kind == SCHEDULED:
        if result is not None and result.score_totals is not None:
            tracer.emit(
                Phase.SCORE, *key, ts=done, details=_score_details(result, outcome.node), parent=parent
            )
        return
    phase = Phase.UNSCHEDULABLE if outcome.kind == UNSCHEDULABLE else Phase.ERROR
    failure: dict[str, Any] = {
        "plugins": sorted(outcome.plugins),
        "pending_plugins": sorted(outcome.pending_plugins),
        "nominated_node": outcome.nominated_node,
    }
    if outcome.kind != UNSCHEDULABLE:
        failure["message"] = outcome.message
    tracer.emit(phase, *key, ts=done, details=failure, parent=parent)


def trace_assume(
    tracer: Tracer,
    leased: LeasedPod,
    node: str,
    placement_id: str,
    generation: int,
    reply: AssumeReply,
    *,
    sent: float,
    rtt: float,
) -> None:
    """``assumed`` or ``assume_conflict`` (with the cache's code and reason); measured: the round
    trip to the informer."""
    pod = leased.pod
    details: dict[str, Any] = {"node": node, "placement": placement_id, "generation": generation}
    if reply.accepted:
        phase = Phase.ASSUMED
    else:
        phase = Phase.ASSUME_CONFLICT
        details.update(code=reply.code, reason=reply.reason)
    tracer.emit(
        phase,
        leased.trace_id,
        pod.uid,
        pod.namespace,
        pod.name,
        ts=sent,
        duration=rtt,
        details=details,
        parent=leased.traceparent,
    )
