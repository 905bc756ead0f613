"""The scheduling algorithm of one cycle (upstream ``schedulePod``): PreFilter, the feasible-node
search from a rotating start index, scoring, and host selection; or the Diagnosis of a FitError."""

from __future__ import annotations

import random
import time
from dataclasses import dataclass, field

import numpy as np

from ksched.framework.cycle_state import CycleState
from ksched.framework.interfaces import Int64Array, Rows
from ksched.framework.podinfo import PodInfo
from ksched.framework.results import Diagnosis, FitError
from ksched.framework.runtime import FilterError, FilterOutcome, Framework
from ksched.framework.status import Code, Status

MIN_FEASIBLE_NODES_TO_FIND = 100
MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND = 5
DEFAULT_PERCENTAGE_OF_NODES_TO_SCORE = 0


class NoNodesAvailable(Exception):
    """The snapshot has no nodes (upstream ``ErrNoNodesAvailable``)."""

    def __str__(self) -> str:
        return "no nodes available to schedule pods"


class SchedulingError(Exception):
    """A plugin failed with an error (not a rejection) during the cycle."""

    def __init__(self, status: Status) -> None:
        super().__init__(status.message)
        self.status = status


@dataclass(slots=True)
class ScheduleResult:
    suggested_host: str
    evaluated_nodes: int
    feasible_nodes: int
    #: what ``ksched simulate`` reports: weighted scores per node and plugin, and totals
    scores: dict[str, dict[str, int]] = field(default_factory=dict)
    totals: dict[str, int] = field(default_factory=dict)
    diagnosis: Diagnosis | None = None


def num_feasible_nodes_to_find(percentage: int, num_all_nodes: int) -> int:
    """How many feasible nodes end the search (upstream ``numFeasibleNodesToFind``)."""
    if num_all_nodes < MIN_FEASIBLE_NODES_TO_FIND:
        return num_all_nodes
    if percentage == 0:
        percentage = max(50 - num_all_nodes // 125, MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND)
    num = num_all_nodes * percentage // 100
    return max(num, MIN_FEASIBLE_NODES_TO_FIND)


class ScheduleAlgorithm:
    """Per-scheduler algorithm state: the rotating start index and the tie-breaking RNG."""

    def __init__(
        self,
        percentage_of_nodes_to_score: int = DEFAULT_PERCENTAGE_OF_NODES_TO_SCORE,
        seed: int | None = None,
    ) -> None:
        self.percentage_of_nodes_to_score = percentage_of_nodes_to_score
        self.next_start_node_index = 0
        self.rng = random.Random(seed)

    def schedule_pod(
        self, fw: Framework, state: CycleState, pod: PodInfo, *, explain: bool = False
    ) -> ScheduleResult:
        """Pick a node for ``pod`` or raise FitError / SchedulingError / NoNodesAvailable.

        With ``explain`` the result carries per-plugin scores and a diagnosis with a status for
        every rejected node (what ``ksched simulate`` prints); otherwise only what the cycle needs.
        """
        snapshot = fw.snapshot
        n_all = len(snapshot.nodes)
        if n_all == 0:
            raise NoNodesAvailable()
        feasible, diagnosis = self._find_nodes_that_fit(fw, state, pod, explain)
        if len(feasible) == 0:
            raise FitError(pod, n_all, diagnosis)
        evaluated = len(feasible) + len(diagnosis.node_to_status)
        if len(feasible) == 1:
            host = snapshot.nodes[int(feasible[0])].name
            return ScheduleResult(host, evaluated, 1, diagnosis=diagnosis if explain else None)
        nodes = [snapshot.nodes[int(r)] for r in feasible]
        if not fw.has_score_plugins():
            totals: Int64Array = np.ones(len(nodes), dtype=np.int64)
            per_plugin: dict[str, Int64Array] = {}
        else:
            st = fw.run_pre_score_plugins(state, pod, nodes)
            if st is not None:
                raise SchedulingError(st)
            outcome, st = fw.run_score_plugins(state, pod, nodes, feasible)
            if st is not None or outcome is None:
                raise SchedulingError(st or Status.as_error("score plugins returned nothing"))
            totals, per_plugin = outcome.totals, outcome.plugin_scores
        best = np.flatnonzero(totals == totals.max())
        pick = int(best[0]) if len(best) == 1 else int(best[self.rng.randrange(len(best))])
        result = ScheduleResult(
            nodes[pick].name, evaluated, len(nodes), diagnosis=diagnosis if explain else None
        )
        if explain:
            names = [n.name for n in nodes]
            result.totals = dict(zip(names, totals.tolist(), strict=True))
            result.scores = {
                name: {pl: int(arr[i]) for pl, arr in per_plugin.items()} for i, name in enumerate(names)
            }
        return result

    # --- filtering -------------------------------------------------------------------------------
    def _find_nodes_that_fit(
        self, fw: Framework, state: CycleState, pod: PodInfo, explain: bool
    ) -> tuple[Rows, Diagnosis]:
        snapshot = fw.snapshot
        diagnosis = Diagnosis()
        pre_res, st, plugins_with_nodes = fw.run_pre_filter_plugins(state, pod)
        diagnosis.unschedulable_plugins = set(plugins_with_nodes)
        if st is not None and st.code != Code.SUCCESS:
            if not st.is_rejected():
                raise SchedulingError(st)
            diagnosis.node_to_status.absent = st
            diagnosis.pre_filter_msg = st.message
            diagnosis.add_plugin_status(st)
            return np.empty(0, dtype=np.intp), diagnosis

        nominated = pod.pod.status.nominated_node_name
        if nominated and nominated in snapshot.node_map:
            rows = np.array([snapshot.node_map[nominated].index], dtype=np.intp)
            outcome = self._filter(fw, state, pod, rows, diagnosis, 1, explain=False)
            if len(outcome.feasible):
                return outcome.feasible, diagnosis
            diagnosis = Diagnosis(unschedulable_plugins=set(plugins_with_nodes))

        n_all = len(snapshot.nodes)
        if pre_res is not None and pre_res.node_names is not None:
            rows = np.array(
                sorted(snapshot.node_map[n].index for n in pre_res.node_names if n in snapshot.node_map),
                dtype=np.intp,
            )
            names = sorted(plugins_with_nodes)
            diagnosis.node_to_status.absent = Status.unresolvable(
                f"node(s) didn't satisfy plugin(s) [{' '.join(names)}]"
            )
            start = 0
        else:
            rows = np.arange(n_all, dtype=np.intp)
            start = self.next_start_node_index % n_all
        if start:
            rows = np.concatenate([rows[start:], rows[:start]])
        percentage = fw.percentage_of_nodes_to_score
        if percentage is None:
            percentage = self.percentage_of_nodes_to_score
        to_find = num_feasible_nodes_to_find(percentage, len(rows))
        if not fw.has_score_plugins():
            to_find = 1
        started = time.perf_counter()
        outcome = self._filter(fw, state, pod, rows, diagnosis, to_find, explain)
        if fw.observe is not None:
            fw.observe("Filter", "Success", time.perf_counter() - started)
        processed = len(outcome.feasible) + len(diagnosis.node_to_status)
        self.next_start_node_index = (self.next_start_node_index + processed) % n_all
        return outcome.feasible, diagnosis

    def _filter(
        self,
        fw: Framework,
        state: CycleState,
        pod: PodInfo,
        rows: Rows,
        diagnosis: Diagnosis,
        to_find: int,
        explain: bool,
    ) -> FilterOutcome:
        """Examine ``rows`` in order until ``to_find`` feasible nodes are found; record rejections."""
        if not fw.has_filter_plugins():
            picked = rows[:to_find]
            return FilterOutcome(picked, {}, {}, len(picked))
        # Examine in chunks so a large cluster with many feasible nodes stops early.
        chunk = len(rows) if to_find >= len(rows) else max(2 * to_find, 256)
        feasible_parts: list[Rows] = []
        found = 0
        pos = 0
        merged = FilterOutcome(np.empty(0, dtype=np.intp), {}, {}, 0)
        while pos < len(rows) and found < to_find:
            part = rows[pos : pos + chunk]
            try:
                outcome = fw.filter_rows(state, pod, part)
            except FilterError as exc:
                raise SchedulingError(exc.status) from exc
            feasible = outcome.feasible
            if found + len(feasible) > to_find:
                # Keep only the prefix of this chunk up to the last feasible node needed.
                keep = to_find - found
                last = int(feasible[keep - 1])
                cut = int(np.flatnonzero(part == last)[0]) + 1
                part = part[:cut]
                feasible = feasible[:keep]
                kept = set(part.tolist())
                outcome.rejected_by = {r: j for r, j in outcome.rejected_by.items() if r in kept}
            feasible_parts.append(feasible)
            found += len(feasible)
            merged.rejected_by.update(outcome.rejected_by)
            merged.statuses.update(outcome.statuses)
            pos += chunk
        merged.feasible = np.concatenate(feasible_parts) if feasible_parts else merged.feasible
        nodes = fw.snapshot.nodes
        must_explain = explain or found == 0
        for row in merged.rejected_by:
            st = fw.status_for(state, pod, merged, row) if must_explain else merged.statuses.get(row)
            if st is None:
                # Not materialized: record the rejecting plugin only (no message needed on success).
                plugin = fw.active_filters(state)[merged.rejected_by[row]].name
                st = Status(Code.UNSCHEDULABLE, plugin=plugin)
            elif st.code == Code.ERROR:
                raise SchedulingError(st)
            diagnosis.node_to_status.set(nodes[row].name, st)
            diagnosis.add_plugin_status(st)
        return merged
