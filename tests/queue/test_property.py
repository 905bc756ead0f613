"""Accounting under randomized churn: every added pod is, at every moment, in exactly one of
active / backoff / unschedulable / gated / in-flight until it is deleted or its attempt ends
scheduled; in-flight pods hold exactly one lease; nothing else is tracked; the
scheduler_unschedulable_pods figures, kept incrementally, equal a recount from the pods' states."""

from __future__ import annotations

import os
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from ksched.api.core import Pod, Toleration
from ksched.api.lifecycle import PodLifecycle
from ksched.bus.messages import (
    DoneOutcome,
    DoneRequest,
    LeasedPod,
    LeaseRenewRequest,
    PendingPodAction,
    PopRequest,
    RequeueRequest,
)
from ksched.framework.events import ActionType, EventResource
from tests.queue.testing import event_msg, new_core, node, pending_event, pending_of, pod

PENDING_STATES = {
    PodLifecycle.ACTIVE,
    PodLifecycle.BACKOFF,
    PodLifecycle.UNSCHEDULABLE,
    PodLifecycle.GATED,
    PodLifecycle.IN_FLIGHT,
}
WAITING_STATES = {PodLifecycle.ACTIVE, PodLifecycle.BACKOFF, PodLifecycle.UNSCHEDULABLE, PodLifecycle.GATED}
PROFILES = ["default-scheduler", "other-scheduler"]
PLUGINS = ["NodeResourcesFit", "TaintToleration", "NodeAffinity", "SchedulingGates", "PodTopologySpread"]


class QueueChurn(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.core, self.clock = new_core(lease_seconds=5)
        self.pending: dict[str, Pod] = {}
        self.assumed: dict[str, Pod] = {}
        self.leases: dict[str, LeasedPod] = {}
        self.counter = 0

    # --- the informer's feed --------------------------------------------------------------------
    @rule(
        priority=st.integers(0, 3),
        gated=st.booleans(),
        profile=st.sampled_from(PROFILES),
        cpu=st.sampled_from(["100m", "3", "16"]),
    )
    def add(self, priority: int, gated: bool, profile: str, cpu: str) -> None:
        self.counter += 1
        p = pod(
            f"p{self.counter}",
            priority=priority,
            gates=["g"] if gated else None,
            scheduler_name=profile,
            requests={"cpu": cpu},
        )
        self.core.apply_pending(pending_event(PendingPodAction.ADD, p))
        self.pending[p.metadata.uid] = p

    def _pick(self, data: Any, pool: dict[str, Pod]) -> str:
        picked: str = data.draw(st.sampled_from(sorted(pool)))
        return picked

    @precondition(lambda self: self.pending or self.assumed)
    @rule(data=st.data(), change=st.sampled_from(["labels", "ungate", "toleration", "nominate", "profile"]))
    def update(self, data: Any, change: str) -> None:
        pool = {**self.pending, **self.assumed}
        uid = self._pick(data, pool)
        p = pool[uid]
        if change == "profile":
            if uid not in self.pending:
                return
            # moved to the other profile: a new pod for the queue, queued afresh
            p.spec.scheduler_name = PROFILES[1 - PROFILES.index(p.spec.scheduler_name)]
            self.core.apply_pending(pending_event(PendingPodAction.UPDATE, p))
            self._forget_pod(uid)
            self.pending[uid] = p
            return
        if change == "labels":
            p.metadata.labels = {"v": str(self.counter)}
        elif change == "ungate":
            p.spec.scheduling_gates = []
        elif change == "toleration":
            p.spec.tolerations = [*p.spec.tolerations, Toleration(key="k", operator="Exists")]
        else:
            p.status.nominated_node_name = data.draw(st.sampled_from(["", "n1", "n2"])) or None
        self.counter += 1
        self.core.apply_pending(pending_event(PendingPodAction.UPDATE, p))

    @precondition(lambda self: self.pending or self.assumed)
    @rule(data=st.data(), reason=st.sampled_from(["deleted", "bound", "scheduler-changed"]))
    def delete(self, data: Any, reason: str) -> None:
        pool = {**self.pending, **self.assumed}
        uid = self._pick(data, pool)
        self.core.apply_pending(pending_event(PendingPodAction.DELETE, pool[uid], reason=reason))
        self._forget_pod(uid)

    def _forget_pod(self, uid: str) -> None:
        self.pending.pop(uid, None)
        self.assumed.pop(uid, None)
        for lease_id in [k for k, lp in self.leases.items() if lp.pod.uid == uid]:
            del self.leases[lease_id]

    def _in_flight(self, uid: str) -> bool:
        return any(lp.pod.uid == uid for lp in self.leases.values())

    @precondition(lambda self: self.pending)
    @rule(data=st.data())
    def cache_accepts_placement(self, data: Any) -> None:
        """The informer accepted an assume: its feed says delete/assumed."""
        uid = self._pick(data, self.pending)
        self.core.apply_pending(pending_event(PendingPodAction.DELETE, self.pending[uid], reason="assumed"))
        # an attempt in flight ends with the accepted placement: its replica reports nothing more
        for lease_id in [k for k, lp in self.leases.items() if lp.pod.uid == uid]:
            del self.leases[lease_id]
        self.assumed[uid] = self.pending.pop(uid)

    @precondition(lambda self: self.assumed)
    @rule(data=st.data())
    def cache_forgets(self, data: Any) -> None:
        """The informer forgot an assumption (bind failed, expired): its feed says add/forgotten."""
        uid = self._pick(data, self.assumed)
        self.core.apply_pending(pending_event(PendingPodAction.ADD, self.assumed[uid], reason="forgotten"))
        self.pending[uid] = self.assumed.pop(uid)

    @rule(
        kind=st.sampled_from(["node-add", "allocatable", "taint-removed", "pod-deleted", "label"]),
        cpu=st.sampled_from(["1", "4", "32"]),
    )
    def cluster_event(self, kind: str, cpu: str) -> None:
        if kind == "node-add":
            msg = event_msg(EventResource.NODE, ActionType.ADD, None, node("n1", cpu=cpu))
        elif kind == "allocatable":
            msg = event_msg(
                EventResource.NODE,
                ActionType.UPDATE_NODE_ALLOCATABLE,
                node("n1", cpu="1"),
                node("n1", cpu=cpu),
            )
        elif kind == "taint-removed":
            tainted = node("n1", taints=[{"key": "k", "value": "v", "effect": "NoSchedule"}])
            msg = event_msg(EventResource.NODE, ActionType.UPDATE_NODE_TAINT, tainted, node("n1"))
        elif kind == "label":
            msg = event_msg(
                EventResource.NODE, ActionType.UPDATE_NODE_LABEL, node("n1"), node("n1", labels={"a": "b"})
            )
        else:
            victim = pod("victim", node_name="n1", requests={"cpu": cpu})
            msg = event_msg(EventResource.ASSIGNED_POD, ActionType.DELETE, victim, None)
        self.core.apply_cluster_event(msg)

    @rule(drop=st.integers(0, 2), new=st.booleans())
    def rebuild(self, drop: int, new: bool) -> None:
        """A resync: some pods vanished during the gap, one may have appeared."""
        for uid in sorted(self.pending)[:drop]:
            self._forget_pod(uid)
        if new:
            self.counter += 1
            p = pod(f"p{self.counter}")
            self.pending[p.metadata.uid] = p
        for uid in list(self.assumed):
            self._forget_pod(uid)  # the informer lists no assumed pod: the queue drops them
        self.core.rebuild("e1", self.counter, self.counter, [pending_of(p) for p in self.pending.values()])

    # --- scheduler replicas and the binder ----------------------------------------------------------
    @rule(
        replica=st.sampled_from(["r1", "r2"]),
        names=st.sampled_from([PROFILES[:1], PROFILES, []]),
        n=st.integers(1, 3),
    )
    def pop(self, replica: str, names: list[str], n: int) -> None:
        for lp in self.core.pop(PopRequest(scheduler_id=replica, scheduler_names=names, max_pods=n)):
            assert lp.pod.uid in self.pending
            assert not any(other.pod.uid == lp.pod.uid for other in self.leases.values())
            self.leases[lp.lease_id] = lp

    @precondition(lambda self: self.leases)
    @rule(
        data=st.data(),
        outcome=st.sampled_from(list(DoneOutcome)),
        plugins=st.lists(st.sampled_from(PLUGINS), max_size=2, unique=True),
        pending_plugins=st.lists(st.sampled_from(PLUGINS[:1]), max_size=1),
    )
    def done(self, data: Any, outcome: DoneOutcome, plugins: list[str], pending_plugins: list[str]) -> None:
        lease_id = data.draw(st.sampled_from(list(self.leases)))
        lp = self.leases.pop(lease_id)
        ack = self.core.done(
            DoneRequest(
                lease_id=lease_id,
                scheduler_id=self._holder(lease_id),
                pod_uid=lp.pod.uid,
                namespace=lp.pod.namespace,
                name=lp.pod.name,
                outcome=outcome,
                unschedulable_plugins=plugins,
                pending_plugins=pending_plugins,
            )
        )
        assert ack.ok, ack.reason
        uid = lp.pod.uid
        if outcome == DoneOutcome.SCHEDULED:  # a replica of an earlier release reports it itself
            self.assumed[uid] = self.pending.pop(uid)

    def _holder(self, lease_id: str) -> str:
        lease = self.core.leases.get(lease_id)
        assert lease is not None
        return lease.scheduler_id

    @precondition(lambda self: self.assumed)
    @rule(
        data=st.data(),
        backoff=st.booleans(),
        plugins=st.lists(st.sampled_from(["VolumeBinding", *PLUGINS]), max_size=1),
    )
    def bind_failed(self, data: Any, backoff: bool, plugins: list[str]) -> None:
        uid = self._pick(data, self.assumed)
        p = self.assumed.pop(uid)
        ack = self.core.requeue(
            RequeueRequest(
                pod_uid=uid,
                namespace=p.metadata.namespace,
                name=p.metadata.name,
                reason="x",
                backoff=backoff,
                unschedulable_plugins=plugins,
            )
        )
        assert ack.ok
        self.pending[uid] = p

    @precondition(lambda self: self.leases)
    @rule(data=st.data())
    def renew(self, data: Any) -> None:
        lease_id = data.draw(st.sampled_from(list(self.leases)))
        reply = self.core.renew(LeaseRenewRequest(scheduler_id=self._holder(lease_id), lease_ids=[lease_id]))
        assert reply.renewed == [lease_id]

    @precondition(lambda self: self.pending)
    @rule(data=st.data())
    def activate(self, data: Any) -> None:
        self.core.queue.activate([self._pick(data, self.pending)])

    # --- time -----------------------------------------------------------------------------------------
    @rule(seconds=st.sampled_from([0.3, 1.0, 2.5, 6.0, 301.0]))
    def tick(self, seconds: float) -> None:
        self.clock.advance(seconds)
        self.core.queue.flush_backoff_completed()
        self.core.queue.flush_unschedulable_leftover()
        for lease in self.core.expire_leases():
            del self.leases[lease.lease_id]

    # --- the property ---------------------------------------------------------------------------------
    @invariant()
    def each_pod_in_exactly_one_place(self) -> None:
        q = self.core.queue
        for uid in self.pending:
            where = q.locations(uid)
            assert len(where) == 1 and where[0] in PENDING_STATES, (uid, where)
            assert q.state_of(uid) == where[0]
        for uid in self.assumed:
            assert q.locations(uid) == [PodLifecycle.ASSUMED], uid
        assert q.uids() == set(self.pending) | set(self.assumed)
        counts = q.counts()
        assert sum(counts.values()) == len(self.pending) + len(self.assumed)

    @invariant()
    def in_flight_pods_hold_one_lease(self) -> None:
        q = self.core.queue
        in_flight = {uid for uid in self.pending if q.state_of(uid) == PodLifecycle.IN_FLIGHT}
        assert self.core.leases.pods() == in_flight
        assert {lp.pod.uid for lp in self.leases.values()} == in_flight
        assert len(self.core.leases) == len(in_flight)

    @invariant()
    def unschedulable_pods_gauge_is_exact(self) -> None:
        """Each queued pod counts once per plugin of its last rejection (or gate); in flight and
        assumed pods count for nothing; no figure goes negative."""
        q = self.core.queue
        expected: dict[tuple[str, str], int] = {}
        for uid in q.uids():
            entry = q.get(uid)
            assert entry is not None
            if entry.state not in WAITING_STATES:
                continue
            for plugin in entry.info.unschedulable_plugins | entry.info.pending_plugins:
                key = (plugin, entry.scheduler_name)
                expected[key] = expected.get(key, 0) + 1
        tally = q.rejections.counts
        assert min(tally.values(), default=0) >= 0, tally
        assert {key: n for key, n in tally.items() if n} == expected

    @invariant()
    def gated_means_gates(self) -> None:
        for uid, p in self.pending.items():
            state = self.core.queue.state_of(uid)
            if p.spec.scheduling_gates:
                assert state in (PodLifecycle.GATED, PodLifecycle.IN_FLIGHT), (uid, state)


QueueChurn.TestCase.settings = settings(
    max_examples=int(os.environ.get("KSCHED_QUEUE_EXAMPLES", "60")),
    stateful_step_count=40,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
TestQueueChurn = QueueChurn.TestCase
