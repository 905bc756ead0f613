"""The cluster snapshot a scheduling cycle reads: nodes with their pods, columnar aggregates,
and the other objects plugins look up. Updated incrementally; every change bumps ``generation``."""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import msgspec
import numpy as np
import numpy.typing as npt

from ksched.api.core import Node, Pod
from ksched.framework.columns import NodeColumns
from ksched.framework.nodeinfo import NodeInfo
from ksched.framework.objects import ClusterObjects
from ksched.framework.podgroups import PodGroupTable, group_key
from ksched.framework.podinfo import PodInfo

_node_versions = itertools.count(1)


class SnapshotError(KeyError):
    """A node or pod the snapshot does not hold."""


class Snapshot:
    """Nodes in a stable order (``nodes[i].index == i``), pods by uid, and columnar aggregates."""

    def __init__(self) -> None:
        self.nodes: list[NodeInfo] = []
        self.node_map: dict[str, NodeInfo] = {}
        self.columns = NodeColumns()
        self.objects = ClusterObjects()
        self.generation = 0
        #: changes whenever a node is added, changed or removed (never when only pods change);
        #: unique across snapshots and resets, so per-node indexes can key their caches on it
        self.nodes_version = next(_node_versions)
        #: uid -> (PodInfo, node name) for every pod placed on a node (bound or assumed)
        self.pod_locations: dict[str, tuple[PodInfo, str]] = {}
        #: uid -> node of the placements made with :meth:`add_local` (a scheduler replica's own
        #: assumptions, not yet answered) that no other ``add_pod`` or ``remove_pod`` of that pod has
        #: replaced since: only these are the replica's to undo (:meth:`undo_local`)
        self.local: dict[str, str] = {}
        #: the pod groups of placed pods (GenericWorkload): each member here is scheduled (bound or
        #: assumed), which is what GangScheduling's Permit counts
        self.pod_groups = PodGroupTable()
        #: pods whose node has not been seen yet, by node name
        self._waiting: dict[str, list[PodInfo]] = {}
        #: image name -> number of nodes that have it
        self.image_num_nodes: dict[str, int] = {}
        #: image name -> its size as upstream's cache keeps it: one state per name, made by the first
        #: node that reported the name (in the order nodes were added) and kept while any node has it,
        #: so every node that has the image counts that node's size, not its own
        self.image_sizes: dict[str, int] = {}
        self._affinity_version = 0
        self._affinity_cache: tuple[int, list[NodeInfo], list[NodeInfo]] | None = None

    def reset(self) -> None:
        """Empty the snapshot in place (frameworks keep their reference to this object)."""
        self.__init__()  # type: ignore[misc]

    def __len__(self) -> int:
        return len(self.nodes)

    def __iter__(self) -> Iterator[NodeInfo]:
        return iter(self.nodes)

    def get(self, name: str) -> NodeInfo:
        try:
            return self.node_map[name]
        except KeyError:
            raise SnapshotError(f'nodeinfo not found for node name "{name}"') from None

    def _bump(self) -> None:
        self.generation += 1

    # --- nodes -----------------------------------------------------------------------------------
    def upsert_node(self, node: Node) -> NodeInfo:
        """Add a node or replace its object, keeping the pods accounted on it."""
        name = node.metadata.name
        ni = self.node_map.get(name)
        if ni is None:
            ni = NodeInfo(node)
            ni.index = self.columns.append_row()
            self.nodes.append(ni)
            self.node_map[name] = ni
            for pi in self._waiting.pop(name, []):
                ni.add_pod(pi)
                self._note_affinity(pi, ni)
        else:
            self._count_images(ni, -1)
            ni.set_node(node)
        self._count_images(ni, 1)
        self.columns.set_allocatable(ni.index, ni.allocatable)
        self._sync_requested(ni)
        self.nodes_version = next(_node_versions)
        self._bump()
        return ni

    def remove_node(self, name: str) -> None:
        """Remove a node; its pods wait for a node of that name to come back (as upstream's cache)."""
        ni = self.node_map.pop(name, None)
        if ni is None:
            return
        self._count_images(ni, -1)
        last = self.nodes.pop()
        if last is not ni:
            self.columns.move_row(last.index, ni.index)
            last.index = ni.index
            self.nodes[ni.index] = last
        self.columns.pop_row()
        if ni.pods:
            self._waiting[name] = list(ni.pods)
        self._affinity_version += 1  # rows moved: the lists are in row order
        self.nodes_version = next(_node_versions)
        self._bump()

    def _count_images(self, ni: NodeInfo, sign: int) -> None:
        for image, size in ni.image_sizes.items():
            n = self.image_num_nodes.get(image, 0) + sign
            if n > 0:
                self.image_num_nodes[image] = n
                self.image_sizes.setdefault(image, size)
            else:
                self.image_num_nodes.pop(image, None)
                self.image_sizes.pop(image, None)

    # --- pods ------------------------------------------------------------------------------------
    def add_local(self, pod: Pod | PodInfo, node_name: str) -> PodInfo:
        """:meth:`add_pod` for a scheduler replica's own assumption, which :meth:`undo_local` may
        take back (any other placement or removal of the pod is the informer's word, which it may not)."""
        pi = self.add_pod(pod, node_name)
        self.local[pi.uid] = node_name
        return pi

    def undo_local(self, uid: str, node_name: str, replaced: tuple[PodInfo, str] | None) -> bool:
        """Take back the local placement of ``uid`` on ``node_name`` (putting back ``replaced``, where
        the pod was before it) if nothing replaced it since; False when something did: the snapshot
        then has the informer's word on the pod (the placement accepted, or made by another
        replica), and undoing it would leave the replica without a placement the informer has."""
        if self.local.get(uid) != node_name:
            return False
        self.remove_pod(uid)
        if replaced is not None:
            self.add_pod(*replaced)
        return True

    def add_pod(self, pod: Pod | PodInfo, node_name: str | None = None) -> PodInfo:
        """Account a pod on ``node_name`` (default: its ``spec.nodeName``); replaces an older version.

        A :class:`PodInfo` is built for a plain ``Pod`` only when the placement is new or changed.
        """
        raw = pod.pod if isinstance(pod, PodInfo) else pod
        uid = raw.metadata.uid
        if self.local:
            self.local.pop(uid, None)
        target = node_name or raw.spec.node_name
        if not target:
            meta = raw.metadata
            raise SnapshotError(f"pod {meta.namespace}/{meta.name} has no node to be placed on")
        current = self.pod_locations.get(uid)
        pi: PodInfo | None = pod if isinstance(pod, PodInfo) else None
        if current is not None:
            known, where = current
            if where == target and known.pod.spec == raw.spec:
                terminating = raw.metadata.deletion_timestamp is not None
                if (
                    known.labels == raw.metadata.labels
                    and (known.pod.metadata.deletion_timestamp is not None) == terminating
                ):
                    # The same placement seen again (an assumption confirmed, a status update): nothing
                    # the plugins account changed, so keep the aggregates and indexes as they are.
                    known.pod = raw
                    return known
                # Only its labels changed (the topology labels a binding adds), or it began
                # terminating (a preemption's victim, which PodTopologySpread no longer counts:
                # sequences-s9502-400): what PodInfo derives from the spec holds, and so do the
                # node's requests; the indexes that read labels or the deletion are redone.
                return self._relabel(known, pi or known.with_pod(raw), target)
            self.remove_pod(uid)
        if pi is None:
            pi = PodInfo(raw)
        self.pod_locations[uid] = (pi, target)
        if group_key(raw) is not None:
            self.pod_groups.place_pod(raw)
        ni = self.node_map.get(target)
        if ni is None:
            self._waiting.setdefault(target, []).append(pi)
        else:
            ni.add_pod(pi)
            self._sync_requested(ni)
            self._note_affinity(pi, ni)
        self._bump()
        return pi

    def _relabel(self, known: PodInfo, pi: PodInfo, node_name: str) -> PodInfo:
        """:meth:`remove_pod` of ``known`` then placing ``pi`` on the same node, for a version whose
        spec is the same (its labels or its deletion changed): the same lists, indexes and
        generations, without counting the requests out and in again (nor rewriting the node's
        columns with the values they hold)."""
        self.pod_groups.remove_pod(known.pod)
        del self.pod_locations[pi.uid]  # re-inserted last, as a removal and a placement leave it
        self.pod_locations[pi.uid] = (pi, node_name)
        self.pod_groups.place_pod(pi.pod)
        ni = self.node_map.get(node_name)
        if ni is None:
            waiting = self._waiting.get(node_name, [])
            self._waiting[node_name] = [p for p in waiting if p.uid != pi.uid] + [pi]
        else:
            ni.replace_pod(pi)  # the same spec: the same lists the node is in
            self.columns.generations[ni.index] = ni.generation
        self.generation += 2  # a removal and a placement
        return pi

    def remove_pod(self, uid: str) -> PodInfo | None:
        if self.local:
            self.local.pop(uid, None)
        entry = self.pod_locations.pop(uid, None)
        if entry is None:
            return None
        pi, node_name = entry
        self.pod_groups.remove_pod(pi.pod)
        ni = self.node_map.get(node_name)
        if ni is not None:
            ni.remove_pod(uid)
            self._sync_requested(ni)
            self._note_affinity(pi, ni)
        else:
            waiting = self._waiting.get(node_name, [])
            self._waiting[node_name] = [p for p in waiting if p.uid != uid]
        self._bump()
        return pi

    def location(self, uid: str) -> str | None:
        entry = self.pod_locations.get(uid)
        return entry[1] if entry else None

    def node_generations(self) -> npt.NDArray[np.int64]:
        """``NodeInfo.generation`` of every node by row, without reading the nodes (a view: copy it
        to keep it). Per-node indexes compare it with what they saw to find the nodes that changed."""
        columns = self.columns
        return columns.generations[: columns.size]

    def _sync_requested(self, ni: NodeInfo) -> None:
        self.columns.generations[ni.index] = ni.generation
        self.columns.set_requested(
            ni.index,
            ni.requested,
            len(ni.pods),
            ni.non_zero_requested.milli_cpu,
            ni.non_zero_requested.memory,
        )

    def _note_affinity(self, pi: PodInfo, ni: NodeInfo) -> None:
        """After ``pi`` was added to or removed from ``ni``: invalidate the lists of nodes with
        pods with (anti-)affinity when ``ni`` may have joined or left one (its list of such pods
        now holds at most that pod). Other changes keep the lists: they hold the nodes, whose pods
        are read from the nodes themselves."""
        if (pi.has_affinity and len(ni.pods_with_affinity) <= 1) or (
            pi.has_required_anti_affinity and len(ni.pods_with_required_anti_affinity) <= 1
        ):
            self._affinity_version += 1

    # --- derived lists (upstream's HavePodsWithAffinityList / ...RequiredAntiAffinityList) -------
    def _affinity_lists(self) -> tuple[list[NodeInfo], list[NodeInfo]]:
        cached = self._affinity_cache
        if cached is None or cached[0] != self._affinity_version:
            with_aff = [ni for ni in self.nodes if ni.pods_with_affinity]
            with_anti = [ni for ni in self.nodes if ni.pods_with_required_anti_affinity]
            cached = (self._affinity_version, with_aff, with_anti)
            self._affinity_cache = cached
        return cached[1], cached[2]

    def have_pods_with_affinity(self) -> list[NodeInfo]:
        return self._affinity_lists()[0]

    def have_pods_with_required_anti_affinity(self) -> list[NodeInfo]:
        return self._affinity_lists()[1]

    # --- construction helpers ---------------------------------------------------------------------
    @classmethod
    def build(cls, nodes: list[Node], pods: list[Pod]) -> Snapshot:
        """A snapshot of ``nodes`` with every pod that has a ``spec.nodeName`` placed on it."""
        snap = cls()
        for node in nodes:
            snap.upsert_node(node)
        for pod in pods:
            if pod.spec.node_name:
                snap.add_pod(pod)
        return snap


def with_node_name(pod: Pod, node_name: str) -> Pod:
    """A copy of ``pod`` bound to ``node_name`` (what an assumed pod looks like)."""
    return msgspec.structs.replace(pod, spec=msgspec.structs.replace(pod.spec, node_name=node_name))
