"""The per-plugin scores of a ``score`` trace event, as the scheduler writes them and as readers
(``ksched ui``) read them.

Written as a table: ``score_plugins`` names the plugins once and ``score_rows`` holds one
``[node, total, [weighted score per plugin]]`` per scored node, best first. Events of schedulers
before that table hold ``plugin_scores``, one ``{node, total, scores: {plugin: score}}`` per node;
:func:`scored_nodes` reads both.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

PLUGINS_KEY = "score_plugins"
ROWS_KEY = "score_rows"
LEGACY_KEY = "plugin_scores"
KEYS = (PLUGINS_KEY, ROWS_KEY, LEGACY_KEY)
"""The details that carry per-node scores (for ``ksched ui``; the text timeline leaves them out)."""


def score_table(plugins: list[str], rows: list[list[Any]]) -> dict[str, Any]:
    """The details of a ``score`` event for ``rows`` of ``[node, total, [score per plugin of
    plugins]]`` (taken as they are, not copied)."""
    return {PLUGINS_KEY: plugins, ROWS_KEY: rows}


def scored_nodes(details: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The scored nodes of a ``score`` event, best first: ``{node, total, scores: {plugin: score}}``;
    rows that do not have that shape are left out (an event is read, not trusted)."""
    plugins, rows = details.get(PLUGINS_KEY), details.get(ROWS_KEY)
    if isinstance(plugins, list) and isinstance(rows, list):
        names = [str(p) for p in plugins]
        return [
            {"node": row[0], "total": row[1], "scores": dict(zip(names, row[2], strict=True))}
            for row in rows
            if isinstance(row, list) and len(row) == 3 and _scores_of(row[2], len(names))
        ]
    legacy = details.get(LEGACY_KEY)
    if isinstance(legacy, list):
        return [
            dict(row) for row in legacy if isinstance(row, Mapping) and isinstance(row.get("scores"), Mapping)
        ]
    return []


def _scores_of(value: Any, count: int) -> bool:
    return isinstance(value, list) and len(value) == count
