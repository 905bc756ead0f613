"""Per-snapshot columns derived from node objects, for batch filters and scores.

Label values are stored as integer codes per key, taints as a class id per row (nodes with
the same taints share a class, so a pod's tolerations are checked once per class), and which
nodes have an image, per image name. Columns are built lazily and dropped when any node object changes. The
check costs nothing while only pods change: the node objects are compared (one C-level list
comparison) only when the snapshot's ``nodes_version`` moved, i.e. a node was added, replaced or
removed, not on every snapshot generation.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from ksched.api.core import Node, Taint
from ksched.apimachinery.strconv import parse_go_int64
from ksched.framework.nodeinfo import NodeInfo
from ksched.framework.snapshot import Snapshot

Int32Array = npt.NDArray[np.int32]
Int64Array = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]

TaintKey = tuple[tuple[str, str, str], ...]


@dataclass(slots=True)
class TaintClasses:
    """``class_of_row[row]`` indexes ``taints``; class 0 is always the untainted class."""

    class_of_row: Int32Array
    taints: list[tuple[Taint, ...]]


class NodeIndex:
    """Derived columns of one snapshot, aligned with its rows (``snapshot.nodes[row]``)."""

    def __init__(self) -> None:
        # No reference to the Snapshot itself: the index is the value of a weak-keyed map.
        self._nodes_version = -1
        self._nodes: list[Node | None] = []
        self._node_list: list[NodeInfo] = []
        self._node_map: dict[str, NodeInfo] = {}
        #: changes whenever the columns were dropped (node objects or row order changed)
        self.version = 0
        self._clear()

    def _clear(self) -> None:
        self._labels: dict[str, tuple[Int32Array, dict[str, int]]] = {}
        self._ints: dict[str, tuple[Int64Array, BoolArray]] = {}
        self._taints: TaintClasses | None = None
        self._images: dict[str, BoolArray] = {}

    def refresh(self, snap: Snapshot) -> NodeIndex:
        """Drop the columns if a node object or the row order of ``snap`` changed since the last call."""
        # Every node change bumps ``nodes_version`` (unique across snapshots and resets); a pod change
        # does not, so a cycle after an assume skips the O(nodes) comparison. The list identity check
        # is a second guard for a reset snapshot.
        if snap.nodes_version != self._nodes_version or snap.nodes is not self._node_list:
            nodes = [ni.node for ni in snap.nodes]
            if nodes != self._nodes:
                self.version += 1
                self._clear()
            self._nodes = nodes
            self._node_list = snap.nodes
            self._node_map = snap.node_map
            self._nodes_version = snap.nodes_version
        return self

    def __len__(self) -> int:
        return len(self._nodes)

    def row_of(self, node_name: str) -> int | None:
        ni = self._node_map.get(node_name)
        return ni.index if ni is not None else None

    # --- labels ----------------------------------------------------------------------------------
    def label_codes(self, key: str) -> tuple[Int32Array, dict[str, int]]:
        """Per row, a code for the value of label ``key`` (-1 when absent), and value -> code."""
        col = self._labels.get(key)
        if col is None:
            code_of: dict[str, int] = {}
            values = (n.metadata.labels.get(key) if n is not None else None for n in self._nodes)
            codes = np.fromiter(
                (-1 if v is None else code_of.setdefault(v, len(code_of)) for v in values),
                dtype=np.int32,
                count=len(self._nodes),
            )
            col = (codes, code_of)
            self._labels[key] = col
        return col

    def label_ints(self, key: str) -> tuple[Int64Array, BoolArray]:
        """Per row, label ``key`` parsed as a Go int64, and whether it was present and parsed."""
        col = self._ints.get(key)
        if col is None:
            codes, code_of = self.label_codes(key)
            parsed = [parse_go_int64(v) for v in code_of]  # dict order == code order
            by_code = np.array([p if p is not None else 0 for p in parsed] + [0], dtype=np.int64)
            ok_code = np.array([p is not None for p in parsed] + [False], dtype=np.bool_)
            col = (by_code[codes], ok_code[codes])  # code -1 picks the trailing sentinel
            self._ints[key] = col
        return col

    # --- taints ----------------------------------------------------------------------------------
    def taint_classes(self) -> TaintClasses:
        if self._taints is None:
            class_of: dict[TaintKey, int] = {(): 0}
            taints: list[tuple[Taint, ...]] = [()]
            ids = np.zeros(len(self._nodes), dtype=np.int32)
            for row, node in enumerate(self._nodes):
                node_taints = node.spec.taints if node is not None else []
                if not node_taints:
                    continue
                key = tuple((t.key, t.value, t.effect) for t in node_taints)
                cls = class_of.get(key)
                if cls is None:
                    cls = len(taints)
                    class_of[key] = cls
                    taints.append(tuple(node_taints))
                ids[row] = cls
            self._taints = TaintClasses(ids, taints)
        return self._taints

    # --- images ----------------------------------------------------------------------------------
    def has_image(self, image: str) -> BoolArray:
        """Per row, whether the node reports ``image``."""
        col = self._images.get(image)
        if col is None:
            col = np.fromiter(
                (image in ni.image_sizes for ni in self._node_list),
                dtype=np.bool_,
                count=len(self._nodes),
            )
            self._images[image] = col
        return col


_INDEXES: weakref.WeakKeyDictionary[Snapshot, NodeIndex] = weakref.WeakKeyDictionary()


def node_index(snapshot: Snapshot) -> NodeIndex:
    """The refreshed index of ``snapshot`` (one per snapshot object, shared by all plugins)."""
    index = _INDEXES.get(snapshot)
    if index is None:
        index = NodeIndex()
        _INDEXES[snapshot] = index
    return index.refresh(snapshot)
