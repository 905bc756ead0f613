"""Rendering simulation outcomes as JSON (for tools) or a table (for people)."""

from __future__ import annotations

import io
import shutil
import sys
from collections.abc import Sequence

import msgspec
from rich import box
from rich.console import Console
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from ksched.simulate.runner import PodOutcome


def to_json(outcomes: Sequence[PodOutcome]) -> bytes:
    doc = {"pods": [o.to_json() for o in outcomes]}
    return msgspec.json.format(msgspec.json.encode(doc), indent=2)


def to_table(outcomes: Sequence[PodOutcome], top: int = 5, width: int | None = None) -> str:
    """Per pod: the decision, the ``top`` nodes by total with each plugin's weighted score, the
    rejected nodes grouped by plugin and reason, and the FailedScheduling message; aligned for a
    terminal of ``width`` columns (default: the terminal's, or 120 when not a terminal)."""
    console = text_console(width)
    for o in outcomes:
        console.print(Text(f"{o.pod}  {decision(o)}", style="bold"))
        if o.pod_group is not None:
            console.print(Padding(Text(_group_line(o.pod_group)), (0, 0, 0, 2)))
        if o.totals:
            console.print(Padding(_score_table(o, top), (0, 0, 0, 2)))
        elif o.node:
            console.print("  scoring skipped: one feasible node")
        if o.filter:
            console.print(Padding(_rejections(o), (0, 0, 0, 2)))
        if o.claims:
            console.print(Padding(_claims(o), (0, 0, 0, 2)))
        if o.message:
            console.print(Padding(Text(f"message: {o.message}"), (0, 0, 0, 2)))
        console.print()
    return exported(console)


def text_console(width: int | None = None) -> Console:
    """A console that records plain text ``width`` columns wide (default: the terminal's, or 120
    when not a terminal)."""
    return Console(width=width or _width(), record=True, file=io.StringIO(), color_system=None)


def exported(console: Console) -> str:
    """What ``console`` recorded, without trailing blanks, ending with one newline."""
    lines = [line.rstrip() for line in console.export_text().splitlines()]
    return "\n".join(lines).rstrip("\n") + "\n"


def _group_line(group: dict[str, object]) -> str:
    """``pod group ns/pg: PodGroupScheduled=False (Unschedulable: pod group is unschedulable)``."""
    condition = group.get("condition")
    if not isinstance(condition, dict):
        return f"pod group {group.get('name')}"
    detail = (
        f"{condition['reason']}: {condition['message']}" if condition.get("message") else condition["reason"]
    )
    return f"pod group {group.get('name')}: {condition['type']}={condition['status']} ({detail})"


def _width() -> int:
    return shutil.get_terminal_size((120, 24)).columns if sys.stdout.isatty() else 120


def decision(o: PodOutcome) -> str:
    """The outcome in a few words: ``-> node``, ``gated by …``, ``nominated to …`` or ``unschedulable``."""
    if o.node:
        return f"-> {o.node}"
    if o.gated_by:
        return f"gated by {o.gated_by}"
    if o.nominated:
        return f"nominated to {o.nominated} (preempting {', '.join(o.victims or []) or 'nothing'})"
    return "unschedulable"


def titled_table(title: str) -> Table:
    """A titled table aligned under its pod, with a rule under the header and no outer frame."""
    return Table(
        title=title,
        title_justify="left",
        box=box.SIMPLE_HEAD,
        show_edge=False,
        padding=(0, 1),
        pad_edge=False,
    )


def _score_table(o: PodOutcome, top: int) -> Table:
    best = sorted(o.totals.items(), key=lambda kv: (-kv[1], kv[0]))[:top]
    plugins = sorted({pl for node, _ in best for pl, v in o.scores.get(node, {}).items() if v})
    table = titled_table(f"top {len(best)} of {len(o.totals)} feasible node(s), weighted scores")
    table.add_column("node", no_wrap=True)
    table.add_column("total", justify="right")
    for plugin in plugins:
        table.add_column(plugin, justify="right")
    for node, total in best:
        scores = o.scores.get(node, {})
        mark = " *" if node == o.node else ""
        table.add_row(f"{node}{mark}", str(total), *(str(scores.get(pl, 0)) for pl in plugins))
    return table


def _rejections(o: PodOutcome) -> Table:
    groups: dict[tuple[str, str], list[str]] = {}
    for node, entry in o.filter.items():
        plugin = str(entry.get("plugin") or "-")
        reasons = entry.get("reasons")
        for reason in reasons if isinstance(reasons, list) and reasons else [""]:
            groups.setdefault((plugin, str(reason)), []).append(node)
    table = titled_table(f"{len(o.filter)} node(s) filtered out")
    table.add_column("plugin", no_wrap=True)
    table.add_column("reason", min_width=24, ratio=3)
    table.add_column("nodes", justify="right", no_wrap=True)
    table.add_column("e.g.", overflow="ellipsis", no_wrap=True, ratio=2, max_width=50)
    for (plugin, reason), nodes in sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        shown = ", ".join(sorted(nodes)[:3]) + (", ..." if len(nodes) > 3 else "")
        table.add_row(plugin, reason, str(len(nodes)), shown)
    return table


def _claims(o: PodOutcome) -> Table:
    table = titled_table("resource claims")
    table.add_column("claim", no_wrap=True)
    table.add_column("devices")
    for key, claim in sorted(o.claims.items()):
        devices = claim.get("devices")
        names = [str(d) for d in devices] if isinstance(devices, list) else []
        table.add_row(key, ", ".join(names) or "no devices")
    return table
