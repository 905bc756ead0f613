"""The scheduling algorithm of one cycle (upstream ``schedulePod``): PreFilter, the feasible-node
search from a rotating start index, scoring, and host selection; or the Diagnosis of a FitError."""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from ksched.framework.columns import take_items
from ksched.framework.cycle_state import CycleState
from ksched.framework.extender import EXTENDER_NAME, Extender, ExtenderError
from ksched.framework.extender_calls import (
    find_nodes_that_pass_extenders,
    has_extender_filters,
    has_extender_prioritizers,
    prioritize_with_extenders,
)
from ksched.framework.interfaces import Int64Array, Rows
from ksched.framework.nodeinfo import NodeInfo
from ksched.framework.podinfo import PodInfo
from ksched.framework.record import CycleRecord
from ksched.framework.results import Diagnosis, FitError, PreFilterResult
from ksched.framework.runtime import FilterError, FilterOutcome, Framework
from ksched.framework.snapshot import Snapshot
from ksched.framework.status import Code, Status

log = logging.getLogger(__name__)

MIN_FEASIBLE_NODES_TO_FIND = 100
MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND = 5
MIN_NODE_BY_NODE_CHUNK = 16
"""The least rows a search chunk examines after the first when a filter runs node by node."""
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
    #: the scored nodes and their totals, kept by reference (no copy) for :func:`top_score_rows`
    scored_nodes: list[NodeInfo] | None = None
    score_totals: Int64Array | None = None
    #: the weighted per-plugin scores aligned with ``scored_nodes``, also by reference (the trace's
    #: ``plugin_scores``)
    plugin_score_arrays: dict[str, Int64Array] | None = None
    #: the same scores as one array, a row per plugin in ``plugin_score_arrays``' order (the
    #: arrays are its rows)
    plugin_score_matrix: Int64Array | None = None


def top_score_rows(result: ScheduleResult, k: int = 3) -> list[int]:
    """Positions in ``result.scored_nodes`` of the ``k`` best totals, best first (ties: the earlier
    node first); empty when only one node was feasible. Computed on demand, so the cycle itself
    pays nothing for it."""
    totals = result.score_totals
    if result.scored_nodes is None or totals is None or len(totals) == 0:
        return []
    if k <= 0:
        return []
    # a stable sort of the negated totals: best first, ties in scan order (one pass over the nodes)
    rows: list[int] = np.argsort(-totals.astype(np.int64, copy=False), kind="stable")[:k].tolist()
    return rows


def num_feasible_nodes_to_find(percentage: int, num_all_nodes: int) -> int:
    """How many feasible nodes end the search (upstream ``numFeasibleNodesToFind``)."""
    if num_all_nodes < MIN_FEASIBLE_NODES_TO_FIND:
        return num_all_nodes
    if percentage == 0:
        percentage = max(50 - num_all_nodes // 125, MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND)
    num = num_all_nodes * percentage // 100
    return max(num, MIN_FEASIBLE_NODES_TO_FIND)


def _current(snapshot: Snapshot, nodes: list[NodeInfo]) -> list[NodeInfo]:
    """``nodes`` as the snapshot holds them now (after an await), without those removed meanwhile."""
    node_map = snapshot.node_map
    current = (node_map.get(ni.name) for ni in nodes)
    return [ni for ni in current if ni is not None]


@dataclass(slots=True)
class _PreFiltered:
    """PreFilter's outcome: the node subset it narrowed to, the plugins that narrowed, the diagnosis."""

    result: PreFilterResult | None
    plugins_with_nodes: set[str]
    diagnosis: Diagnosis
    rejected: bool = False


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
        nodes = take_items(snapshot.nodes, feasible)
        if not fw.has_score_plugins():
            totals: Int64Array = np.ones(len(nodes), dtype=np.int64)
            per_plugin: dict[str, Int64Array] = {}
            matrix: Int64Array = np.empty((0, len(nodes)), dtype=np.int64)
        else:
            st = fw.run_pre_score_plugins(state, pod, nodes)
            if st is not None:
                raise SchedulingError(st)
            outcome, st = fw.run_score_plugins(state, pod, nodes, feasible)
            if st is not None or outcome is None:
                raise SchedulingError(st or Status.as_error("score plugins returned nothing"))
            totals, per_plugin, matrix = outcome.totals, outcome.plugin_scores, outcome.matrix
        best = np.flatnonzero(totals == totals.max())
        pick = int(best[0]) if len(best) == 1 else int(best[self.rng.randrange(len(best))])
        result = ScheduleResult(
            nodes[pick].name, evaluated, len(nodes), diagnosis=diagnosis if explain else None
        )
        result.scored_nodes, result.score_totals, result.plugin_score_arrays = nodes, totals, per_plugin
        result.plugin_score_matrix = matrix
        if explain:
            names = [n.name for n in nodes]
            result.totals = dict(zip(names, totals.tolist(), strict=True))
            result.scores = {
                name: {pl: int(arr[i]) for pl, arr in per_plugin.items()} for i, name in enumerate(names)
            }
        return result

    # --- with extenders ---------------------------------------------------------------------------
    async def schedule_pod_async(
        self, fw: Framework, state: CycleState, pod: PodInfo, *, explain: bool = False
    ) -> ScheduleResult:
        """:meth:`schedule_pod` consulting the framework's extenders (upstream ``schedulePod`` with
        ``sched.Extenders``): their Filter after the in-tree filters, their Prioritize scores added
        to the plugins' (in ``scores`` under the extender's name). Without extenders it is
        :meth:`schedule_pod`. Across the awaits nodes are carried by name, so the snapshot may change
        meanwhile (a vanished node is dropped).
        """
        extenders = fw.extenders
        if not extenders:
            return self.schedule_pod(fw, state, pod, explain=explain)
        n_all = len(fw.snapshot.nodes)
        if n_all == 0:
            raise NoNodesAvailable()
        nodes, diagnosis = await self._find_nodes_that_fit_async(fw, state, pod, extenders, explain)
        if not nodes:
            raise FitError(pod, n_all, diagnosis)
        evaluated = len(nodes) + len(diagnosis.node_to_status)
        if len(nodes) == 1:
            return ScheduleResult(nodes[0].name, evaluated, 1, diagnosis=diagnosis if explain else None)
        rows = np.fromiter((ni.index for ni in nodes), dtype=np.intp, count=len(nodes))
        st = fw.run_pre_score_plugins(state, pod, nodes)
        if st is not None:
            raise SchedulingError(st)
        outcome, st = fw.run_score_plugins(state, pod, nodes, rows)
        if st is not None or outcome is None:
            raise SchedulingError(st or Status.as_error("score plugins returned nothing"))
        totals, per_plugin = outcome.totals, dict(outcome.plugin_scores)
        names = [ni.name for ni in nodes]
        prioritized = await prioritize_with_extenders(extenders, pod.pod, nodes)
        for ext_name, by_node in prioritized.items():
            scores = np.fromiter((by_node.get(n, 0) for n in names), dtype=np.int64, count=len(names))
            per_plugin[ext_name] = per_plugin[ext_name] + scores if ext_name in per_plugin else scores
            totals = totals + scores
        best = np.flatnonzero(totals == totals.max())
        pick = int(best[0]) if len(best) == 1 else int(best[self.rng.randrange(len(best))])
        result = ScheduleResult(names[pick], evaluated, len(names), diagnosis=diagnosis if explain else None)
        result.scored_nodes, result.score_totals, result.plugin_score_arrays = nodes, totals, per_plugin
        result.plugin_score_matrix = np.stack(list(per_plugin.values())) if prioritized else outcome.matrix
        if explain:
            result.totals = dict(zip(names, totals.tolist(), strict=True))
            result.scores = {
                name: {pl: int(arr[i]) for pl, arr in per_plugin.items()} for i, name in enumerate(names)
            }
        return result

    async def _find_nodes_that_fit_async(
        self,
        fw: Framework,
        state: CycleState,
        pod: PodInfo,
        extenders: Sequence[Extender],
        explain: bool,
    ) -> tuple[list[NodeInfo], Diagnosis]:
        """Upstream ``findNodesThatFitPod`` with extenders: the nominated node must pass them too,
        and the search keeps looking past the first fit when an extender filters or scores."""
        snapshot = fw.snapshot
        pre = self._pre_filter(fw, state, pod)
        if pre.rejected:
            return [], pre.diagnosis
        diagnosis = pre.diagnosis
        nominated = self._fit_nominated(fw, state, pod, diagnosis)
        if nominated is not None:
            nodes = [snapshot.nodes[r] for r in nominated.tolist()]
            try:
                nodes = await find_nodes_that_pass_extenders(extenders, pod.pod, nodes, diagnosis)
            except ExtenderError as exc:
                log.warning("Evaluation failed on nominated node for pod %s: %s", pod.key, exc)
                nodes = []
            if nodes:
                return _current(snapshot, nodes), diagnosis
            diagnosis = Diagnosis(unschedulable_plugins=set(pre.plugins_with_nodes))
        find_one = not (
            fw.has_score_plugins() or has_extender_filters(extenders) or has_extender_prioritizers(extenders)
        )
        # an extender may refuse every node the plugins kept: the FitError's message and preemption
        # then need each node the plugins rejected with its real status, not the placeholder a search
        # that found nodes leaves (its rejections materialized only when nothing fit)
        filtering = has_extender_filters(extenders, pod.pod)
        feasible = self._search(fw, state, pod, pre, diagnosis, explain or filtering, find_one)
        nodes = [snapshot.nodes[r] for r in feasible.tolist()]
        try:
            passed = await find_nodes_that_pass_extenders(extenders, pod.pod, nodes, diagnosis)
        except ExtenderError as exc:
            raise SchedulingError(Status.as_error(exc)) from exc
        if len(passed) != len(nodes):
            diagnosis.unschedulable_plugins.add(EXTENDER_NAME)
        return _current(snapshot, passed), diagnosis

    # --- filtering -------------------------------------------------------------------------------
    def _find_nodes_that_fit(
        self, fw: Framework, state: CycleState, pod: PodInfo, explain: bool
    ) -> tuple[Rows, Diagnosis]:
        pre = self._pre_filter(fw, state, pod)
        if pre.rejected:
            return np.empty(0, dtype=np.intp), pre.diagnosis
        diagnosis = pre.diagnosis
        nominated = self._fit_nominated(fw, state, pod, diagnosis)
        if nominated is not None:
            if len(nominated):
                return nominated, diagnosis
            diagnosis = Diagnosis(unschedulable_plugins=set(pre.plugins_with_nodes))
        feasible = self._search(fw, state, pod, pre, diagnosis, explain, find_one=not fw.has_score_plugins())
        return feasible, diagnosis

    def _pre_filter(self, fw: Framework, state: CycleState, pod: PodInfo) -> _PreFiltered:
        """Run PreFilter; a rejection is recorded in the diagnosis, an error raises."""
        diagnosis = Diagnosis()
        pre_res, st, plugins_with_nodes = fw.run_pre_filter_plugins(state, pod)
        diagnosis.unschedulable_plugins = set(plugins_with_nodes)
        if st is not None and st.code != Code.SUCCESS:
            if not st.is_rejected():
                raise SchedulingError(st)
            diagnosis.node_to_status.absent = st
            diagnosis.pre_filter_msg = st.message
            diagnosis.add_plugin_status(st)
            return _PreFiltered(pre_res, plugins_with_nodes, diagnosis, rejected=True)
        return _PreFiltered(pre_res, plugins_with_nodes, diagnosis)

    def _fit_nominated(
        self, fw: Framework, state: CycleState, pod: PodInfo, diagnosis: Diagnosis
    ) -> Rows | None:
        """The pod's nominated node if it passes the filters (empty if not); None without one."""
        snapshot = fw.snapshot
        nominated = pod.pod.status.nominated_node_name
        if not nominated or nominated not in snapshot.node_map:
            return None
        rows = np.array([snapshot.node_map[nominated].index], dtype=np.intp)
        return self._filter(fw, state, pod, rows, diagnosis, 1, explain=False).feasible

    def _search(
        self,
        fw: Framework,
        state: CycleState,
        pod: PodInfo,
        pre: _PreFiltered,
        diagnosis: Diagnosis,
        explain: bool,
        find_one: bool,
    ) -> Rows:
        """Filter the (PreFilter-narrowed) nodes from the rotating start index until enough fit."""
        snapshot = fw.snapshot
        pre_res = pre.result
        n_all = len(snapshot.nodes)
        if pre_res is not None and pre_res.node_names is not None:
            rows = np.array(
                sorted(snapshot.node_map[n].index for n in pre_res.node_names if n in snapshot.node_map),
                dtype=np.intp,
            )
            names = sorted(pre.plugins_with_nodes)
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
        if find_one:
            to_find = 1
        started = time.perf_counter()
        outcome = self._filter(fw, state, pod, rows, diagnosis, to_find, explain)
        if fw.observe is not None:
            fw.observe("Filter", "Success", time.perf_counter() - started)
        processed = len(outcome.feasible) + len(diagnosis.node_to_status)
        self.next_start_node_index = (self.next_start_node_index + processed) % n_all
        return outcome.feasible

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
        # Examine in chunks so a large cluster with many feasible nodes stops early. Vectorized
        # filters cost little per row: chunks of twice what is needed. A filter run node by node
        # (DynamicResources' allocator for a pod with claims) costs per row: chunks of what is
        # still needed, so it runs on about as many nodes as upstream's search visits.
        node_by_node = fw.has_node_by_node_filters(state)
        chunk = len(rows) if to_find >= len(rows) else (to_find if node_by_node else max(2 * to_find, 256))
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
            if found + len(feasible) >= to_find:
                # Keep only the prefix of this chunk up to the last feasible node needed.
                keep = to_find - found
                last = int(feasible[keep - 1])
                cut = int(np.flatnonzero(part == last)[0]) + 1
                part, tail = part[:cut], part[cut:]
                feasible = feasible[:keep]
                # the rows kept matter only for rows rejected or holding nominated pods
                kept = set(part.tolist()) if outcome.rejected_by or outcome.nominated else set()
                fw.forget_filter_evaluations(state, outcome, tail, kept)
                if outcome.rejected_by:
                    outcome.rejected_by = {r: j for r, j in outcome.rejected_by.items() if r in kept}
            feasible_parts.append(feasible)
            found += len(feasible)
            merged.rejected_by.update(outcome.rejected_by)
            merged.statuses.update(outcome.statuses)
            pos += len(part)
            if node_by_node:
                chunk = max(to_find - found, MIN_NODE_BY_NODE_CHUNK)
        merged.feasible = np.concatenate(feasible_parts) if feasible_parts else merged.feasible
        nodes = fw.snapshot.nodes
        must_explain = explain or found == 0
        # Not materialized: the rejecting plugin only (no message needed on success), one status per
        # plugin shared by its nodes (as NodeToStatus.absent is shared by the nodes not listed)
        placeholders: dict[int, Status] = {}
        for row, j in merged.rejected_by.items():
            st = fw.status_for(state, pod, merged, row) if must_explain else merged.statuses.get(row)
            if st is None:
                st = placeholders.get(j)
                if st is None:
                    plugin = fw.active_filters(state)[j].name
                    st = placeholders[j] = Status(Code.UNSCHEDULABLE, plugin=plugin)
                    diagnosis.add_plugin_status(st)
                diagnosis.node_to_status.set(nodes[row].name, st)
                continue
            if st.code == Code.ERROR:
                raise SchedulingError(st)
            diagnosis.node_to_status.set(nodes[row].name, st)
            diagnosis.add_plugin_status(st)
        if state.record is not None:
            _record_filter(fw, state, pod, merged, state.record)
        return merged


def _record_filter(
    fw: Framework, state: CycleState, pod: PodInfo, outcome: FilterOutcome, record: CycleRecord
) -> None:
    """Each examined node's Filter results as the simulator records them: the plugins that ran on it
    in order, ``passed`` up to the one that rejected it (with its message)."""
    names = [pl.name for pl in fw.active_filters(state)]
    nodes = fw.snapshot.nodes
    for row in outcome.feasible.tolist():
        record.add_filter_passed(nodes[row].name, names)
    for row, j in outcome.rejected_by.items():
        st = fw.status_for(state, pod, outcome, row)
        record.add_filter_rejected(nodes[row].name, names[:j] if j >= 0 else (), st)
