"""The authoritative scheduler cache: the cluster as the API shows it plus the ledger of
assumed pods (placements accepted but not yet seen bound), with optimistic assume checks.

Every change appends delta ops and advances ``generation``; replicas replay the ops. The changes
that matter to filters are also kept by generation (``changes``) for the assume check.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TypeGuard

import msgspec

from ksched.api.base import K8s
from ksched.api.core import Node, Pod
from ksched.cache.answers import AnswerLog
from ksched.cache.assume_check import Decision, check_placement
from ksched.cache.changelog import ChangeLog, NodeChange, ObjectChange, PodChange, changed_label_keys
from ksched.cache.delta import (
    DeltaOp,
    NodeRemove,
    NodeUpsert,
    ObjectRemove,
    ObjectUpsert,
    PodPlace,
    PodRemove,
)
from ksched.framework.interfaces import PlacementStatePlugin
from ksched.framework.nodeinfo import NodeInfo
from ksched.framework.objects import TABLES, object_key
from ksched.framework.podinfo import PodInfo
from ksched.framework.runtime import Framework
from ksched.framework.snapshot import Snapshot, with_node_name


@dataclass(slots=True)
class Assumption:
    pod: PodInfo
    node: str
    scheduler_id: str
    assumed_at: float
    #: plugins holding what the placement takes (its devices) until it is bound or dropped
    holders: tuple[PlacementStatePlugin, ...] = ()

    def release(self, dropped: bool) -> None:
        for plugin in self.holders:
            plugin.release_placement(self.pod.uid, dropped)


@dataclass(frozen=True, slots=True)
class AssumeVerdict:
    accepted: bool
    reason: str = ""
    full_check: str = ""
    """Why the profile's whole PreFilter and Filter ran (``assume_check.FullCheck``), '' if not."""
    rerun: tuple[str, ...] = ()
    """The plugins the check ran again alone."""


class ClusterCache:
    """Nodes, placed pods, pending pods and the assume ledger; single-writer, not thread-safe."""

    def __init__(
        self,
        *,
        max_assumed_age: float = 900.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.snapshot = Snapshot()
        self.assumed: dict[str, Assumption] = {}
        #: pods without a node that some profile may schedule: uid -> pod
        self.pending: dict[str, Pod] = {}
        self.generation = 0
        self.ops: list[DeltaOp] = []
        self.changes = ChangeLog()
        #: what assumes of each scheduler session were answered (the assume check's basis)
        self.answers = AnswerLog()
        self._max_assumed_age = max_assumed_age
        self._clock = clock

    # --- bookkeeping -----------------------------------------------------------------------------
    def _emit(self, op: DeltaOp) -> None:
        self.ops.append(op)
        self.generation += 1

    def take_ops(self) -> tuple[int, int, list[DeltaOp]]:
        """(base generation, generation, ops) accumulated since the previous call."""
        ops, self.ops = self.ops, []
        return self.generation - len(ops), self.generation, ops

    def _pod_left(self, pod: PodInfo, node: str) -> None:
        self.changes.record(PodChange(self.generation, pod, node, placed=False))

    # --- informer events -------------------------------------------------------------------------
    def upsert_node(self, node: Node) -> None:
        known = self.snapshot.node_map.get(node.metadata.name)
        before = known.node if known is not None else None
        self.snapshot.upsert_node(node)
        self._emit(NodeUpsert(node))
        if before is None or not same_for_filters(before, node):
            self.changes.record(NodeChange(self.generation, node.metadata.name))

    def remove_node(self, name: str) -> None:
        if name not in self.snapshot.node_map:
            return
        self.snapshot.remove_node(name)
        self._emit(NodeRemove(name))
        self.changes.record(NodeChange(self.generation, name))

    def upsert_pod(self, pod: Pod, schedulable: bool = True) -> None:
        """A pod from the watch: bound pods are placed (confirming an assumption), unbound ones pending."""
        uid = pod.metadata.uid
        if pod.status.phase in ("Succeeded", "Failed"):
            self.remove_pod(uid)
            return
        node = pod.spec.node_name
        if node:
            self.pending.pop(uid, None)
            confirmed = self.assumed.pop(uid, None)
            if confirmed is not None:
                confirmed.release(dropped=confirmed.node != node)
            self._place(pod, node, assumed=False)
            return
        if schedulable:
            self.pending[uid] = pod
        else:
            self.pending.pop(uid, None)
        assumption = self.assumed.get(uid)
        if assumption is not None:
            # The pod object changed while its binding is in flight: keep the placement, new content.
            placed = PodInfo(with_node_name(pod, assumption.node))
            assumption.pod = placed
            self._place(placed, assumption.node, assumed=True)

    def remove_pod(self, uid: str) -> None:
        self.pending.pop(uid, None)
        assumption = self.assumed.pop(uid, None)
        if assumption is not None:
            assumption.release(dropped=True)
        entry = self.snapshot.pod_locations.get(uid)
        if entry is not None:
            self.snapshot.remove_pod(uid)
            self._emit(PodRemove(uid))
            self._pod_left(*entry)

    def upsert_object(self, obj: K8s) -> bool:
        """A Namespace, Service, PV, PVC... (kinds in ``framework.objects.TABLES``); False for others."""
        if not self.snapshot.objects.put(obj):
            return False
        kind, key = str(getattr(obj, "kind", "")), object_key(obj)
        self._emit(ObjectUpsert(kind, key, msgspec.json.encode(obj)))
        self.changes.record(ObjectChange(self.generation, kind, key))
        return True

    def remove_object(self, kind: str, key: str) -> None:
        if kind in TABLES and self.snapshot.objects.table(kind).pop(key, None) is not None:
            self._emit(ObjectRemove(kind, key))
            self.changes.record(ObjectChange(self.generation, kind, key))

    def _place(self, pod: Pod | PodInfo, node: str, assumed: bool, origin: str = "") -> None:
        uid = pod.uid if isinstance(pod, PodInfo) else pod.metadata.uid
        old = self.snapshot.pod_locations.get(uid)
        pi = self.snapshot.add_pod(pod, node)
        self._emit(PodPlace(pi.pod, node, assumed))
        gen = self.generation
        if old is None:
            self.changes.record(PodChange(gen, pi, node, placed=True, origin=origin))
        elif old[0] is pi:
            pass  # the same placement seen again (an assumption confirmed, a status update)
        elif old[1] == node and old[0].pod.spec == pi.pod.spec:
            # Only its labels changed (say, the zone labels a binding adds), or it began terminating
            # (PodTopologySpread no longer counts it): one change that knows both versions, not a
            # departure and an arrival.
            changed = changed_label_keys(old[0].pod.metadata.labels, pi.pod.metadata.labels)
            self.changes.record(
                PodChange(gen, pi, node, placed=True, origin=origin, before=old[0], changed_labels=changed)
            )
        else:
            self._pod_left(*old)
            self.changes.record(PodChange(gen, pi, node, placed=True, origin=origin))

    # --- the assume ledger -----------------------------------------------------------------------
    def assume(
        self,
        pod: Pod,
        node_name: str,
        *,
        generation: int,
        scheduler_id: str,
        profile: Framework | None = None,
        session: str = "",
        seq: int = 0,
        basis_from: int = 0,
        spread_slack: int | None = None,
        pod_changed: bool = False,
        plugin_state: Mapping[str, bytes] | None = None,
    ) -> AssumeVerdict:
        """Accept ``pod`` on ``node_name`` if it is still pending and the profile's filters, which
        passed on the replica's snapshot at ``generation`` plus its placements ``basis_from`` ..
        ``seq - 1`` of ``session``, pass on the current state (``assume_check.check_placement``;
        ``spread_slack`` and ``pod_changed`` are part of its ``Decision``), and what the placement's
        ``plugin_state`` takes (devices) is still free (:class:`PlacementStatePlugin`). Without a
        profile only resources, pod count and host ports are checked."""
        decision = self.decision(generation, session, seq, basis_from, spread_slack, pod_changed)
        verdict = self._assume(pod, node_name, scheduler_id, profile, decision, plugin_state or {})
        refused = None if verdict.accepted or pod_changed else PodInfo(pod)
        self.answers.answered(session, seq, accepted=verdict.accepted, pod=refused)
        return verdict

    def _assume(
        self,
        pod: Pod,
        node_name: str,
        scheduler_id: str,
        profile: Framework | None,
        decision: Decision,
        plugin_state: Mapping[str, bytes],
    ) -> AssumeVerdict:
        uid = pod.metadata.uid
        if uid in self.assumed:
            other = self.assumed[uid]
            return AssumeVerdict(
                False, f"pod is already assumed on node {other.node} by {other.scheduler_id}"
            )
        if self.snapshot.location(uid) is not None:
            return AssumeVerdict(False, f"pod is already bound to node {self.snapshot.location(uid)}")
        if uid not in self.pending:
            return AssumeVerdict(False, "pod is no longer pending")
        ni = self.snapshot.node_map.get(node_name)
        if ni is None:
            return AssumeVerdict(False, f"node {node_name} no longer exists")
        placed = PodInfo(with_node_name(pod, node_name))
        full = ""
        rerun: tuple[str, ...] = ()
        holders = placement_holders(profile, plugin_state)
        if profile is None:
            reason = fits_basic(placed, ni)
            if reason:
                return AssumeVerdict(False, reason)
        else:
            result = check_placement(profile, placed, ni, self.changes, decision)
            full, rerun, st = result.full, result.rerun, result.status
            if st is not None:
                reason = f"{st.plugin}: {st.message}" if st.plugin else st.message
                return AssumeVerdict(False, reason, full, rerun)
        for plugin in holders:
            conflict = plugin.placement_conflict(plugin_state[plugin.name], ni)
            if conflict:
                return AssumeVerdict(False, f"{plugin.name}: {conflict}", full, rerun)
        for plugin in holders:
            plugin.hold_placement(uid, plugin_state[plugin.name])
        self.pending.pop(uid, None)
        self.assumed[uid] = Assumption(placed, node_name, scheduler_id, self._clock(), holders=holders)
        origin = "" if decision.pod_changed else decision.session  # as the replica decided it
        self._place(placed, node_name, assumed=True, origin=origin)
        return AssumeVerdict(True, full_check=full, rerun=rerun)

    def decision(
        self,
        generation: int,
        session: str,
        seq: int,
        basis_from: int,
        spread_slack: int | None = None,
        pod_changed: bool = False,
    ) -> Decision:
        """What the assume check knows of a decision: its snapshot generation (if of this cache)
        and the session's placements it counted that were refused."""
        refused = self.answers.refused_between(session, basis_from, seq)
        return Decision(
            generation if generation <= self.generation else None,
            session,
            refused or (),
            refused is not None,
            spread_slack,
            pod_changed,
        )

    def restore_assumption(
        self,
        pod: Pod,
        node_name: str,
        scheduler_id: str,
        profile: Framework | None = None,
        plugin_state: Mapping[str, bytes] | None = None,
    ) -> None:
        """Re-create an assumption accepted earlier (a restarted cache reading its ledger), unchecked:
        its placement may be being bound right now; what it takes is held again."""
        uid = pod.metadata.uid
        placed = PodInfo(with_node_name(pod, node_name))
        holders = placement_holders(profile, plugin_state or {})
        for plugin in holders:
            plugin.hold_placement(uid, (plugin_state or {})[plugin.name])
        self.pending.pop(uid, None)
        self.assumed[uid] = Assumption(placed, node_name, scheduler_id, self._clock(), holders=holders)
        self._place(placed, node_name, assumed=True)

    def forget(self, uid: str) -> bool:
        """Drop an assumption (binding failed); the pod becomes pending again. False if unknown."""
        assumption = self.assumed.pop(uid, None)
        if assumption is None:
            return False
        assumption.release(dropped=True)
        left = self.snapshot.remove_pod(uid)
        self._emit(PodRemove(uid))
        if left is not None:
            self._pod_left(left, assumption.node)
        pod = assumption.pod.pod
        self.pending[uid] = msgspec.structs.replace(pod, spec=msgspec.structs.replace(pod.spec, node_name=""))
        return True

    def expire(self) -> list[str]:
        """Forget assumptions older than ``max_assumed_age`` that the watch never showed bound. Upstream
        1.36 expires none (its cache lost the TTL after FinishBinding): this is ksched's safety net for
        a placement whose binder and its redelivery both failed to report back."""
        now = self._clock()
        expired = [uid for uid, a in self.assumed.items() if now - a.assumed_at > self._max_assumed_age]
        for uid in expired:
            self.forget(uid)
        return expired


def placement_holders(
    profile: Framework | None, plugin_state: Mapping[str, bytes]
) -> tuple[PlacementStatePlugin, ...]:
    """The profile's plugins that take something no other placement may, with state in the placement."""
    if profile is None or not plugin_state:
        return ()
    return tuple(pl for pl in profile.plugins.reserve if plugin_state.get(pl.name) and _holds(pl))


_HOLDS: dict[type, bool] = {}


def _holds(plugin: object) -> TypeGuard[PlacementStatePlugin]:
    """``isinstance(plugin, PlacementStatePlugin)``, known per class (a protocol check costs ~0.1 ms)."""
    known = _HOLDS.get(type(plugin))
    if known is None:
        known = _HOLDS[type(plugin)] = isinstance(plugin, PlacementStatePlugin)
    return known


def same_for_filters(a: Node, b: Node) -> bool:
    """Whether two versions of a node differ only in what no filter reads (its conditions: a
    kubelet's heartbeat; its resource version)."""
    return (
        a.spec == b.spec
        and a.metadata.labels == b.metadata.labels
        and msgspec.structs.replace(a.status, conditions=[])
        == msgspec.structs.replace(b.status, conditions=[])
    )


def fits_basic(pod: PodInfo, node: NodeInfo) -> str:
    """Resources, pod count and host ports on the node's current state; '' when the pod fits."""
    alloc, req, want = node.allocatable, node.requested, pod.requests
    if len(node.pods) + 1 > alloc.allowed_pod_number:
        return "Too many pods"
    short = []
    if want.milli_cpu and req.milli_cpu + want.milli_cpu > alloc.milli_cpu:
        short.append("Insufficient cpu")
    if want.memory and req.memory + want.memory > alloc.memory:
        short.append("Insufficient memory")
    if want.ephemeral_storage and req.ephemeral_storage + want.ephemeral_storage > alloc.ephemeral_storage:
        short.append("Insufficient ephemeral-storage")
    for name, amount in want.scalar.items():
        # Resources the node does not advertise are left to the profile's filters (ignoredResources).
        if amount and name in alloc.scalar and req.scalar.get(name, 0) + amount > alloc.scalar[name]:
            short.append(f"Insufficient {name}")
    if short:
        return ", ".join(short)
    for ip, proto, port in pod.host_ports:
        if node.used_ports.conflicts(ip, proto, port):
            return "node(s) didn't have free ports for the requested pod ports"
    return ""
