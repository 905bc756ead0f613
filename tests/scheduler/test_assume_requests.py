"""What a scheduler replica sends the informer for a decision, and what it does with a refusal:
the snapshot generation the decision was made on (read before the cycle), its place among the
replica's assumes and the first of them without an answer, the hard-spread slack, a retry only
once its snapshot has what made the placement fail, and the before-assume fault point. The bus
is a fake that holds the replies."""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path
from typing import Any, cast

import msgspec
import pytest
from ksched_scheduler.cycle import SchedulingCycle
from ksched_scheduler.group_cycle import GroupCycle
from ksched_scheduler.options import SchedulerOptions
from ksched_scheduler.service import AFTER_GROUP_COMMIT, BEFORE_ASSUME, SchedulerService

from ksched.api.core import Pod
from ksched.api.scheduling import PodGroup
from ksched.bus import endpoints
from ksched.bus.endpoints import RequestEndpoint
from ksched.bus.messages import (
    Ack,
    AssumeBatchReply,
    AssumeBatchRequest,
    AssumeGroupRequest,
    AssumeRejectCode,
    AssumeReply,
    AssumeRequest,
    DoneBatchRequest,
    DoneOutcome,
    DoneRequest,
    LeasedPod,
    PendingPod,
    PodPlace,
)
from ksched.cache.delta import DeltaBatch
from ksched.cache.replica import SnapshotReplica, image_of
from ksched.config import default_config
from ksched.config.profile import build_frameworks
from ksched.features import DEFAULT as DEFAULT_GATES
from ksched.features import FeatureGates
from ksched.framework.snapshot import Snapshot, with_node_name
from ksched.framework.testing import make_node, make_pod
from ksched.service.faults import FAULTS_ENV
from ksched.service.options import CommonOptions
from tests.faults import arm
from tests.scheduler.harness import HandFollower

ZONE = "topology.kubernetes.io/zone"
HARD_SPREAD = {
    "topologySpreadConstraints": [
        {
            "maxSkew": 1,
            "topologyKey": ZONE,
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"app": "s"}},
        }
    ]
}


class FakeBus:
    """Records assume and done requests; an assume waits until the test answers it."""

    def __init__(self) -> None:
        self.assumes: list[AssumeRequest] = []
        self.groups: list[AssumeGroupRequest] = []
        self.answers: list[asyncio.Future[AssumeReply]] = []
        self.dones: list[DoneRequest] = []

    async def request(self, endpoint: RequestEndpoint[Any, Any], message: Any, **_: Any) -> Any:
        if isinstance(message, AssumeRequest | AssumeGroupRequest):
            if isinstance(message, AssumeRequest):
                self.assumes.append(message)
            else:
                self.groups.append(message)
            answer: asyncio.Future[AssumeReply] = asyncio.get_running_loop().create_future()
            self.answers.append(answer)
            return await answer
        if isinstance(message, AssumeBatchRequest):  # each item answered on its own by the test
            replies = [self.request(endpoints.ASSUME, item) for item in message.items]
            return AssumeBatchReply(replies=list(await asyncio.gather(*replies)))
        if isinstance(message, DoneRequest):
            self.dones.append(message)
            return Ack()
        if isinstance(message, DoneBatchRequest):
            self.dones.extend(message.items)
            return Ack()
        raise AssertionError(f"unexpected request on {endpoint.name}")


def replica_at(generation: int) -> SnapshotReplica:
    alloc = {"cpu": "4", "memory": "8Gi", "pods": "110"}
    nodes = [
        make_node("n1", labels={ZONE: "a"}, allocatable=alloc),
        make_node("n2", labels={ZONE: "b"}, allocatable=alloc),
    ]
    replica = SnapshotReplica()
    replica.load(image_of(Snapshot.build(nodes, []), "e", generation))
    return replica


def scheduler(
    replica: SnapshotReplica, gates: FeatureGates = DEFAULT_GATES
) -> tuple[SchedulerService, FakeBus]:
    options = SchedulerOptions(
        common=CommonOptions(
            identity="s-test", nats="", kubeconfig=None, subject_prefix="t", feature_gates=gates
        )
    )
    config = default_config(gates=gates)
    svc = SchedulerService(options, config)
    frameworks = build_frameworks(config, replica.snapshot, nominator=svc.nominator)
    svc.cycle = SchedulingCycle(frameworks, replica.snapshot, svc.algorithm, svc.nominator)
    svc.group_cycle = GroupCycle(svc.cycle)
    svc.follower = cast(Any, HandFollower(replica))
    bus = FakeBus()
    svc.bus = cast(Any, bus)
    return svc, bus


def leased(pod: Pod, group: str = "") -> LeasedPod:
    pending = PendingPod(
        uid=pod.metadata.uid,
        namespace=pod.metadata.namespace,
        name=pod.metadata.name,
        scheduler_name=pod.spec.scheduler_name,
        pod=msgspec.json.encode(pod),
    )
    return LeasedPod(
        lease_id=f"lease-{pod.metadata.name}",
        deadline=0,
        lease_seconds=30,
        pod=pending,
        epoch="e",
        group=group,
    )


async def settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


async def test_the_placement_carries_the_generation_decided_on_and_the_unanswered_placements() -> None:
    replica = replica_at(10)
    svc, bus = scheduler(replica)
    first = make_pod("first", labels={"app": "s"})
    spread = make_pod("spread", labels={"app": "s"}, spec=HARD_SPREAD)
    plain = make_pod("plain", labels={"app": "s"})
    await svc._schedule_one(leased(first))
    replica.generation = 11  # a delta applied after the decision, before the assume task ran
    await settle()
    await svc._schedule_one(leased(spread))
    await svc._schedule_one(leased(plain))
    await settle()
    assert [a.placement.snapshot_generation for a in bus.assumes] == [10, 11, 11]
    where = bus.assumes[0].placement.node_name
    # Numbered in decision order; each names the first assume without an answer when it was
    # decided (its own number when none): the informer knows which placements a decision counted.
    assert [(a.seq, a.basis_from) for a in bus.assumes] == [(1, 1), (2, 1), (3, 1)]
    assert len({a.session for a in bus.assumes}) == 1 and bus.assumes[0].session
    # `first` counts in its zone, so the spread pod went to the other zone: skew 0 + 1 - 0 = maxSkew.
    assert [a.spread_slack for a in bus.assumes] == [None, 0, None]
    assert bus.assumes[1].placement.node_name != where
    for answer in bus.answers:
        answer.set_result(AssumeReply(accepted=True, epoch="e", generation=12))
    await settle()
    await svc._schedule_one(leased(make_pod("later", labels={"app": "s"}, spec=HARD_SPREAD)))
    await settle()
    assert (bus.assumes[3].seq, bus.assumes[3].basis_from) == (4, 4)  # every earlier one was answered


async def test_an_assume_without_an_answer_starts_a_new_session() -> None:
    svc, bus = scheduler(replica_at(1))
    await svc._schedule_one(leased(make_pod("lost")))
    await settle()
    bus.answers[0].set_exception(TimeoutError("no answer"))
    await settle()
    await svc._schedule_one(leased(make_pod("next")))
    await settle()
    # The informer may accept the lost one later; it was not in what `next` was decided on.
    assert bus.assumes[1].session != bus.assumes[0].session


async def one_assume(generation: int, name: str) -> tuple[SnapshotReplica, FakeBus, Pod, str]:
    """A replica at ``generation`` that decided pod ``name``: its assume waits for an answer."""
    replica = replica_at(generation)
    svc, bus = scheduler(replica)
    pod = make_pod(name)
    await svc._schedule_one(leased(pod))
    await settle()
    return replica, bus, pod, bus.assumes[0].placement.node_name


def placed_by_delta(replica: SnapshotReplica, pod: Pod, node: str) -> None:
    """The informer's delta placing ``pod`` on ``node`` (assumed), applied to ``replica``."""
    op = PodPlace(with_node_name(pod, node), node, assumed=True)
    batch = DeltaBatch(epoch="e", base=replica.generation, generation=replica.generation + 1, ops=[op])
    assert replica.apply(batch)


@pytest.mark.parametrize("delta", [False, True], ids=["no-delta", "delta-came"])
async def test_an_unanswered_assume_keeps_the_placement_its_delta_brought(delta: bool) -> None:
    # The reply timed out (a paused replica reads its timer before the reply) after the informer
    # accepted the placement and its delta reached the replica: the replica keeps the pod where
    # the informer has it. Removing it would let a later decision ignore it, and the informer,
    # whose check reads only what changed after that decision's generation, would not see it.
    replica, bus, pod, node = await one_assume(1, "lost")
    if delta:
        placed_by_delta(replica, pod, node)
    bus.answers[0].set_exception(TimeoutError("no answer"))
    await settle()
    assert replica.snapshot.location(pod.metadata.uid) == (node if delta else None)


async def test_a_pod_another_replica_put_on_the_same_node_stays_when_ours_is_refused() -> None:
    replica, bus, pod, node = await one_assume(1, "twice")
    placed_by_delta(replica, pod, node)  # the other replica's placement, accepted first
    refused = AssumeReply(accepted=False, code=AssumeRejectCode.ALREADY_ASSUMED, epoch="e", generation=2)
    bus.answers[0].set_result(refused)
    await settle()
    assert replica.snapshot.location(pod.metadata.uid) == node


async def test_a_pod_the_replica_has_placed_is_not_scheduled_again() -> None:
    # Leased again after the informer accepted its placement (this replica's assume had timed out,
    # or its lease expired first): it stays where the informer has it, so a pod its anti-affinity
    # rules out is not put beside it. Deciding it again moved it off n1 in the replica (to n2, the
    # emptier node) while that assume was in flight, and the informer, which reads only the changes
    # after a decision's snapshot, accepted `second` on n1 (`ksched bench chaos` found it).
    anti = {
        "affinity": {
            "podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {"labelSelector": {"matchLabels": {"anti": "g"}}, "topologyKey": ZONE}
                ]
            }
        }
    }
    replica = replica_at(1)
    svc, bus = scheduler(replica)
    placed_by_delta(replica, make_pod("busy", requests={"cpu": "3"}), "n1")
    first = make_pod("first", labels={"anti": "g"}, spec=anti)
    placed_by_delta(replica, first, "n1")
    await svc._schedule_one(leased(first))
    await settle()
    assert bus.assumes == []
    assert [(d.outcome, d.node_name) for d in bus.dones] == [(DoneOutcome.SCHEDULED, "n1")]
    assert replica.snapshot.location(first.metadata.uid) == "n1"
    await svc._schedule_one(leased(make_pod("second", labels={"anti": "g"}, spec=anti)))
    await settle()
    assert [a.placement.node_name for a in bus.assumes] == ["n2"]


async def test_a_loaded_image_starts_a_new_session() -> None:
    # The image dropped the replica's local assumptions: one the informer accepts after the
    # image's generation must count as a change for the next decisions, not as theirs.
    replica = replica_at(1)
    svc, bus = scheduler(replica)
    await svc._schedule_one(leased(make_pod("before")))
    await settle()
    nodes = [ni.node for ni in replica.snapshot.nodes if ni.node is not None]
    replica.load(image_of(Snapshot.build(nodes, []), "e", 5))
    await svc._schedule_one(leased(make_pod("after")))
    await settle()
    assert bus.assumes[1].session != bus.assumes[0].session


async def test_a_refused_placement_is_retried_once_the_snapshot_has_the_cause() -> None:
    replica, bus, pod, node = await one_assume(10, "p")
    assert replica.snapshot.location(pod.metadata.uid) == node  # counted locally at once
    reason = "InterPodAffinity: node(s) didn't satisfy existing pods anti-affinity rules"
    bus.answers[0].set_result(
        AssumeReply(
            accepted=False, code=AssumeRejectCode.DOES_NOT_FIT, reason=reason, epoch="e", generation=15
        )
    )
    await asyncio.sleep(0.05)
    assert replica.snapshot.location(pod.metadata.uid) is None  # forgotten locally
    assert bus.dones == []  # the replica has not seen generation 15 yet
    replica.generation = 15
    await asyncio.sleep(0.05)
    assert [(d.outcome, d.message) for d in bus.dones] == [(DoneOutcome.RETRY, f"DoesNotFit: {reason}")]


async def test_the_fault_point_stops_the_replica_before_that_pod_s_assume_once(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv(FAULTS_ENV, str(tmp_path))
    for key in ("default/p", "default/q"):
        arm(tmp_path, BEFORE_ASSUME, "stop", key)
    signals: list[tuple[int, int]] = []
    monkeypatch.setattr(os, "kill", lambda pid, sig: signals.append((pid, sig)))
    svc, bus = scheduler(replica_at(1))
    await svc._schedule_one(leased(make_pod("other")))
    await settle()
    assert signals == []
    await svc._schedule_one(leased(make_pod("p")))
    await settle()
    assert signals == [(os.getpid(), signal.SIGSTOP)]
    assert [a.placement.name for a in bus.assumes] == ["other", "p"]  # sent once continued
    await svc._schedule_one(leased(make_pod("p", uid="again")))
    await settle()
    assert len(signals) == 1
    await svc._schedule_one(leased(make_pod("q")))
    await settle()
    assert len(signals) == 2


async def test_a_gangs_members_are_consecutive_assumes_of_the_session() -> None:
    gates = FeatureGates.parse("GenericWorkload=true,GangScheduling=true")
    replica = replica_at(1)
    raw = {
        "metadata": {"name": "train", "namespace": "default"},
        "spec": {"schedulingPolicy": {"gang": {"minCount": 2}}},
    }
    replica.snapshot.objects.put(msgspec.convert(raw, PodGroup))
    svc, bus = scheduler(replica, gates)
    await svc._schedule_one(leased(make_pod("single")))  # assume 1, not answered yet
    await settle()
    group = {"schedulingGroup": {"podGroupName": "train"}}
    members = [leased(make_pod(f"m{i}", spec=group), "default/train") for i in range(2)]
    commit = asyncio.create_task(svc._schedule_group(members))
    await settle()
    [request] = bus.groups
    # The group cycle decided both after `single` (unanswered): assumes 2 and 3 of the same session.
    assert (request.session, request.seq, request.basis_from) == (bus.assumes[0].session, 2, 1)
    assert [request.member(i).seq for i in range(2)] == [2, 3]
    assert request.spread_slacks == [None, None]
    bus.answers[1].set_result(AssumeReply(accepted=True, epoch="e", generation=2))
    await commit
    bus.answers[0].set_result(AssumeReply(accepted=True, epoch="e", generation=3))
    await settle()
    await svc._schedule_one(leased(make_pod("later")))
    await settle()
    assert (bus.assumes[1].seq, bus.assumes[1].basis_from) == (4, 4)  # the group's seqs were answered


class Spans:
    """The OpenTelemetry export's part the replica asks for a span's ``traceparent``."""

    def traceparent(self, trace_id: str, phase: str) -> str:
        return f"00-{trace_id:0>32}-{len(phase):016x}-01"


class Reporter:
    """Records the PodGroupScheduled conditions the replica writes."""

    def __init__(self) -> None:
        self.groups: list[tuple[str, str, str, str, str]] = []
        self.committed: list[tuple[str, str]] = []

    def pod_group_scheduled(
        self, namespace: str, name: str, status: str, reason: str, message: str, *, uid: str = ""
    ) -> None:
        self.groups.append((namespace, name, status, reason, message))

    def pod_group_committed(self, namespace: str, name: str, *, uid: str = "") -> None:
        self.committed.append((namespace, name))

    def unschedulable(self, *_: Any, **__: Any) -> None:
        pass


def gang_replica(min_count: int, hooks: str = "") -> tuple[SchedulerService, FakeBus, Reporter]:
    replica = replica_at(1)
    raw = {
        "metadata": {"name": "train", "namespace": "default"},
        "spec": {"schedulingPolicy": {"gang": {"minCount": min_count}}},
    }
    replica.snapshot.objects.put(msgspec.convert(raw, PodGroup))
    svc, bus = scheduler(replica, FeatureGates.parse("GenericWorkload=true,GangScheduling=true"))
    reporter = Reporter()
    svc.reporter = cast(Any, reporter)
    svc.tracer.spans = cast(Any, Spans())
    return svc, bus, reporter


def gang_members(n: int, cpu: str = "1") -> list[LeasedPod]:
    group = {"schedulingGroup": {"podGroupName": "train"}}
    pods = [make_pod(f"m{i}", requests={"cpu": cpu}, spec=group) for i in range(n)]
    return [
        msgspec.structs.replace(leased(p, "default/train"), trace_id=f"{i + 1:016x}")
        for i, p in enumerate(pods)
    ]


async def test_a_gangs_commit_carries_each_members_traceparent() -> None:
    """As a batch's items: member ``i``'s ``traceparent`` is its own ``assumed`` span (its attempt's
    trace), the parent of the informer's ``assume_check`` for it."""
    svc, bus, _ = gang_replica(2)
    members = gang_members(2)
    commit = asyncio.create_task(svc._schedule_group(members))
    await settle()
    [request] = bus.groups
    spans = Spans()
    wanted = [spans.traceparent(m.trace_id, "assumed") for m in members]
    assert request.traceparents == wanted
    assert [request.member(i).traceparent for i in range(2)] == wanted
    bus.answers[0].set_result(AssumeReply(accepted=True, epoch="e", generation=2))
    await commit


async def test_a_committed_gangs_outcome_is_the_informers_a_failed_ones_the_replicas() -> None:
    """The replica writes PodGroupScheduled only for a group that is not schedulable (False); a
    committed gang's True is written by the informer from its commit record (docs/gang.md)."""
    svc, bus, reporter = gang_replica(2)
    commit = asyncio.create_task(svc._schedule_group(gang_members(2)))
    await settle()
    bus.answers[0].set_result(AssumeReply(accepted=True, epoch="e", generation=2))
    await commit
    assert bus.dones == []  # the queue ends the members' attempts on the informer's feed
    assert reporter.groups == []
    assert reporter.committed == [("default", "train")]  # no later cycle's False before its True
    svc, bus, reporter = gang_replica(3)
    await svc._schedule_group(gang_members(3, cpu="3"))  # 9 CPUs on two nodes of 4
    assert bus.groups == []
    assert reporter.groups == [("default", "train", "False", "Unschedulable", "pod group is unschedulable")]


async def test_the_fault_point_fires_once_a_commit_is_accepted(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    monkeypatch.setenv(FAULTS_ENV, str(tmp_path))
    (tmp_path / AFTER_GROUP_COMMIT).touch()
    signals: list[tuple[int, int]] = []
    monkeypatch.setattr(os, "kill", lambda pid, sig: signals.append((pid, sig)))
    svc, bus, _ = gang_replica(2)
    commit = asyncio.create_task(svc._schedule_group(gang_members(2)))
    await settle()
    bus.answers[0].set_result(AssumeReply(accepted=False, code="DoesNotFit", epoch="e", generation=2))
    await commit
    assert signals == []  # a rejected commit: not this hook's moment
    commit = asyncio.create_task(svc._schedule_group(gang_members(2)))
    await settle()
    bus.answers[1].set_result(AssumeReply(accepted=True, epoch="e", generation=3))
    await commit
    assert signals == [(os.getpid(), signal.SIGKILL)]
    assert not (tmp_path / AFTER_GROUP_COMMIT).exists()
