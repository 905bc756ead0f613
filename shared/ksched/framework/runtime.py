"""The framework runtime: runs one profile's plugins at each extension point, as upstream's
``frameworkImpl``. It is also the :class:`Handle` plugins are constructed with."""

from __future__ import annotations

import functools
import random
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar, cast

import numpy as np

from ksched.apimachinery.strconv import go_quote
from ksched.framework import interfaces as ifc
from ksched.framework.cycle_state import CycleState
from ksched.framework.evaluations import PluginEvaluations
from ksched.framework.extender import Extender
from ksched.framework.extender_calls import bind_with_extenders
from ksched.framework.group_handle import PodGroupHandle
from ksched.framework.handle import Nominator
from ksched.framework.interfaces import MAX_NODE_SCORE, MIN_NODE_SCORE, Int64Array, Rows
from ksched.framework.nodeinfo import NodeInfo
from ksched.framework.podgroups import PodGroupStates
from ksched.framework.podinfo import PodInfo
from ksched.framework.record import CycleRecord, status_text
from ksched.framework.results import NodeToStatus, PostFilterResult, PreFilterResult, QueuedPodInfo
from ksched.framework.snapshot import Snapshot
from ksched.framework.status import Code, Status, is_skip
from ksched.framework.waiting import MAX_PERMIT_TIMEOUT, WaitingPods


class NoNominations:
    def nominated_pods_for_node(self, node_name: str) -> Sequence[PodInfo]:
        return ()


@dataclass
class PluginsByPoint:
    """A profile's plugin instances per extension point, in configured order."""

    pre_enqueue: list[ifc.PreEnqueuePlugin] = field(default_factory=list)
    queue_sort: list[ifc.QueueSortPlugin] = field(default_factory=list)
    pre_filter: list[ifc.PreFilterPlugin] = field(default_factory=list)
    filter: list[ifc.FilterPlugin] = field(default_factory=list)
    post_filter: list[ifc.PostFilterPlugin] = field(default_factory=list)
    pre_score: list[ifc.PreScorePlugin] = field(default_factory=list)
    score: list[tuple[ifc.ScorePlugin, int]] = field(default_factory=list)
    reserve: list[ifc.ReservePlugin] = field(default_factory=list)
    permit: list[ifc.PermitPlugin] = field(default_factory=list)
    pre_bind: list[ifc.PreBindPlugin] = field(default_factory=list)
    bind: list[ifc.BindPlugin] = field(default_factory=list)
    post_bind: list[ifc.PostBindPlugin] = field(default_factory=list)
    enqueue_extensions: list[ifc.EnqueueExtensions] = field(default_factory=list)


@dataclass(slots=True)
class FilterOutcome:
    """Result of the filter pass over candidate rows, in the order they were examined."""

    feasible: Rows
    #: rejected row -> index into the filter plugin list of the plugin that rejected it
    rejected_by: dict[int, int]
    #: statuses already known (per-node path); others are derived on demand
    statuses: dict[int, Status]
    processed: int
    #: rows of nodes with nominated pods, filtered one by one (maybe twice) after the batch pass
    nominated: Sequence[int] = ()
    #: the Filter plugins run, in order (``rejected_by`` indexes them)
    filters: Sequence[ifc.FilterPlugin] = ()


@dataclass(slots=True)
class ScoreOutcome:
    """Weighted per-plugin scores and totals, aligned with the scored nodes."""

    plugin_scores: dict[str, Int64Array]
    totals: Int64Array
    matrix: Int64Array
    """The weighted scores, a row per plugin in ``plugin_scores``' order (its values are the rows)."""


def _first_out_of_range(matrix: Int64Array) -> tuple[int, int] | None:
    """The first row (plugin) of ``matrix`` with a score outside [MIN_NODE_SCORE, MAX_NODE_SCORE] and
    that score (its maximum when too high, else its minimum); None when all are in range."""
    highest, lowest = matrix.max(axis=1), matrix.min(axis=1)
    bad = (highest > MAX_NODE_SCORE) | (lowest < MIN_NODE_SCORE)
    if not bad.any():
        return None
    i = int(np.flatnonzero(bad)[0])
    return i, int(highest[i]) if highest[i] > MAX_NODE_SCORE else int(lowest[i])


def _failed_at(point: str, plugin: str, st: Status) -> Status:
    """A Reserve, Permit, PreBind or Bind plugin's failure as upstream's framework returns it: a
    rejection as it is (naming the plugin), an error wrapped ``running <point> plugin "<name>":
    <error>`` (Go's ``%q``)."""
    if st.is_rejected():
        return st.with_plugin(plugin)
    wrapped = RuntimeError(f"running {point} plugin {go_quote(plugin)}: {st.message}")
    wrapped.__cause__ = st.error  # the API's error (its code) stays readable, as Go's %w keeps it
    return Status.as_error(wrapped).with_plugin(plugin)


def _plugin_error(plugin: Any, exc: BaseException, point: str) -> Status:
    """A plugin that raised: an error in the words upstream's framework wraps an error status in at
    ``point`` (``running <point> plugin "<name>": <error>``)."""
    return Status.as_error(
        RuntimeError(f"running {point} plugin {go_quote(plugin.name)}: {exc}")
    ).with_plugin(plugin.name)


class _ScoreFailed(Exception):
    """A Score extension's error status, raised to the one place that words it."""


def _status_label(status: object) -> str:
    return status.code.label if isinstance(status, Status) else "Success"


F = TypeVar("F", bound=Callable[..., Any])
R = TypeVar("R")

PluginObserver = Callable[[str, str, str, float, int], None]
"""``(plugin, extension point, status label, seconds per run, runs)``: upstream's
plugin_execution_duration_seconds, fed only on sampled cycles (``CycleState.record_plugin_metrics``).
A batch call over many nodes reports one run per node, each taking the call's mean time per node."""


def _itself(result: Any) -> object:
    return result


def _first(result: Any) -> object:
    return result[0]


def _second(result: Any) -> object:
    return result[1]


def _run_sampled(
    observe: PluginObserver,
    plugin: str,
    point: str,
    status_of: Callable[[R], object],
    fn: Callable[..., R],
    *args: Any,
) -> R:
    """``fn(*args)`` timed as one run of ``plugin`` at ``point`` (the sampled path only)."""
    started = time.perf_counter()
    result = fn(*args)
    observe(plugin, point, _status_label(status_of(result)), time.perf_counter() - started, 1)
    return result


async def _run_sampled_async(
    observe: PluginObserver,
    plugin: str,
    point: str,
    status_of: Callable[[R], object],
    fn: Callable[..., Awaitable[R]],
    *args: Any,
) -> R:
    started = time.perf_counter()
    result = await fn(*args)
    observe(plugin, point, _status_label(status_of(result)), time.perf_counter() - started, 1)
    return result


def _timed(point: str, status_of: Callable[[Any], object]) -> Callable[[F], F]:
    """Report the duration of an extension point to ``Framework.observe`` when one is installed
    (upstream's framework_extension_point_duration_seconds); free when none is."""

    def decorate(method: F) -> F:
        @functools.wraps(method)
        def wrapper(self: Framework, *args: Any, **kwargs: Any) -> Any:
            observe = self.observe
            if observe is None:
                return method(self, *args, **kwargs)
            started = time.perf_counter()
            result = method(self, *args, **kwargs)
            observe(point, _status_label(status_of(result)), time.perf_counter() - started)
            return result

        return cast(F, wrapper)

    return decorate


class Framework(PodGroupHandle):
    """One profile: its plugins, weights, and the snapshot they read."""

    def __init__(
        self,
        profile_name: str,
        snapshot: Snapshot,
        *,
        percentage_of_nodes_to_score: int | None = None,
        parallelism: int = 16,
        nominator: Nominator | None = None,
        client: object | None = None,
    ) -> None:
        self._profile_name = profile_name
        self._snapshot = snapshot
        self.percentage_of_nodes_to_score = percentage_of_nodes_to_score
        self._parallelism = parallelism
        self._nominator: Nominator = nominator if nominator is not None else NoNominations()
        self._client = client
        self.plugins = PluginsByPoint()
        self.score_weights: dict[str, int] = {}
        #: (plugin id, protocol) -> whether the plugin implements it: Protocol isinstance checks are
        #: slow, so each is decided once per plugin object (lists may be replaced after set_plugins)
        self._capabilities: dict[tuple[int, type], bool] = {}
        self._extenders: Sequence[Extender] = ()
        #: (extension point, status label, seconds) -> None; services install a metrics observer
        self.observe: Callable[[str, str, float], None] | None = None
        #: per-plugin durations on sampled cycles; services install a metrics observer
        self.observe_plugin: PluginObserver | None = None
        #: upstream scheduler_plugin_evaluation_total: PreFilter, Filter, PreScore and Score calls,
        #: counted on every cycle (a service exports them at scrape time)
        self.evaluations = PluginEvaluations()
        #: the random source plugins draw from (DefaultPreemption's offset); the service or simulation
        #: shares its algorithm's, so one seed reproduces a run
        self.rng: random.Random | None = None
        #: upstream's PodGroupManager (GenericWorkload): the pod group states of this process (the queue
        #: counts what the informer reports); None: those of the snapshot's placed pods
        self.pod_group_manager: PodGroupStates | None = None
        #: pods held at Permit (a scheduler replica: within a pod group cycle)
        self.waiting_pods = WaitingPods()
        #: upstream ``Handle.Activate``: where pods a plugin wants retried at once go (None: nowhere)
        self.pod_activator: Callable[[dict[str, Any]], None] | None = None

    # --- Handle ----------------------------------------------------------------------------------
    @property
    def snapshot(self) -> Snapshot:
        return self._snapshot

    @property
    def nominator(self) -> Nominator:
        return self._nominator

    @nominator.setter
    def nominator(self, value: Nominator) -> None:
        self._nominator = value

    @property
    def profile_name(self) -> str:
        return self._profile_name

    @property
    def parallelism(self) -> int:
        return self._parallelism

    @property
    def client(self) -> object | None:
        return self._client

    def activate(self, pods: dict[str, Any]) -> None:
        """Upstream ``Activate``: move these pods (name -> pod) to the active queue, if anyone listens."""
        if self.pod_activator is not None and pods:
            self.pod_activator(pods)

    @property
    def extenders(self) -> Sequence[Extender]:
        """Scheduler extenders; when there are some, cycles run ``schedule_pod_async``."""
        return self._extenders

    @extenders.setter
    def extenders(self, value: Sequence[Extender]) -> None:
        self._extenders = tuple(value)

    def set_plugins(self, plugins: PluginsByPoint) -> None:
        self.plugins = plugins
        self.score_weights = {pl.name: w for pl, w in plugins.score}
        self._capabilities.clear()
        self.evaluations.seed(
            (pl.name for pl in plugins.pre_filter),
            (pl.name for pl in plugins.filter),
            (pl.name for pl in plugins.pre_score),
            (pl.name for pl, _ in plugins.score),
        )

    def has_filter_plugins(self) -> bool:
        return bool(self.plugins.filter)

    def has_score_plugins(self) -> bool:
        return bool(self.plugins.score)

    def _plugin_observer(self, state: CycleState) -> PluginObserver | None:
        """The plugin-duration observer if this cycle is sampled (upstream ``ShouldRecordPluginMetrics``)."""
        return self.observe_plugin if state.record_plugin_metrics else None

    def plugin(self, name: str) -> Any | None:
        """The plugin instance called ``name`` at any extension point."""
        for group in vars(self.plugins).values():
            for item in group:
                pl = item[0] if isinstance(item, tuple) else item
                if pl.name == name:
                    return pl
        return None

    # --- queue-side points -------------------------------------------------------------------------
    def run_pre_enqueue_plugins(self, pod: Any) -> Status | None:
        for pl in self.plugins.pre_enqueue:
            try:
                st = pl.pre_enqueue(pod)
            except Exception as exc:
                return _plugin_error(pl, exc, "PreEnqueue")
            if st is not None and st.code != Code.SUCCESS:
                st.plugin = pl.name
                return st
        return None

    def queue_sort_less(self) -> Callable[[QueuedPodInfo, QueuedPodInfo], bool]:
        pl = self.plugins.queue_sort[0]
        return pl.less

    def queue_sort_key(self) -> Callable[[QueuedPodInfo], tuple[float, ...]] | None:
        """The QueueSort plugin's ``sort_key`` (``QueueSortKey``), or None if it orders by ``less`` only."""
        pl = self.plugins.queue_sort[0]
        return pl.sort_key if isinstance(pl, ifc.QueueSortKey) else None

    # --- PreFilter -------------------------------------------------------------------------------
    @_timed("PreFilter", lambda r: r[1])
    def run_pre_filter_plugins(
        self, state: CycleState, pod: PodInfo
    ) -> tuple[PreFilterResult | None, Status | None, set[str]]:
        """Upstream ``RunPreFilterPlugins``: merged node subset, status, plugins that narrowed nodes."""
        nodes = self._snapshot.nodes
        skip: set[str] = set()
        result: PreFilterResult | None = None
        plugins_with_nodes: set[str] = set()
        return_status: Status | None = None
        sampled = self._plugin_observer(state)
        evaluated = self.evaluations.pre_filter
        record = state.record
        try:
            for pl in self.plugins.pre_filter:
                try:
                    if sampled is None:
                        r, st = pl.pre_filter(state, pod, nodes)
                    else:
                        r, st = _run_sampled(
                            sampled, pl.name, "PreFilter", _second, pl.pre_filter, state, pod, nodes
                        )
                except Exception as exc:
                    evaluated[pl.name] += 1
                    return None, _plugin_error(pl, exc, "PreFilter"), set()
                if record is not None:
                    record.add_pre_filter(pl.name, st, None if r is None else r.node_names or ())
                if is_skip(st):
                    skip.add(pl.name)
                    continue
                evaluated[pl.name] += 1
                if st is not None and st.code != Code.SUCCESS:
                    st.plugin = pl.name
                    if st.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                        return None, st, set()
                    if st.code == Code.UNSCHEDULABLE:
                        return_status = st
                        continue
                    err = Status.as_error(
                        RuntimeError(f"running PreFilter plugin {go_quote(pl.name)}: {st.message}")
                    )
                    return None, err.with_plugin(pl.name), set()
                if r is not None and not r.all_nodes():
                    plugins_with_nodes.add(pl.name)
                result = r if result is None else result.merge(r)
                if result is not None and result.node_names is not None and not result.node_names:
                    names = sorted(plugins_with_nodes)
                    if len(names) == 1:
                        msg = f"node(s) didn't satisfy plugin {names[0]}"
                    else:
                        msg = f"node(s) didn't satisfy plugin(s) [{' '.join(names)}] simultaneously"
                    return result, Status.unresolvable(msg), plugins_with_nodes
            return result, return_status, plugins_with_nodes
        finally:
            state.skip_filter_plugins = frozenset(skip)

    def run_pre_filter_extension_add_pod(
        self, state: CycleState, pod: PodInfo, to_add: PodInfo, node: NodeInfo
    ) -> Status | None:
        sampled = self._plugin_observer(state)
        for pl in self.plugins.pre_filter:
            if pl.name in state.skip_filter_plugins or not self._has(pl, ifc.PreFilterExtensions):
                continue
            add_pod = pl.add_pod  # type: ignore[attr-defined]
            try:
                if sampled is None:
                    st = add_pod(state, pod, to_add, node)
                else:
                    point = "PreFilterExtensionAddPod"
                    st = _run_sampled(sampled, pl.name, point, _itself, add_pod, state, pod, to_add, node)
            except Exception as exc:
                return _plugin_error(pl, exc, "AddPod")
            if st is not None and st.code != Code.SUCCESS:
                return Status.as_error(
                    RuntimeError(f"running AddPod on PreFilter plugin {go_quote(pl.name)}: {st.message}")
                )
        return None

    def run_pre_filter_extension_remove_pod(
        self, state: CycleState, pod: PodInfo, to_remove: PodInfo, node: NodeInfo
    ) -> Status | None:
        sampled = self._plugin_observer(state)
        for pl in self.plugins.pre_filter:
            if pl.name in state.skip_filter_plugins or not self._has(pl, ifc.PreFilterExtensions):
                continue
            remove_pod = pl.remove_pod  # type: ignore[attr-defined]
            try:
                if sampled is None:
                    st = remove_pod(state, pod, to_remove, node)
                else:
                    point = "PreFilterExtensionRemovePod"
                    st = _run_sampled(
                        sampled, pl.name, point, _itself, remove_pod, state, pod, to_remove, node
                    )
            except Exception as exc:
                return _plugin_error(pl, exc, "RemovePod")
            if st is not None and st.code != Code.SUCCESS:
                return Status.as_error(
                    RuntimeError(f"running RemovePod on PreFilter plugin {go_quote(pl.name)}: {st.message}")
                )
        return None

    # --- Filter ----------------------------------------------------------------------------------
    def active_filters(self, state: CycleState) -> list[ifc.FilterPlugin]:
        skip = state.skip_filter_plugins
        return (
            [pl for pl in self.plugins.filter if pl.name not in skip] if skip else list(self.plugins.filter)
        )

    def has_node_by_node_filters(self, state: CycleState) -> bool:
        """Whether a Filter plugin active for this cycle is not vectorized (runs once per node)."""
        return any(not self._has(pl, ifc.BatchFilterPlugin) for pl in self.active_filters(state))

    def run_filter_plugins(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        """Run Filter plugins in order on one node; the first failure wins (per-node path)."""
        skip = state.skip_filter_plugins
        sampled = self._plugin_observer(state)
        evaluated = self.evaluations.filter
        for pl in self.plugins.filter:
            if pl.name in skip:
                continue
            evaluated[pl.name] += 1
            try:
                if sampled is None:
                    st = pl.filter(state, pod, node)
                else:
                    st = _run_sampled(sampled, pl.name, "Filter", _itself, pl.filter, state, pod, node)
            except Exception as exc:
                return _plugin_error(pl, exc, "Filter")
            if st is not None and st.code != Code.SUCCESS:
                if not st.is_rejected():
                    st = Status.as_error(RuntimeError(f"running {pl.name!r} filter plugin: {st.message}"))
                st.plugin = pl.name
                return st
        return None

    def run_filter_plugins_with_nominated_pods(
        self, state: CycleState, pod: PodInfo, node: NodeInfo
    ) -> Status | None:
        """Filter twice when higher-or-equal priority pods are nominated to ``node`` (upstream semantics):
        once as if they were running there, once without them; both must pass."""
        added, state2, node2 = self._add_nominated_pods(state, pod, node)
        if isinstance(added, Status):
            return added
        status = self.run_filter_plugins(state2, pod, node2)
        if status is not None and not status.is_rejected():
            return status
        if added and status is None:
            status = self.run_filter_plugins(state, pod, node)
        return status

    def _add_nominated_pods(
        self, state: CycleState, pod: PodInfo, node: NodeInfo
    ) -> tuple[bool | Status, CycleState, NodeInfo]:
        nominated = self._nominator.nominated_pods_for_node(node.name)
        candidates = [pi for pi in nominated if pi.priority >= pod.priority and pi.uid != pod.uid]
        if not candidates:
            return False, state, node
        node_out = node.clone()
        state_out = state.clone()
        for pi in candidates:
            node_out.add_pod(pi)
            st = self.run_pre_filter_extension_add_pod(state_out, pod, pi, node_out)
            if st is not None and st.code != Code.SUCCESS:
                return st, state, node
        return True, state_out, node_out

    def has_nominated_pods(self, node_name: str, pod: PodInfo) -> bool:
        return any(
            pi.priority >= pod.priority and pi.uid != pod.uid
            for pi in self._nominator.nominated_pods_for_node(node_name)
        )

    def _has(self, pl: object, protocol: type) -> bool:
        key = (id(pl), protocol)
        known = self._capabilities.get(key)
        if known is None:
            known = self._capabilities[key] = isinstance(pl, protocol)
        return known

    def _rows_with_nominated_pods(self, pod: PodInfo) -> list[int]:
        """Rows of nodes holding higher-or-equal priority nominated pods (checked per nominated
        node, not per candidate row: nominations are few)."""
        names = getattr(self._nominator, "nodes", None)
        if names is None:
            if isinstance(self._nominator, NoNominations):
                return []
            candidates = [ni.name for ni in self._snapshot.nodes]
        else:
            candidates = names()
        node_map = self._snapshot.node_map
        return [
            node_map[name].index
            for name in candidates
            if name in node_map and self.has_nominated_pods(name, pod)
        ]

    def filter_rows(self, state: CycleState, pod: PodInfo, rows: Rows) -> FilterOutcome:
        """Filter ``rows`` (examined in the given order): batch plugins vectorized, others per node.

        Nodes with nominated pods take the two-pass per-node path.
        """
        snapshot = self._snapshot
        filters = self.active_filters(state)
        rejected_by: dict[int, int] = {}
        statuses: dict[int, Status] = {}
        nominated_rows = self._rows_with_nominated_pods(pod)
        alive = rows
        if nominated_rows:
            alive = rows[~np.isin(rows, nominated_rows)]
        sampled = self._plugin_observer(state)
        evaluated = self.evaluations.filter
        for j, pl in enumerate(filters):
            n_alive = len(alive)
            if not n_alive:
                break
            evaluated[pl.name] += n_alive
            started = time.perf_counter() if sampled is not None else 0.0
            if self._has(pl, ifc.BatchFilterPlugin):
                try:
                    mask = pl.filter_batch(state, pod, snapshot, alive)  # type: ignore[attr-defined]
                except Exception as exc:
                    raise FilterError(_plugin_error(pl, exc, "Filter")) from exc
                if sampled is not None:
                    self._observe_filter_batch(sampled, pl, state, pod, alive, mask, started)
            else:
                mask = np.ones(len(alive), dtype=np.bool_)
                for k, row in enumerate(alive.tolist()):
                    try:
                        st = pl.filter(state, pod, snapshot.nodes[row])
                    except Exception as exc:
                        raise FilterError(_plugin_error(pl, exc, "Filter")) from exc
                    if st is not None and st.code != Code.SUCCESS:
                        if not st.is_rejected():
                            err = Status.as_error(
                                RuntimeError(f"running {pl.name!r} filter plugin: {st.message}")
                            )
                            raise FilterError(err.with_plugin(pl.name))
                        st.plugin = pl.name
                        statuses[row] = st
                        mask[k] = False
                if sampled is not None:
                    _observe_filter_runs(sampled, pl.name, alive, mask, statuses, started)
            if not mask.all():
                for row in alive[~mask].tolist():
                    rejected_by[row] = j
                alive = alive[mask]
        for row in nominated_rows:
            st = self.run_filter_plugins_with_nominated_pods(state, pod, snapshot.nodes[row])
            if st is not None:
                if not st.is_rejected():
                    raise FilterError(st)
                statuses[row] = st
                rejected_by[row] = next((j for j, pl in enumerate(filters) if pl.name == st.plugin), -1)
        if nominated_rows:
            ok = set(alive.tolist()) | {r for r in nominated_rows if r not in rejected_by}
            feasible = np.array([r for r in rows.tolist() if r in ok], dtype=np.intp)
        else:
            feasible = alive
        return FilterOutcome(feasible, rejected_by, statuses, len(rows), nominated_rows, filters)

    def forget_filter_evaluations(
        self, state: CycleState, outcome: FilterOutcome, rows: Rows, kept: set[int]
    ) -> None:
        """Take back the Filter evaluations :meth:`filter_rows` counted for ``rows``: the nodes a chunk
        examined past the last feasible node the search needed (upstream stops looking there). A row
        rejected by the ``j``-th filter reached filters ``0..j``; one that passed reached them all. Rows
        with nominated pods stay counted (filtered call by call, they are not known to be one pass)."""
        reaching = len(rows)
        evaluated = self.evaluations.filter
        if not outcome.rejected_by and not outcome.nominated:  # every row passed every filter
            for pl in outcome.filters:
                evaluated[pl.name] -= reaching
            return
        nominated = {r for r in outcome.nominated if r not in kept}
        rejected_at: dict[int, int] = {}
        for row, j in outcome.rejected_by.items():
            if row not in kept and row not in nominated:
                rejected_at[j] = rejected_at.get(j, 0) + 1
        reaching -= len(nominated)
        for j, pl in enumerate(outcome.filters):
            evaluated[pl.name] -= reaching
            reaching -= rejected_at.get(j, 0)

    def _observe_filter_batch(
        self,
        observe: PluginObserver,
        pl: ifc.FilterPlugin,
        state: CycleState,
        pod: PodInfo,
        rows: Rows,
        mask: Any,
        started: float,
    ) -> None:
        """One run per node for a batch Filter call; the rejected nodes take the status code of the
        first of them (asked of the per-node ``filter``: a batch call returns no codes)."""
        seconds = time.perf_counter() - started
        n = len(rows)
        passed = int(np.count_nonzero(mask))
        if passed:
            observe(pl.name, "Filter", "Success", seconds / n, passed)
        if passed == n:
            return
        first = int(rows[int(np.argmin(mask))])
        try:
            st = pl.filter(state, pod, self._snapshot.nodes[first])
        except Exception:
            st = None
        label = st.code.label if st is not None and st.is_rejected() else Code.UNSCHEDULABLE.label
        observe(pl.name, "Filter", label, seconds / n, n - passed)

    def status_for(self, state: CycleState, pod: PodInfo, outcome: FilterOutcome, row: int) -> Status:
        """The Filter status of a rejected row, asking its plugin's per-node method when needed."""
        known = outcome.statuses.get(row)
        if known is not None:
            return known
        filters = self.active_filters(state)
        pl = filters[outcome.rejected_by[row]]
        st = pl.filter(state, pod, self._snapshot.nodes[row])
        if st is None or st.code == Code.SUCCESS:
            st = Status.as_error(
                RuntimeError(
                    f"plugin {go_quote(pl.name)}: filter_batch rejected node "
                    f"{self._snapshot.nodes[row].name} but filter accepts it"
                )
            )
        st.plugin = pl.name
        outcome.statuses[row] = st
        return st

    # --- PostFilter ------------------------------------------------------------------------------
    def run_post_filter_plugins(
        self, state: CycleState, pod: PodInfo, statuses: NodeToStatus
    ) -> tuple[PostFilterResult | None, Status]:
        """Upstream ``RunPostFilterPlugins``, each plugin's synchronous ``post_filter``."""
        run = self._post_filter(state, pod, statuses, asynchronous=False)
        try:
            run.send(None)
        except StopIteration as done:
            return cast(tuple[PostFilterResult | None, Status], done.value)
        run.close()
        raise RuntimeError("the synchronous PostFilter run was suspended")

    async def run_post_filter_plugins_async(
        self, state: CycleState, pod: PodInfo, statuses: NodeToStatus
    ) -> tuple[PostFilterResult | None, Status]:
        """As :meth:`run_post_filter_plugins`, awaiting the async form of plugins that have one
        (DefaultPreemption consults the extenders there)."""
        return await self._post_filter(state, pod, statuses, asynchronous=True)

    async def _post_filter(
        self, state: CycleState, pod: PodInfo, statuses: NodeToStatus, *, asynchronous: bool
    ) -> tuple[PostFilterResult | None, Status]:
        """The one PostFilter loop: it awaits nothing unless ``asynchronous`` (so the synchronous
        entry point runs it to completion in one step)."""
        started = time.perf_counter()
        run = _PostFilterRun()
        sampled = self._plugin_observer(state)
        outcome: tuple[PostFilterResult | None, Status] | None = None
        for pl in self.plugins.post_filter:
            try:
                if asynchronous and isinstance(pl, ifc.AsyncPostFilterPlugin):
                    if sampled is None:
                        r, st = await pl.post_filter_async(state, pod, statuses)
                    else:
                        run_async = pl.post_filter_async
                        r, st = await _run_sampled_async(
                            sampled, pl.name, "PostFilter", _second, run_async, state, pod, statuses
                        )
                elif sampled is None:
                    r, st = pl.post_filter(state, pod, statuses)
                else:
                    r, st = _run_sampled(
                        sampled, pl.name, "PostFilter", _second, pl.post_filter, state, pod, statuses
                    )
            except Exception as exc:
                outcome = None, _plugin_error(pl, exc, "PostFilter")
                break
            if state.record is not None:
                _record_post_filter(state.record, pl.name, statuses, r, st)
            outcome = run.step(pl.name, r, st)
            if outcome is not None:
                break
        if outcome is None:
            outcome = run.outcome()
        if self.observe is not None:
            self.observe("PostFilter", _status_label(outcome[1]), time.perf_counter() - started)
        return outcome

    # --- Score -----------------------------------------------------------------------------------
    @_timed("PreScore", lambda r: r)
    def run_pre_score_plugins(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> Status | None:
        skip: set[str] = set()
        sampled = self._plugin_observer(state)
        evaluated = self.evaluations.pre_score
        record = state.record
        try:
            for pl in self.plugins.pre_score:
                try:
                    if sampled is None:
                        st = pl.pre_score(state, pod, nodes)
                    else:
                        st = _run_sampled(
                            sampled, pl.name, "PreScore", _itself, pl.pre_score, state, pod, nodes
                        )
                except Exception as exc:
                    evaluated[pl.name] += 1
                    return _plugin_error(pl, exc, "PreScore")
                if record is not None:
                    record.pre_score[pl.name] = status_text(st)
                if is_skip(st):
                    skip.add(pl.name)
                    continue
                evaluated[pl.name] += 1
                if st is not None and st.code != Code.SUCCESS:
                    return Status.as_error(
                        RuntimeError(f"running PreScore plugin {go_quote(pl.name)}: {st.message}")
                    )
            return None
        finally:
            state.skip_score_plugins = frozenset(skip)

    @_timed("Score", lambda r: r[1])
    def run_score_plugins(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo], rows: Rows
    ) -> tuple[ScoreOutcome | None, Status | None]:
        """Score, normalize and weight; ``rows`` are the nodes' rows in the snapshot columns."""
        snapshot = self._snapshot
        skip = state.skip_score_plugins
        sampled = self._plugin_observer(state)
        evaluated = self.evaluations.score
        n_nodes = len(nodes)
        record = state.record
        active = [(pl, weight) for pl, weight in self.plugins.score if pl.name not in skip]
        # One row per plugin: the range check and the weighting are then a few numpy calls per
        # cycle, not a few per plugin. As upstream, the range is checked once every plugin has
        # scored and normalized.
        matrix = np.empty((len(active), n_nodes), dtype=np.int64)
        raws: list[Int64Array] = []
        for i, (pl, _) in enumerate(active):
            evaluated[pl.name] += n_nodes
            scores = matrix[i]
            phase = "running Score plugins"  # upstream's words for what failed (error statuses)
            try:
                started = time.perf_counter() if sampled is not None else 0.0
                if self._has(pl, ifc.BatchScorePlugin):
                    scores[:] = pl.score_batch(state, pod, snapshot, rows)  # type: ignore[attr-defined]
                else:
                    scores[:] = np.fromiter(
                        (pl.score(state, pod, n) for n in nodes), dtype=np.int64, count=n_nodes
                    )
                if sampled is not None and n_nodes:
                    per_node = (time.perf_counter() - started) / n_nodes
                    sampled(pl.name, "Score", "Success", per_node, n_nodes)
                if record is not None:
                    raws.append(scores.copy())  # before NormalizeScore changes it in place
                if self._has(pl, ifc.ScoreExtensions):
                    phase = "running Normalize on Score plugins"
                    normalize = pl.normalize_score  # type: ignore[attr-defined]
                    if sampled is None:
                        st = normalize(state, pod, nodes, scores)
                    else:
                        point = "ScoreExtensionNormalize"
                        st = _run_sampled(
                            sampled, pl.name, point, _itself, normalize, state, pod, nodes, scores
                        )
                    if st is not None and st.code != Code.SUCCESS:
                        raise _ScoreFailed(st.message)
            except Exception as exc:
                return None, Status.as_error(
                    RuntimeError(f"{phase}: plugin {go_quote(pl.name)} failed with: {exc}")
                )
        if n_nodes and active:
            out_of_range = _first_out_of_range(matrix)
            if out_of_range is not None:
                i, bad = out_of_range
                return None, Status.as_error(
                    RuntimeError(
                        "applying score defaultWeights on Score plugins: "
                        f"plugin {go_quote(active[i][0].name)} returns an invalid score {bad}, "
                        f"it should in the range of [{MIN_NODE_SCORE}, {MAX_NODE_SCORE}] after normalizing"
                    )
                )
        weighted = matrix * np.array([weight for _, weight in active], dtype=np.int64)[:, None]
        totals = weighted.sum(axis=0) if active else np.zeros(n_nodes, dtype=np.int64)
        per_plugin = {pl.name: weighted[i] for i, (pl, _) in enumerate(active)}
        if record is not None:
            names = [n.name for n in nodes]
            for i, (pl, _) in enumerate(active):
                record.add_scores(pl.name, names, raws[i].tolist(), weighted[i].tolist())
        return ScoreOutcome(per_plugin, totals, weighted), None

    # --- Reserve / Permit ------------------------------------------------------------------------
    @_timed("Reserve", lambda r: r)
    def run_reserve_plugins_reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        sampled = self._plugin_observer(state)
        record = state.record
        for pl in self.plugins.reserve:
            if record is not None:
                record.selected_node = node_name
            try:
                if sampled is None:
                    st = pl.reserve(state, pod, node_name)
                else:
                    st = _run_sampled(sampled, pl.name, "Reserve", _itself, pl.reserve, state, pod, node_name)
            except Exception as exc:
                return _plugin_error(pl, exc, "Reserve")
            if record is not None:
                record.reserve[pl.name] = status_text(st)
            if st is not None and st.code != Code.SUCCESS:
                return _failed_at("Reserve", pl.name, st)
        return None

    def run_reserve_plugins_unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        sampled = self._plugin_observer(state)
        for pl in reversed(self.plugins.reserve):
            if sampled is None:
                pl.unreserve(state, pod, node_name)
            else:
                _run_sampled(sampled, pl.name, "Unreserve", _itself, pl.unreserve, state, pod, node_name)

    @_timed("Permit", lambda r: r[0])
    def run_permit_plugins(
        self, state: CycleState, pod: PodInfo, node_name: str
    ) -> tuple[Status | None, dict[str, float]]:
        """Upstream ``RunPermitPlugins``: Allow (None, {}), a rejection, or Wait with each waiting
        plugin's timeout (at most 15 minutes); the Wait status is the last waiting plugin's, with
        upstream's "one or more plugins asked to wait" reason appended."""
        waits: dict[str, float] = {}
        wait_status: Status | None = None
        sampled = self._plugin_observer(state)
        for pl in self.plugins.permit:
            try:
                if sampled is None:
                    st, timeout = pl.permit(state, pod, node_name)
                else:
                    st, timeout = _run_sampled(
                        sampled, pl.name, "Permit", _first, pl.permit, state, pod, node_name
                    )
            except Exception as exc:
                return _plugin_error(pl, exc, "Permit"), {}
            if state.record is not None:
                state.record.add_permit(pl.name, st, timeout)
            if st is None or st.code == Code.SUCCESS:
                continue
            if st.is_rejected():
                return st.with_plugin(pl.name), {}
            if st.code == Code.WAIT:
                waits[pl.name] = min(timeout, MAX_PERMIT_TIMEOUT)
                wait_status = st
                continue
            return _failed_at("Permit", pl.name, st), {}
        if wait_status is not None:
            reasons = (*wait_status.reasons, "one or more plugins asked to wait and no plugin rejected pod")
            return Status(Code.WAIT, *reasons, plugin=wait_status.plugin), waits
        return None, {}

    # --- binding cycle (async: these talk to the API) ------------------------------------------
    async def run_pre_bind_plugins(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        sampled = self._plugin_observer(state)
        for pl in self.plugins.pre_bind:
            try:
                if sampled is None:
                    st = await pl.pre_bind(state, pod, node_name)
                else:
                    st = await _run_sampled_async(
                        sampled, pl.name, "PreBind", _itself, pl.pre_bind, state, pod, node_name
                    )
            except Exception as exc:
                return _plugin_error(pl, exc, "PreBind")
            if state.record is not None:
                state.record.pre_bind[pl.name] = status_text(st)
            if is_skip(st):
                continue
            if st is not None and st.code != Code.SUCCESS:
                return _failed_at("PreBind", pl.name, st)
        return None

    async def run_binding(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        """Upstream ``Scheduler.bind``: an interested extender binder binds the pod, else the bind plugins."""
        if self._extenders:
            bound, st = await bind_with_extenders(self._extenders, pod.pod, node_name)
            if bound:
                return st
        return await self.run_bind_plugins(state, pod, node_name)

    async def run_bind_plugins(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        if not self.plugins.bind:
            return Status.as_error("no bind plugin configured")
        last: Status | None = Status.skip()
        sampled = self._plugin_observer(state)
        for pl in self.plugins.bind:
            try:
                if sampled is None:
                    st = await pl.bind(state, pod, node_name)
                else:
                    st = await _run_sampled_async(
                        sampled, pl.name, "Bind", _itself, pl.bind, state, pod, node_name
                    )
            except Exception as exc:
                return _plugin_error(pl, exc, "Bind")
            if state.record is not None:
                state.record.bind[pl.name] = status_text(st)
            if is_skip(st):
                last = st
                continue
            if st is not None and st.code != Code.SUCCESS:
                return _failed_at("Bind", pl.name, st)
            return None
        return last

    async def run_post_bind_plugins(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        sampled = self._plugin_observer(state)
        for pl in self.plugins.post_bind:
            if sampled is None:
                await pl.post_bind(state, pod, node_name)
            else:
                await _run_sampled_async(
                    sampled, pl.name, "PostBind", _itself, pl.post_bind, state, pod, node_name
                )


def _observe_filter_runs(
    observe: PluginObserver, plugin: str, rows: Rows, mask: Any, statuses: dict[int, Status], started: float
) -> None:
    """One run per node for a per-node Filter pass over ``rows``, by status code, each taking the
    pass's mean time per node."""
    seconds = time.perf_counter() - started
    n = len(rows)
    passed = int(np.count_nonzero(mask))
    if passed:
        observe(plugin, "Filter", "Success", seconds / n, passed)
    if passed < n:
        by_code: dict[str, int] = {}
        for row in rows[~mask].tolist():
            label = statuses[row].code.label
            by_code[label] = by_code.get(label, 0) + 1
        for label, runs in by_code.items():
            observe(plugin, "Filter", label, seconds / n, runs)


def _record_post_filter(
    record: CycleRecord, plugin: str, statuses: NodeToStatus, r: PostFilterResult | None, st: Status | None
) -> None:
    """The rejected nodes a PostFilter plugin was given, the one it nominated marked (the simulator's
    ``AddPostFilterResult``)."""
    nominated = r.nominated_node_name if r is not None and (st is None or st.code == Code.SUCCESS) else ""
    record.add_post_filter(plugin, (node for node, _ in statuses), nominated)


class _PostFilterRun:
    """Upstream ``RunPostFilterPlugins``: the first success or unresolvable rejection ends the run;
    Unschedulable rejections accumulate their reasons and the last nominating result."""

    __slots__ = ("reasons", "rejector", "result")

    def __init__(self) -> None:
        self.result: PostFilterResult | None = None
        self.reasons: list[str] = []
        self.rejector = ""

    def step(
        self, plugin: str, r: PostFilterResult | None, st: Status | None
    ) -> tuple[PostFilterResult | None, Status] | None:
        if st is None or st.code == Code.SUCCESS:
            return r, st if st is not None else Status(Code.SUCCESS)
        if st.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
            return r, st.with_plugin(plugin)
        if not st.is_rejected():
            return None, Status.as_error(RuntimeError(st.message)).with_plugin(plugin)
        if r is not None and r.mode != 0:
            self.result = r
        self.reasons.extend(st.all_reasons())
        self.rejector = self.rejector or plugin
        return None

    def outcome(self) -> tuple[PostFilterResult | None, Status]:
        return self.result, Status(Code.UNSCHEDULABLE, *self.reasons, plugin=self.rejector)


class FilterError(Exception):
    """A Filter plugin failed with an error (not a rejection); carries the Error status."""

    def __init__(self, status: Status) -> None:
        super().__init__(status.message)
        self.status = status
