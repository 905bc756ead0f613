"""An incremental index over one snapshot, so a cycle never scans every pod of every node.

It keeps, per snapshot row (node):
- the pods grouped by (namespace, label set), updated only for rows whose NodeInfo generation
  changed since the last cycle;
- for each (namespace, selector) in use (an LRU of "views"), the number of matching pods per row,
  maintained from the group deltas: one PreFilter/PreScore reads it in O(1);
- for each topology key in use, the value id of every row (``-1`` where the label is missing);
- memoized node-inclusion masks (required node affinity, untolerated taints) per pod spec.

Terminating pods (``deletionTimestamp`` set) are never counted, as upstream.
"""

from __future__ import annotations

import itertools
import operator
from collections import OrderedDict
from collections.abc import Sequence
from typing import Protocol

import msgspec
import numpy as np
import numpy.typing as npt

from ksched.api.core import Node, Pod
from ksched.apimachinery.labels import Selector
from ksched.apimachinery.nodeselector import RequiredNodeAffinity
from ksched.framework.nodeinfo import NodeInfo
from ksched.framework.podinfo import PodInfo
from ksched.plugins.podtopologyspread.common import Constraint, SelectorKey, tolerates_node_taints

Int64Array = npt.NDArray[np.int64]
Int32Array = npt.NDArray[np.int32]
BoolArray = npt.NDArray[np.bool_]

_GENERATION = operator.attrgetter("generation")
_index_tokens = itertools.count()
_AFFINITY_CACHE = "PodTopologySpread.requiredAffinity"


class NodeSource(Protocol):
    """What the index reads from a :class:`~ksched.framework.snapshot.Snapshot`."""

    @property
    def nodes(self) -> list[NodeInfo]: ...

    @property
    def node_map(self) -> dict[str, NodeInfo]: ...

    @property
    def generation(self) -> int: ...

    @property
    def nodes_version(self) -> int: ...

    @property
    def pod_locations(self) -> dict[str, tuple[PodInfo, str]]: ...


def required_affinity(pod_info: PodInfo) -> RequiredNodeAffinity:
    """The pod's required node affinity, built once per pod version."""
    cached = pod_info.cache.get(_AFFINITY_CACHE)
    if isinstance(cached, RequiredNodeAffinity):
        return cached
    aff = RequiredNodeAffinity(pod_info.pod)
    pod_info.cache[_AFFINITY_CACHE] = aff
    return aff


class Topology:
    """Value ids of one topology key for every row; values are interned and never removed."""

    __slots__ = ("ids", "key", "value_ids", "values")

    def __init__(self, key: str, capacity: int) -> None:
        self.key = key
        self.ids: Int32Array = np.full(capacity, -1, dtype=np.int32)
        self.values: list[str] = []
        self.value_ids: dict[str, int] = {}

    def intern(self, value: str) -> int:
        vid = self.value_ids.get(value)
        if vid is None:
            vid = len(self.values)
            self.values.append(value)
            self.value_ids[value] = vid
        return vid

    def set_row(self, row: int, labels: dict[str, str]) -> None:
        value = labels.get(self.key)
        self.ids[row] = -1 if value is None else self.intern(value)

    def grow(self, capacity: int) -> None:
        ids = np.full(capacity, -1, dtype=np.int32)
        ids[: len(self.ids)] = self.ids
        self.ids = ids


class _Group:
    """Pods of one namespace with one label set: where they are (row -> count)."""

    __slots__ = ("labels", "namespace", "rows")

    def __init__(self, namespace: str, labels: dict[str, str]) -> None:
        self.namespace = namespace
        self.labels = labels
        self.rows: dict[int, int] = {}


class _View:
    """Per-row counts of the pods of ``namespace`` matching ``selector``."""

    __slots__ = ("counts", "matched", "namespace", "selector")

    def __init__(self, namespace: str, selector: Selector, capacity: int) -> None:
        self.namespace = namespace
        self.selector = selector
        self.counts: Int64Array = np.zeros(capacity, dtype=np.int64)
        self.matched: dict[int, bool] = {}

    def matches(self, gid: int, group: _Group) -> bool:
        hit = self.matched.get(gid)
        if hit is None:
            hit = self.selector.matches(group.labels)
            self.matched[gid] = hit
        return hit


def _node_identity(node: Node | None) -> object:
    """What node inclusion and topology depend on: name, labels, taints."""
    if node is None:
        return None
    return (node.metadata.name, node.metadata.labels, node.spec.taints)


class SpreadIndex:
    """Counts of matching pods per node row and topology value ids, kept in step with a snapshot."""

    def __init__(self, max_views: int = 64) -> None:
        # No reference to the snapshot: the index is the value of a weak-keyed map.
        self._max_views = max_views
        # A token unique for the process: PodInfo.cache outlives indexes, and ids get reused.
        self._cache_key = f"PodTopologySpread.group.{next(_index_tokens)}"
        self._capacity = 0
        self._synced_generation = -1
        self._synced_nodes: list[NodeInfo] | None = None
        self._synced_nodes_version = -1
        self._synced_pod_count = 0
        self._tail: tuple[str, PodInfo] | None = None
        self.size = 0
        #: bumped whenever a row's node name, labels or taints change
        self.node_version = 0
        self._row_gen: Int64Array = np.zeros(0, dtype=np.int64)
        self._row_node: list[Node | None] = []
        self._row_groups: list[dict[int, int]] = []
        self._groups: list[_Group] = []
        self._group_ids: dict[tuple[str, frozenset[tuple[str, str]]], int] = {}
        self._ns_groups: dict[str, list[int]] = {}
        self._views: OrderedDict[tuple[str, SelectorKey], _View] = OrderedDict()
        self._views_by_ns: dict[str, list[_View]] = {}
        self._topologies: dict[str, Topology] = {}
        self._tainted_rows: set[int] = set()
        self._masks: dict[object, BoolArray] = {}
        self._masks_version = -1

    # --- synchronisation ---------------------------------------------------------------------------
    def sync(self, src: NodeSource) -> None:
        """Bring the index up to date with ``src`` (cheap when nothing changed).

        When the only changes since the last sync are pods appended by ``add_pod`` (the scheduling
        loop's assume/bind), only their nodes are revisited; anything else (removals, replaced
        pods, node changes) falls back to comparing every row's NodeInfo generation.
        """
        nodes = src.nodes
        if (
            src.generation == self._synced_generation
            and nodes is self._synced_nodes
            and len(nodes) == self.size
        ):
            return
        if not self._sync_appended(src):
            self._sync_rows(src)
        self._synced_generation = src.generation
        self._synced_nodes = nodes
        self._synced_nodes_version = src.nodes_version
        locations = src.pod_locations
        self._synced_pod_count = len(locations)
        last = next(reversed(locations.items()), None)
        self._tail = None if last is None else (last[0], last[1][0])

    def _sync_appended(self, src: NodeSource) -> bool:
        """Revisit the nodes of pods appended since the last sync; False when other changes happened."""
        nodes = src.nodes
        if nodes is not self._synced_nodes or len(nodes) != self.size:
            return False
        if src.nodes_version != self._synced_nodes_version:
            return False
        locations = src.pod_locations
        added = len(locations) - self._synced_pod_count
        # Every change bumps the generation once; a pure append of k pods bumps it exactly k times.
        if added <= 0 or src.generation - self._synced_generation != added:
            return False
        entries = list(itertools.islice(reversed(locations.items()), added + 1))
        before = entries[added] if len(entries) > added else None
        if (None if before is None else (before[0], before[1][0])) != self._tail:
            return False
        rows = {ni.index for _, (_, name) in entries[:added] if (ni := src.node_map.get(name)) is not None}
        for row in rows:
            ni = nodes[row]
            self._update_row(row, ni)
            self._row_gen[row] = ni.generation
        return True

    def _sync_rows(self, src: NodeSource) -> None:
        """Revisit every row whose NodeInfo generation changed (and added or removed rows)."""
        nodes = src.nodes
        n = len(nodes)
        gens = np.fromiter(map(_GENERATION, nodes), dtype=np.int64, count=n)
        old = self.size
        self._ensure_capacity(n)
        for row in range(n, old):
            self._update_row(row, None)
        del self._row_groups[n:]
        del self._row_node[n:]
        common = min(n, old)
        for row in np.flatnonzero(gens[:common] != self._row_gen[:common]).tolist():
            self._update_row(row, nodes[row])
        for row in range(old, n):
            self._row_groups.append({})
            self._row_node.append(None)
            self._update_row(row, nodes[row])
        self._row_gen[:n] = gens
        self.size = n

    def _ensure_capacity(self, n: int) -> None:
        if n <= self._capacity:
            return
        cap = max(n, 2 * self._capacity, 16)
        gen = np.zeros(cap, dtype=np.int64)
        gen[: len(self._row_gen)] = self._row_gen
        self._row_gen = gen
        for view in self._views.values():
            counts = np.zeros(cap, dtype=np.int64)
            counts[: len(view.counts)] = view.counts
            view.counts = counts
        for topo in self._topologies.values():
            topo.grow(cap)
        self._capacity = cap

    def _groups_of(self, ni: NodeInfo) -> dict[int, int]:
        out: dict[int, int] = {}
        key = self._cache_key
        for pi in ni.pods:
            gid = pi.cache.get(key)
            if not isinstance(gid, int):
                gid = self._group_of(pi.pod)
                pi.cache[key] = gid
            if gid >= 0:
                out[gid] = out.get(gid, 0) + 1
        return out

    def _group_of(self, pod: Pod) -> int:
        if pod.metadata.deletion_timestamp is not None:
            return -1
        ns = pod.metadata.namespace
        labels = pod.metadata.labels
        gkey = (ns, frozenset(labels.items()))
        gid = self._group_ids.get(gkey)
        if gid is None:
            gid = len(self._groups)
            self._groups.append(_Group(ns, dict(labels)))
            self._group_ids[gkey] = gid
            self._ns_groups.setdefault(ns, []).append(gid)
        return gid

    def _update_row(self, row: int, ni: NodeInfo | None) -> None:
        new = self._groups_of(ni) if ni is not None else {}
        old = self._row_groups[row]
        if new != old:
            for gid in old.keys() | new.keys():
                delta = new.get(gid, 0) - old.get(gid, 0)
                if delta:
                    self._apply(row, gid, delta)
            self._row_groups[row] = new
        node = ni.node if ni is not None else None
        prev = self._row_node[row]
        if node is not prev:
            self._row_node[row] = node
            if _node_identity(node) != _node_identity(prev):
                labels = node.metadata.labels if node is not None else {}
                for topo in self._topologies.values():
                    topo.set_row(row, labels)
                if node is not None and node.spec.taints:
                    self._tainted_rows.add(row)
                else:
                    self._tainted_rows.discard(row)
                self.node_version += 1

    def _apply(self, row: int, gid: int, delta: int) -> None:
        group = self._groups[gid]
        count = group.rows.get(row, 0) + delta
        if count:
            group.rows[row] = count
        else:
            group.rows.pop(row, None)
        for view in self._views_by_ns.get(group.namespace, ()):
            if view.matches(gid, group):
                view.counts[row] += delta

    # --- queries -------------------------------------------------------------------------------------
    def counts(self, namespace: str, constraint: Constraint) -> Int64Array:
        """Matching pods of ``namespace`` per row (length ``size``; do not modify).

        An empty selector counts nothing and a nothing-selector matches nothing, as upstream's
        ``countPodsMatchSelector``.
        """
        if constraint.selector.empty or constraint.key is None:
            return np.zeros(self.size, dtype=np.int64)
        vkey = (namespace, constraint.key)
        view = self._views.get(vkey)
        if view is None:
            view = self._new_view(namespace, constraint.selector)
            self._views[vkey] = view
            self._views_by_ns.setdefault(namespace, []).append(view)
            if len(self._views) > self._max_views:
                _, evicted = self._views.popitem(last=False)
                self._views_by_ns[evicted.namespace].remove(evicted)
        else:
            self._views.move_to_end(vkey)
        return view.counts[: self.size]

    def _new_view(self, namespace: str, selector: Selector) -> _View:
        view = _View(namespace, selector, self._capacity)
        counts = view.counts
        for gid in self._ns_groups.get(namespace, ()):
            group = self._groups[gid]
            if group.rows and view.matches(gid, group):
                for row, n in group.rows.items():
                    counts[row] += n
        return view

    def topology(self, key: str) -> Topology:
        """The value ids of ``key`` for every row."""
        topo = self._topologies.get(key)
        if topo is None:
            topo = Topology(key, self._capacity)
            for row in range(self.size):
                node = self._row_node[row]
                if node is not None:
                    topo.set_row(row, node.metadata.labels)
            self._topologies[key] = topo
        return topo

    def has_keys(self, keys: Sequence[str]) -> BoolArray:
        """Rows whose node has every label in ``keys`` (upstream ``nodeLabelsMatchSpreadConstraints``)."""
        mkey = ("keys", *keys)
        cache = self._mask_cache()
        mask = cache.get(mkey)
        if mask is None:
            mask = np.ones(self.size, dtype=np.bool_)
            for key in dict.fromkeys(keys):
                mask &= self.topology(key).ids[: self.size] >= 0
            cache[mkey] = mask
        return mask

    def _mask_cache(self) -> dict[object, BoolArray]:
        if self._masks_version != self.node_version:
            self._masks.clear()
            self._masks_version = self.node_version
        elif len(self._masks) > 256:
            self._masks.clear()
        return self._masks

    def affinity_mask(self, pod_info: PodInfo) -> BoolArray | None:
        """Rows matching the pod's nodeSelector and required node affinity; None means every row."""
        affinity = required_affinity(pod_info)
        if affinity.is_empty:
            return None
        spec = pod_info.pod.spec
        required = spec.affinity.node_affinity if spec.affinity is not None else None
        mkey = ("affinity", msgspec.msgpack.encode((spec.node_selector, required)))
        cache = self._mask_cache()
        mask = cache.get(mkey)
        if mask is None:
            nodes = self._row_node
            mask = np.fromiter(
                (node is not None and affinity.matches_node(node) for node in nodes[: self.size]),
                dtype=np.bool_,
                count=self.size,
            )
            cache[mkey] = mask
        return mask

    def taints_mask(self, pod: Pod) -> BoolArray | None:
        """Rows with no NoSchedule/NoExecute taint the pod leaves untolerated; None means every row."""
        if not self._tainted_rows:
            return None
        mkey = ("taints", msgspec.msgpack.encode(pod.spec.tolerations))
        cache = self._mask_cache()
        mask = cache.get(mkey)
        if mask is None:
            mask = np.ones(self.size, dtype=np.bool_)
            for row in self._tainted_rows:
                node = self._row_node[row]
                if node is not None and not tolerates_node_taints(pod, node):
                    mask[row] = False
            cache[mkey] = mask
        return mask
