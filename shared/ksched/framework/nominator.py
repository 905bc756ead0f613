"""Pods nominated to nodes (by preemption) that the scheduler must keep room for."""

from __future__ import annotations

from collections.abc import Sequence

from ksched.framework.podinfo import PodInfo


class Nominator:
    """node name -> nominated pods, and pod uid -> node name (upstream ``nominator``)."""

    def __init__(self) -> None:
        self._by_node: dict[str, list[PodInfo]] = {}
        self._node_of: dict[str, str] = {}

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
        return self._by_node.get(node_name, ())

    def uids(self) -> list[str]:
        """The nominated pods' uids."""
        return list(self._node_of)

    def nodes(self) -> list[str]:
        """Names of the nodes that have nominated pods."""
        return list(self._by_node)

    def __len__(self) -> int:
        return len(self._node_of)
