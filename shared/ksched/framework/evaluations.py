"""How often each plugin was evaluated: upstream's ``scheduler_plugin_evaluation_total``.

Upstream wraps every PreFilter, Filter, PreScore and Score plugin so each call bumps a counter: Filter
and Score once per node evaluated, PreFilter and PreScore once per cycle unless the plugin returned
Skip. Plugins the cycle skipped are not called, so not counted. Here the framework keeps plain integer
counts per plugin (a batch call adds the number of nodes it evaluated); a collector reads them at
scrape time, so the hot path pays one dictionary update per plugin call.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

PRE_FILTER = "PreFilter"
FILTER = "Filter"
PRE_SCORE = "PreScore"
SCORE = "Score"


class PluginEvaluations:
    """One profile's evaluation counts, per extension point, by plugin name."""

    __slots__ = ("filter", "pre_filter", "pre_score", "score")

    def __init__(self) -> None:
        self.pre_filter: defaultdict[str, int] = defaultdict(int)
        self.filter: defaultdict[str, int] = defaultdict(int)
        self.pre_score: defaultdict[str, int] = defaultdict(int)
        self.score: defaultdict[str, int] = defaultdict(int)

    def seed(
        self,
        pre_filter: Iterable[str],
        filter: Iterable[str],
        pre_score: Iterable[str],
        score: Iterable[str],
    ) -> None:
        """Start a series at 0 for every configured plugin (upstream creates them with the profile)."""
        for counts, names in (
            (self.pre_filter, pre_filter),
            (self.filter, filter),
            (self.pre_score, pre_score),
            (self.score, score),
        ):
            for name in names:
                counts[name] += 0

    def totals(self) -> list[tuple[str, str, int]]:
        """``(plugin, extension point, evaluations)`` for every series, in a stable order."""
        out: list[tuple[str, str, int]] = []
        for point, counts in (
            (PRE_FILTER, self.pre_filter),
            (FILTER, self.filter),
            (PRE_SCORE, self.pre_score),
            (SCORE, self.score),
        ):
            out.extend((plugin, point, n) for plugin, n in sorted(counts.items()))
        return out
