"""Rendering simulation outcomes as JSON (for tools) or a table (for people)."""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from ksched.simulate.runner import PodOutcome


def to_json(outcomes: Sequence[PodOutcome]) -> bytes:
    doc = {"pods": [o.to_json() for o in outcomes]}
    return msgspec.json.format(msgspec.json.encode(doc), indent=2)


def to_table(outcomes: Sequence[PodOutcome], top: int = 5) -> str:
    lines: list[str] = []
    for o in outcomes:
        if o.node:
            lines.append(f"{o.pod}  ->  {o.node}")
        elif o.gated_by:
            lines.append(f"{o.pod}  gated by {o.gated_by}")
        elif o.nominated:
            lines.append(
                f"{o.pod}  nominated to {o.nominated} (preempting {', '.join(o.victims or []) or 'nothing'})"
            )
        else:
            lines.append(f"{o.pod}  unschedulable")
        if o.totals:
            best = sorted(o.totals.items(), key=lambda kv: (-kv[1], kv[0]))[:top]
            lines.append(f"  top scores ({len(o.totals)} feasible):")
            for node, total in best:
                parts = ", ".join(f"{pl} {v}" for pl, v in sorted(o.scores.get(node, {}).items()) if v)
                lines.append(f"    {node:<32} {total:>5}   {parts}")
        if o.filter:
            by_plugin: dict[str, int] = {}
            for entry in o.filter.values():
                plugin = str(entry.get("plugin") or "-")
                by_plugin[plugin] = by_plugin.get(plugin, 0) + 1
            summary = ", ".join(f"{p} {n}" for p, n in sorted(by_plugin.items()))
            lines.append(f"  filtered out: {len(o.filter)} node(s) ({summary})")
        for key, claim in sorted(o.claims.items()):
            devices = claim.get("devices")
            names = [str(d) for d in devices] if isinstance(devices, list) else []
            lines.append(f"  claim {key}: {', '.join(names) or 'no devices'}")
        if o.message:
            lines.append(f"  message: {o.message}")
        lines.append("")
    return "\n".join(lines)
