"""What the page shows, as plain JSON-ready values: the nodes' requested vs allocatable resources
grouped by zone, the queue's pods, and one pod's attempts with its last attempt's per-node verdicts.
Pure functions of the snapshot, the queue's listing and trace events (tested without a browser)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ksched.bus.messages import QueueListEntry, QueueListReply, TraceEvent
from ksched.framework.nodeinfo import NodeInfo
from ksched.framework.snapshot import Snapshot
from ksched.tracing import scores
from ksched.tracing.phases import Phase
from ksched.tracing.timeline import UI_KEYS, Attempt, attempts

ZONE_LABEL = "topology.kubernetes.io/zone"
NO_ZONE = ""
"""The zone of nodes without the label (listed last)."""

Json = dict[str, Any]


def node_row(ni: NodeInfo) -> Json:
    """One node's bars: ``[requested, allocatable]`` of cpu (millicores), memory (bytes) and pods."""
    node = ni.node
    spec = node.spec if node is not None else None
    return {
        "name": ni.name,
        "cpu": [ni.requested.milli_cpu, ni.allocatable.milli_cpu],
        "memory": [ni.requested.memory, ni.allocatable.memory],
        "pods": [len(ni.pods), ni.allocatable.allowed_pod_number],
        "unschedulable": bool(spec and spec.unschedulable),
        "taints": len(spec.taints) if spec is not None else 0,
    }


def cluster_view(snapshot: Snapshot, *, generation: int, synced: bool) -> Json:
    """Nodes grouped by ``topology.kubernetes.io/zone`` (zones by name, nodes without one last),
    nodes by name within a zone, and the cluster's totals."""
    zones: dict[str, list[Json]] = {}
    totals = {"cpu": [0, 0], "memory": [0, 0], "pods": [0, 0]}
    for ni in snapshot.nodes:
        row = node_row(ni)
        zones.setdefault(ni.labels.get(ZONE_LABEL, NO_ZONE), []).append(row)
        for key, pair in totals.items():
            pair[0] += row[key][0]
            pair[1] += row[key][1]
    ordered = sorted(zones.items(), key=lambda kv: (kv[0] == NO_ZONE, kv[0]))
    return {
        "generation": generation,
        "synced": synced,
        "nodes": len(snapshot.nodes),
        "totals": totals,
        "zones": [
            {"zone": zone, "nodes": sorted(rows, key=lambda r: str(r["name"]))} for zone, rows in ordered
        ],
    }


def queue_row(entry: QueueListEntry) -> Json:
    """A queued pod and its last reason: the last attempt's message, else the rejecting plugins or
    the scheduling gate."""
    if entry.message:
        reason = entry.message
    elif entry.gating_plugin:
        reason = f"gated by {entry.gating_plugin}"
    elif entry.plugins:
        reason = "rejected by " + ", ".join(entry.plugins)
    else:
        reason = ""
    return {
        "key": f"{entry.namespace}/{entry.name}",
        "namespace": entry.namespace,
        "name": entry.name,
        "queue": entry.queue,
        "attempts": entry.attempts,
        "priority": entry.priority,
        "queued_at": entry.queued_at,
        "backoff_until": entry.backoff_until,
        "plugins": list(entry.plugins),
        "nominated_node": entry.nominated_node,
        "reason": reason,
    }


def queue_view(reply: QueueListReply | None, error: str = "") -> Json:
    """The queue's listing (``error`` when the queue did not answer)."""
    if reply is None:
        return {"available": False, "error": error, "counts": {}, "matched": 0, "pods": []}
    return {
        "available": True,
        "error": "",
        "counts": dict(reply.counts),
        "matched": reply.matched,
        "pods": [queue_row(e) for e in reply.pods],
    }


def _event_json(event: TraceEvent, offset: float, took: float | None, measured: bool) -> Json:
    details = {k: v for k, v in event.details.items() if k not in UI_KEYS}
    return {
        "ts": event.ts,
        "offset": offset,
        "took": took,
        "measured": measured,
        "service": event.service,
        "instance": event.instance,
        "phase": event.phase,
        "details": details,
    }


def _attempt_json(attempt: Attempt) -> Json:
    return {
        "trace_id": attempt.trace_id,
        "start": attempt.start,
        "total": attempt.total,
        "outcome": attempt.outcome,
        "node": attempt.node,
        "steps": [_event_json(s.event, s.offset, s.took, s.measured) for s in attempt.steps],
    }


def rejected_nodes(groups: Sequence[Any]) -> tuple[list[Json], int]:
    """The ``rejections`` of a filter event, one row per named node (``node``, ``plugin``,
    ``reason``), and how many rejected nodes the event counted but did not name."""
    rows: list[Json] = []
    unnamed = 0
    for group in groups:
        if not isinstance(group, Mapping):
            continue  # not what this version writes: skipped, never a broken page
        names = [str(n) for n in group.get("nodes") or []]
        for name in names:
            rows.append({"node": name, "plugin": group.get("plugin", ""), "reason": group.get("reason", "")})
        count = group.get("count")
        unnamed += max(0, (count if isinstance(count, int) else len(names)) - len(names))
    rows.sort(key=lambda r: r["node"])
    return rows, unnamed


def last_verdicts(attempt: Attempt) -> Json:
    """The last attempt's decision: ``rejected`` (every named node with its plugin and reason, and
    the message) or ``scores`` (per-plugin weighted scores of the best nodes), from its scheduler
    events; empty lists when the attempt has not reached the scheduler."""
    out: Json = {"message": "", "rejected": [], "unnamed": 0, "scores": [], "plugins": [], "node": ""}
    for step in attempt.steps:
        event = step.event
        details = event.details
        if event.phase == Phase.FILTER:
            groups = details.get("rejections")
            if isinstance(groups, list):
                out["rejected"], out["unnamed"] = rejected_nodes(groups)
            if isinstance(details.get("message"), str):
                out["message"] = details["message"]
        elif event.phase == Phase.SCORE:
            scored = scores.scored_nodes(details)
            if scored:
                out["scores"] = scored
                out["plugins"] = sorted({str(pl) for row in scored for pl in row["scores"]})
            out["node"] = str(details.get("node") or "")
        elif event.phase in (Phase.ERROR, Phase.ASSUME_CONFLICT, Phase.BIND_FAILED) and not out["message"]:
            text = details.get("message") or details.get("reason")
            if isinstance(text, str):
                out["message"] = text
    if not out["node"] and not out["rejected"]:
        out["node"] = attempt.node  # one feasible node: no score event, the assume names it
    return out


def pod_view(
    namespace: str,
    name: str,
    events: Iterable[TraceEvent],
    queued: QueueListEntry | None = None,
    *,
    placed_on: str = "",
) -> Json:
    """One pod's page: its attempts (the timeline of ``ksched trace``), the last attempt's verdicts,
    where the queue holds it and why, and the node it is on (from the snapshot)."""
    history = attempts(events)
    last = last_verdicts(history[-1]) if history else None
    queue = queue_row(queued) if queued is not None else None
    # the queue's message of the last attempt, else the scheduler's, else the plugins or the gate
    reason = (queued.message if queued else "") or (last["message"] if last else "")
    if not reason and queue is not None:
        reason = queue["reason"]
    return {
        "key": f"{namespace}/{name}",
        "namespace": namespace,
        "name": name,
        "uid": next((s.event.pod_uid for a in history for s in a.steps), queued.uid if queued else ""),
        "node": placed_on,
        "queue": queue,
        "reason": reason,
        "attempts": [_attempt_json(a) for a in history],
        "last": last,
    }


def search(needle: str, *sources: Iterable[str], limit: int = 50) -> list[str]:
    """Pod keys (``namespace/name``) from ``sources`` containing ``needle`` (case-insensitive),
    exact matches of the name first, then by key."""
    text = needle.strip().lower()
    found = {key for source in sources for key in source if text in key.lower()}
    return sorted(found, key=lambda k: (k.rsplit("/", 1)[-1].lower() != text, k))[:limit]
