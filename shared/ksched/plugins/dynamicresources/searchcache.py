"""The allocator's searches kept across pods (ksched's own; upstream searches every node for every
pod).

Pods whose claims come from one template ask for the same devices, and between two such pods the
devices taken change only on the node the first one got. A search's outcome on a node depends on
the claims' specs, the device classes they name, the node, the node's pools and which devices of
those pools are taken (allocated or in flight): :class:`SearchMemo` keeps, per node, the outcome
with the node object, the pools (the :class:`PoolCache` list, the same object while the node and
every ResourceSlice are) and the pools' versions in the tracker, and gives it back only while all
are the same. A search that read pool counters (kept per pool name across a pod's nodes) or drew
random share IDs is not kept (``_Search.reusable``).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

import msgspec

from ksched.api.core import Node
from ksched.api.resource import DeviceClass, ResourceClaim
from ksched.plugins.dynamicresources.features import DRAFeatures
from ksched.plugins.dynamicresources.pools import Pool

_Choice = TypeVar("_Choice")
"""What a search found (the allocator's ``Choice``)."""
#: claim signatures remembered (pods of a few templates take turns in the queue)
MEMOS = 16


@dataclass(slots=True)
class _Entry(Generic[_Choice]):
    node: Node
    pools: list[Pool]
    versions: tuple[int, ...]
    choice: _Choice | None


class SearchMemo(Generic[_Choice]):
    """The outcomes of one claim signature (specs and class objects), per node name."""

    def __init__(self, classes: tuple[DeviceClass | None, ...]) -> None:
        self.classes = classes
        self._nodes: dict[str, _Entry[_Choice]] = {}

    def get(self, node: Node, pools: list[Pool], versions: tuple[int, ...]) -> tuple[_Choice | None] | None:
        """``(outcome,)`` when kept for exactly this node, pools and versions, else None."""
        entry = self._nodes.get(node.metadata.name)
        if entry is None or entry.node is not node or entry.pools is not pools or entry.versions != versions:
            return None
        return (entry.choice,)

    def put(self, node: Node, pools: list[Pool], versions: tuple[int, ...], choice: _Choice | None) -> None:
        self._nodes[node.metadata.name] = _Entry(node, pools, versions, choice)


def class_names(claims: Sequence[ResourceClaim]) -> list[str]:
    """The device classes the claims' requests and subrequests name, in order."""
    names: list[str] = []
    for claim in claims:
        for request in claim.spec.devices.requests:
            if request.exactly is not None:
                names.append(request.exactly.device_class_name)
            names.extend(sub.device_class_name for sub in request.first_available)
    return names


class SearchCache(Generic[_Choice]):
    """The plugin's :class:`SearchMemo` per claim signature, the least recently used dropped."""

    def __init__(self, size: int = MEMOS) -> None:
        self.size = size
        self._features: DRAFeatures | None = None
        self._memos: OrderedDict[tuple[bytes, ...], SearchMemo[_Choice]] = OrderedDict()

    def memo(
        self, claims: Sequence[ResourceClaim], classes: Mapping[str, DeviceClass], features: DRAFeatures
    ) -> SearchMemo[_Choice]:
        """The memo of ``claims``' specs; a new one when a class they name is another object now."""
        if features != self._features:
            self._features = features
            self._memos.clear()
        key = tuple(msgspec.json.encode(claim.spec) for claim in claims)
        used = tuple(classes.get(name) for name in class_names(claims))
        memo = self._memos.get(key)
        if (
            memo is None
            or len(memo.classes) != len(used)
            or any(a is not b for a, b in zip(memo.classes, used, strict=True))
        ):
            memo = self._memos[key] = SearchMemo(used)
        self._memos.move_to_end(key)
        while len(self._memos) > self.size:
            self._memos.popitem(last=False)
        return memo
