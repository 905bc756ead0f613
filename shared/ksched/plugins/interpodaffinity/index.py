"""Cluster-wide counts for inter-pod affinity, kept in step with the snapshot incrementally.

Upstream walks every pod (or every pod with affinity) in each PreFilter/PreScore. Here the
snapshot's per-node generations tell which nodes changed since the last cycle; only those are
re-read, and the totals are adjusted by the difference. The totals are:

- for every interned term of existing pods (required anti-affinity, required affinity,
  preferred affinity/anti-affinity with its signed weight): topology value -> number of
  occurrences, for the term's topology key;
- for every :class:`LabelClass` of existing pods and every topology key asked for so far:
  topology value -> number of pods;
- for every topology key asked for so far: a column of value codes by snapshot row (-1 when the
  node lacks the key), for vectorized Filter and Score.

A cycle then evaluates each distinct term or class once instead of once per pod.
"""

from __future__ import annotations

from itertools import repeat
from typing import TypeVar

import numpy as np
import numpy.typing as npt

from ksched.framework.nodeinfo import NodeInfo
from ksched.framework.snapshot import Snapshot
from ksched.plugins.interpodaffinity.terms import AffinityTerm, LabelClass, label_class_of, parsed_terms

K = TypeVar("K")
ValueCounts = dict[str, int]
"""topology value -> count"""


class IndexedCounts(dict[str, int]):
    """The value counts of an index table. Once read as an array by value code
    (:meth:`KeyColumn.lookup`), the array is kept and adjusted by :func:`bump` with every change,
    so a cycle reads it without converting the counts again."""

    __slots__ = ("column", "dense")

    def __init__(self, counts: ValueCounts) -> None:
        super().__init__(counts)
        self.dense: npt.NDArray[np.int64] | None = None
        self.column: KeyColumn | None = None

    def adjust_dense(self, value: str, delta: int) -> None:
        """Apply a change of ``value``'s count to the kept array (dropped when the value has no code
        inside it: the next lookup builds it again)."""
        dense, column = self.dense, self.column
        if dense is None or column is None:
            return
        code = column.code_of.get(value)
        if code is None or code >= len(dense) - 1:  # the last slot is the code -1's, always 0
            self.dense = None
            return
        dense.setflags(write=True)
        dense[code] += delta
        dense.setflags(write=False)


def bump(table: dict[K, ValueCounts], key: K, value: str, delta: int) -> None:
    """``table[key][value] += delta``, dropping entries that reach zero."""
    inner = table.get(key)
    if inner is None:
        table[key] = IndexedCounts({value: delta})
        return
    n = inner.get(value, 0) + delta
    if n:
        inner[value] = n
    else:
        del inner[value]
        if not inner:
            del table[key]
            return
    if isinstance(inner, IndexedCounts):
        inner.adjust_dense(value, delta)


class KeyColumn:
    """Codes of one label key's values by snapshot row; -1 where the node lacks the key."""

    __slots__ = ("code_of", "codes")

    def __init__(self, capacity: int) -> None:
        self.code_of: dict[str, int] = {}
        self.codes: npt.NDArray[np.int32] = np.full(max(capacity, 16), -1, dtype=np.int32)

    def set(self, row: int, value: str | None) -> None:
        if row >= len(self.codes):
            grown = np.full(max(row + 1, 2 * len(self.codes)), -1, dtype=np.int32)
            grown[: len(self.codes)] = self.codes
            self.codes = grown
        if value is None:
            self.codes[row] = -1
        else:
            code = self.code_of.get(value)
            if code is None:
                code = self.code_of[value] = len(self.code_of)
            self.codes[row] = code

    def lookup(self, counts: ValueCounts | None) -> npt.NDArray[np.int64]:
        """An array indexed by code (and by -1 -> its last slot, always 0) holding ``counts``. For an
        index table's counts it is the array kept up to date with them: read it, never write it."""
        if isinstance(counts, IndexedCounts):
            dense = counts.dense
            if dense is not None and counts.column is self and len(dense) == len(self.code_of) + 1:
                return dense
            dense = self._array(counts)
            dense.setflags(write=False)
            counts.dense, counts.column = dense, self
            return dense
        return self._array(counts)

    def _array(self, counts: ValueCounts | None) -> npt.NDArray[np.int64]:
        out = np.zeros(len(self.code_of) + 1, dtype=np.int64)
        if counts:
            codes = np.fromiter(map(self.code_of.get, counts, repeat(-1)), dtype=np.int64)
            values = np.fromiter(counts.values(), dtype=np.int64, count=len(counts))
            known = codes >= 0
            out[codes[known]] = values[known]
        return out


class _NodeRecord:
    """What one node contributed to the totals (kept to subtract it when the node changes)."""

    __slots__ = ("affinity", "anti", "classes", "generation", "labels", "preferred")

    def __init__(self, ni: NodeInfo) -> None:
        self.generation = ni.generation
        self.labels: dict[str, str] = dict(ni.labels)
        self.classes: dict[LabelClass, int] = {}
        self.anti: dict[AffinityTerm, int] = {}
        self.affinity: dict[AffinityTerm, int] = {}
        self.preferred: dict[tuple[AffinityTerm, int], int] = {}
        classes = self.classes
        for pi in ni.pods:
            cls = label_class_of(pi)
            classes[cls] = classes.get(cls, 0) + 1
        anti, affinity, preferred = self.anti, self.affinity, self.preferred
        for pi in ni.pods_with_affinity:
            parsed = parsed_terms(pi)
            for t in parsed.required_anti_affinity:
                anti[t] = anti.get(t, 0) + 1
            for t in parsed.required_affinity:
                affinity[t] = affinity.get(t, 0) + 1
            for wt in parsed.preferred_affinity:
                k = (wt.term, wt.weight)
                preferred[k] = preferred.get(k, 0) + 1
            for wt in parsed.preferred_anti_affinity:
                k = (wt.term, -wt.weight)
                preferred[k] = preferred.get(k, 0) + 1


class AffinityIndex:
    """Totals over every pod of one snapshot; call :meth:`sync` before reading them in a cycle."""

    def __init__(self) -> None:
        self._reset(None)

    def _reset(self, snapshot: Snapshot | None) -> None:
        self._snapshot = snapshot
        #: the snapshot's node list object: a new one means the snapshot was reset (generation restarts)
        self._nodes: list[NodeInfo] | None = snapshot.nodes if snapshot is not None else None
        self._generation = -1
        self._gens: npt.NDArray[np.int64] = np.zeros(0, dtype=np.int64)
        self._records: list[_NodeRecord | None] = []
        #: existing pods' required anti-affinity terms -> topology value -> occurrences
        self.anti: dict[AffinityTerm, ValueCounts] = {}
        #: existing pods' required affinity terms -> topology value -> occurrences
        self.affinity: dict[AffinityTerm, ValueCounts] = {}
        #: existing pods' preferred terms with signed weight -> topology value -> occurrences
        self.preferred: dict[tuple[AffinityTerm, int], ValueCounts] = {}
        #: class -> number of pods
        self.classes: dict[LabelClass, int] = {}
        self._class_values: dict[str, dict[LabelClass, ValueCounts]] = {}
        self._columns: dict[str, KeyColumn] = {}

    # --- synchronisation -------------------------------------------------------------------------
    def synced_with(self, snapshot: Snapshot) -> bool:
        return (
            snapshot is self._snapshot
            and snapshot.nodes is self._nodes
            and snapshot.generation == self._generation
        )

    def sync(self, snapshot: Snapshot) -> None:
        """Bring the totals up to date with ``snapshot`` (re-reading only the nodes that changed)."""
        if snapshot is not self._snapshot or snapshot.nodes is not self._nodes:
            self._reset(snapshot)
        elif snapshot.generation == self._generation:
            return
        nodes = snapshot.nodes
        n = len(nodes)
        gens = snapshot.node_generations().copy()
        old = self._gens
        common = min(n, len(old))
        changed = np.flatnonzero(gens[:common] != old[:common]).tolist()
        records = self._records
        for row in changed:
            self._replace(row, nodes[row])
        for row in range(common, n):
            records.append(None)
            self._replace(row, nodes[row])
        for row in range(n, len(records)):
            stale = records[row]
            if stale is not None:
                self._apply(stale, -1, row)
        del records[n:]
        self._gens = gens
        self._generation = snapshot.generation

    def _replace(self, row: int, ni: NodeInfo) -> None:
        old = self._records[row]
        if old is not None:
            self._apply(old, -1, row)
        rec = _NodeRecord(ni)
        self._apply(rec, 1, row)
        self._records[row] = rec

    def _apply(self, rec: _NodeRecord, sign: int, row: int) -> None:
        labels = rec.labels
        for table, contributions in (
            (self.anti, rec.anti),
            (self.affinity, rec.affinity),
        ):
            for term, count in contributions.items():
                value = labels.get(term.topology_key)
                if value is not None:
                    bump(table, term, value, sign * count)
        for key, count in rec.preferred.items():
            value = labels.get(key[0].topology_key)
            if value is not None:
                bump(self.preferred, key, value, sign * count)
        classes = self.classes
        for cls, count in rec.classes.items():
            total = classes.get(cls, 0) + sign * count
            if total:
                classes[cls] = total
            else:
                del classes[cls]
        for topology_key, per_class in self._class_values.items():
            value = labels.get(topology_key)
            if value is None:
                continue
            for cls, count in rec.classes.items():
                bump(per_class, cls, value, sign * count)
        if sign > 0:
            for topology_key, column in self._columns.items():
                column.set(row, labels.get(topology_key))

    # --- lookups ---------------------------------------------------------------------------------
    def class_values(self, topology_key: str) -> dict[LabelClass, ValueCounts]:
        """class -> topology value -> pods, for ``topology_key`` (tracked from now on)."""
        per_class = self._class_values.get(topology_key)
        if per_class is None:
            per_class = self._class_values[topology_key] = {}
            for rec in self._records:
                if rec is None:
                    continue
                value = rec.labels.get(topology_key)
                if value is None:
                    continue
                for cls, count in rec.classes.items():
                    bump(per_class, cls, value, count)
        return per_class

    def column(self, topology_key: str) -> KeyColumn:
        """Value codes of ``topology_key`` by snapshot row (tracked from now on)."""
        column = self._columns.get(topology_key)
        if column is None:
            column = self._columns[topology_key] = KeyColumn(len(self._records))
            for row, rec in enumerate(self._records):
                column.set(row, rec.labels.get(topology_key) if rec is not None else None)
        return column
