"""Pods nominated to nodes (by preemption) that the scheduler must keep room for."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager

from ksched.api.core import Pod
from ksched.api.meta import ObjectMeta
from ksched.framework.podinfo import PodInfo


class Nominator:
    """node name -> nominated pods, and pod uid -> node name (upstream ``nominator``).

    A nominated pod that is being scheduled (:meth:`in_flight`: upstream pops a pod group's members
    together) is in no queue then, and upstream's ``NominatedPodsForNode`` hands such a pod over as a
    bare reference (name, namespace, uid: no requests, priority 0), which keeps no room for it from
    pods of a priority (seed 9305, case 96 of ``ksched differential``'s ``gangs``: a member nominated
    by the group's earlier cycle did not keep another member off its node in the retry)."""

    def __init__(self) -> None:
        self._by_node: dict[str, list[PodInfo]] = {}
        self._node_of: dict[str, str] = {}
        self._in_flight: frozenset[str] = frozenset()

    @contextmanager
    def in_flight(self, uids: Iterable[str]) -> Iterator[None]:
        """Within the block, the nominated pods of ``uids`` are being scheduled (see the class)."""
        before, self._in_flight = self._in_flight, frozenset(uids)
        try:
            yield
        finally:
            self._in_flight = before

    def add(self, pod: PodInfo, node_name: str) -> None:
        self.remove(pod.uid)
        if not node_name:
            return
        self._by_node.setdefault(node_name, []).append(pod)
        self._node_of[pod.uid] = node_name

    def remove(self, uid: str) -> None:
        node = self._node_of.pop(uid, None)
        if node is None:
            return
        remaining = [p for p in self._by_node.get(node, []) if p.uid != uid]
        if remaining:
            self._by_node[node] = remaining
        else:
            self._by_node.pop(node, None)

    def node_of(self, uid: str) -> str | None:
        return self._node_of.get(uid)

    def nominated_pods_for_node(self, node_name: str) -> Sequence[PodInfo]:
        pods = self._by_node.get(node_name, ())
        if not self._in_flight or not any(p.uid in self._in_flight for p in pods):
            return pods
        return [_bare(p) if p.uid in self._in_flight else p for p in pods]

    def uids(self) -> list[str]:
        """The nominated pods' uids."""
        return list(self._node_of)

    def nodes(self) -> list[str]:
        """Names of the nodes that have nominated pods."""
        return list(self._by_node)

    def __len__(self) -> int:
        return len(self._node_of)


def _bare(pod: PodInfo) -> PodInfo:
    """``pod`` as upstream's queue hands over a nominated pod it does not hold: its reference only."""
    meta = pod.pod.metadata
    return PodInfo(Pod(metadata=ObjectMeta(name=meta.name, namespace=meta.namespace, uid=meta.uid)))
