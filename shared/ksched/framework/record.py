"""What each plugin returned in one attempt, as kube-scheduler-simulator's debuggable scheduler records
it (its ``resultstore``): per extension point and plugin the outcome as a string, per node and
plugin the filter verdict and the scores.

A :class:`CycleRecord` is filled only when one is set on the cycle's ``CycleState.record`` (the
scheduler's ``--record-results``, ``ksched simulate --output simulator``); without one the framework
checks one attribute per extension point and records nothing. :mod:`ksched.reporting.simulator_results`
renders a record as the simulator's pod annotations.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from ksched.framework.status import Code, Status

PASSED = "passed"
"""A node that passed a Filter plugin (the simulator's ``PassedFilterMessage``)."""
SUCCESS = "success"
"""A plugin that returned Success (the simulator's ``SuccessMessage``)."""
WAIT = "wait"
"""A Permit plugin that returned Wait."""
PREEMPTION_VICTIM = "preemption victim"
"""The node a PostFilter plugin nominated (the simulator's ``PostFilterNominatedMessage``)."""


def status_text(status: Status | None) -> str:
    """``success``, or the status's message (upstream ``Status.Message()``: a Skip has none)."""
    if status is None or status.code == Code.SUCCESS:
        return SUCCESS
    return status.message


def go_duration(seconds: float) -> str:
    """Go's ``time.Duration.String()`` of ``seconds`` (``0s``, ``1.5s``, ``1m0s``, ``2h0m0s``)."""
    ns = round(seconds * 1e9)
    if ns == 0:
        return "0s"
    sign, ns = ("-", -ns) if ns < 0 else ("", ns)
    if ns < 1_000_000_000:
        for unit, size in (("ms", 1_000_000), ("µs", 1_000), ("ns", 1)):
            if ns >= size:
                return sign + _fraction(ns, size) + unit
    hours, rest = divmod(ns, 3_600_000_000_000)
    minutes, rest = divmod(rest, 60_000_000_000)
    text = _fraction(rest, 1_000_000_000) + "s"
    if hours:
        return f"{sign}{hours}h{minutes}m{text}"
    if minutes:
        return f"{sign}{minutes}m{text}"
    return sign + text


def _fraction(value: int, unit: int) -> str:
    whole, frac = divmod(value, unit)
    if not frac:
        return str(whole)
    digits = len(str(unit)) - 1
    return f"{whole}.{str(frac).rjust(digits, '0').rstrip('0')}"


@dataclass(slots=True)
class CycleRecord:
    """One attempt's results; the plugin-keyed maps are filled in the profile's plugin order."""

    pre_filter_status: dict[str, str] = field(default_factory=dict)
    """plugin -> ``success`` or the status message."""
    pre_filter_result: dict[str, list[str]] = field(default_factory=dict)
    """plugin -> the node names its PreFilterResult narrowed to (plugins that returned one)."""
    filter: dict[str, dict[str, str]] = field(default_factory=dict)
    """node -> plugin -> ``passed`` or the rejection message (the plugins that ran on the node)."""
    post_filter: dict[str, dict[str, str]] = field(default_factory=dict)
    """node -> plugin -> ``preemption victim`` for the nominated node; ``{}`` for other rejected nodes."""
    pre_score: dict[str, str] = field(default_factory=dict)
    score: dict[str, dict[str, str]] = field(default_factory=dict)
    """node -> plugin -> the plugin's score before normalization and weight."""
    final_score: dict[str, dict[str, str]] = field(default_factory=dict)
    """node -> plugin -> the normalized score times the plugin's weight."""
    reserve: dict[str, str] = field(default_factory=dict)
    permit: dict[str, str] = field(default_factory=dict)
    permit_timeout: dict[str, str] = field(default_factory=dict)
    pre_bind: dict[str, str] = field(default_factory=dict)
    bind: dict[str, str] = field(default_factory=dict)
    selected_node: str = ""
    """The node the pod went through Reserve for (empty when it did not get that far)."""

    # --- filled by the framework -----------------------------------------------------------------
    def add_pre_filter(self, plugin: str, status: Status | None, node_names: Iterable[str] | None) -> None:
        self.pre_filter_status[plugin] = status_text(status)
        if node_names is not None:
            self.pre_filter_result[plugin] = sorted(node_names)

    def add_filter_passed(self, node: str, plugins: Sequence[str]) -> None:
        self.filter[node] = dict.fromkeys(plugins, PASSED)

    def add_filter_rejected(self, node: str, passed: Sequence[str], status: Status) -> None:
        entry = dict.fromkeys(passed, PASSED)
        entry[status.plugin] = status.message
        self.filter[node] = entry

    def add_post_filter(self, plugin: str, nodes: Iterable[str], nominated: str) -> None:
        for node in nodes:
            entry = self.post_filter.setdefault(node, {})
            if node == nominated:
                entry[plugin] = PREEMPTION_VICTIM

    def add_scores(
        self, plugin: str, nodes: Sequence[str], raw: Sequence[int], weighted: Sequence[int]
    ) -> None:
        for name, value, final in zip(nodes, raw, weighted, strict=True):
            self.score.setdefault(name, {})[plugin] = str(value)
            self.final_score.setdefault(name, {})[plugin] = str(final)

    def add_permit(self, plugin: str, status: Status | None, timeout: float) -> None:
        self.permit[plugin] = WAIT if status is not None and status.code == Code.WAIT else status_text(status)
        self.permit_timeout[plugin] = go_duration(timeout)
