"""Pod group cycles on a scheduler replica (docs/gang.md): the members of a gang placed in the
replica's snapshot all or none, GangScheduling's Permit waits resolved within the cycle, the members'
outcomes as upstream ends them, and a pop reply cut into group batches."""

from __future__ import annotations

import msgspec
import pytest
from ksched_scheduler.core import ended, leased_batches, pod_group_result
from ksched_scheduler.cycle import CycleOutcome, SchedulingCycle
from ksched_scheduler.group_cycle import GroupCycle
from ksched_scheduler.preemption import status_nomination

from ksched.api.core import Pod, PodCondition
from ksched.api.scheduling import PodGroup
from ksched.bus.messages import LeasedPod, PendingPod
from ksched.config import build_frameworks, default_config
from ksched.features import FeatureGates
from ksched.framework.algorithm import ScheduleAlgorithm
from ksched.framework.nominator import Nominator
from ksched.framework.podgroup_cycle import GroupResult
from ksched.framework.podinfo import PodInfo
from ksched.framework.snapshot import Snapshot
from ksched.framework.testing import RefusesNode, make_node, make_pod

GATES = FeatureGates.parse("GenericWorkload=true,GangScheduling=true")


def replica(cpus: list[str], min_count: int) -> tuple[GroupCycle, Snapshot]:
    snapshot = Snapshot()
    for i, cpu in enumerate(cpus):
        snapshot.upsert_node(make_node(f"n{i}", allocatable={"cpu": cpu, "memory": "8Gi", "pods": "110"}))
    raw = {
        "metadata": {"name": "train", "namespace": "default"},
        "spec": {"schedulingPolicy": {"gang": {"minCount": min_count}}},
    }
    snapshot.objects.put(msgspec.convert(raw, PodGroup))
    frameworks = build_frameworks(default_config(gates=GATES), snapshot)
    cycle = SchedulingCycle(frameworks, snapshot, ScheduleAlgorithm(seed=1), Nominator(), lambda: False)
    return GroupCycle(cycle), snapshot


def members(n: int, cpu: str = "1") -> list[Pod]:
    return [
        make_pod(
            f"m{i}", uid=f"m{i}", requests={"cpu": cpu}, spec={"schedulingGroup": {"podGroupName": "train"}}
        )
        for i in range(n)
    ]


def test_a_gang_that_fits_is_assumed_whole_with_no_wait_left() -> None:
    cycle, snapshot = replica(["2", "2"], 4)
    result = cycle.run(members(4))
    assert result.status is None and result.condition() == ("True", "Scheduled", "")
    assert sorted(snapshot.pod_locations) == ["m0", "m1", "m2", "m3"]
    assert all(result.member_status(m) is None for m in result.members)
    assert [m.record.permit_waits for m in result.members] == [{}, {}, {}, {}]  # the quorum allowed them
    assert cycle.cycle.frameworks["default-scheduler"].get_waiting_pod("m0") is None


def test_a_gang_short_of_room_is_reverted_whole() -> None:
    cycle, snapshot = replica(["2", "1"], 4)
    result = cycle.run(members(4))
    assert snapshot.pod_locations == {}
    assert result.condition() == ("False", "Unschedulable", "pod group is unschedulable")
    statuses = [result.member_status(m) for m in result.members]
    assert [s.message for s in statuses if s is not None][:3] == [
        "pod group is unschedulable, waiting for minCount pods from a gang to be scheduled, "
        "one or more plugins asked to wait and no plugin rejected pod"
    ] * 3
    misfit = statuses[3]
    assert misfit is not None and "Insufficient cpu" in misfit.message
    outcomes = [
        ended(m.record, m, s, result) for m, s in zip(result.members, statuses, strict=True) if s is not None
    ]
    assert [o.plugins for o in outcomes] == [set(), set(), set(), {"NodeResourcesFit"}]


def preempting_group(size: int) -> GroupResult[CycleOutcome]:
    """The cycle of ``size`` members of 1.2 CPUs and a higher priority, minCount ``size``, on two
    2-CPU nodes, n0 holding a low pod of 1.5 CPUs."""
    cycle, snapshot = replica(["2", "2"], size)
    snapshot.add_pod(make_pod("low", uid="low", node_name="n0", priority=0, requests={"cpu": "1500m"}))
    gang = members(size, "1200m")
    for pod in gang:
        pod.spec.priority = 1000
    return cycle.run(gang)


def test_a_member_that_preempted_in_a_group_left_unschedulable_evicts_without_a_nomination() -> None:
    """Three members of 1.2 CPUs and a higher priority, minCount 3, on two 2-CPU nodes, n0 holding a
    low pod of 1.5 CPUs: m0 fits on n1, m1 only by preempting the low pod, m2 nowhere. The group waits
    for no preemption; upstream's PostFilter had started the eviction during the cycle and its failure
    handler clears the nomination: the member keeps its victims, not its node (seed 4101, case 17 of
    ``ksched differential``'s ``gangs``)."""
    result = preempting_group(3)
    assert not result.waiting_on_preemption and result.status is not None
    preempting = [m for m in result.members if m.requires_preemption]
    assert len(preempting) == 1
    member = preempting[0]
    outcome = ended(member.record, member, result.member_status(member) or result.status, result)
    assert outcome.evict_only and outcome.nominated_node == ""
    assert [v.uid for v in outcome.victims] == ["low"] and outcome.post_filter is not None
    assert outcome.message.startswith("pod group is unschedulable, waiting for minCount pods")


def test_a_member_that_fit_while_its_group_waits_for_a_preemption_is_nominated_where_assumed() -> None:
    """Two such members, minCount 2: m0 fits on n1, m1 preempts the low pod on n0; the group waits for
    that preemption and upstream nominates m0 on n1, where it was assumed (seed 4102, case 5)."""
    result = preempting_group(2)
    assert result.waiting_on_preemption
    fit = next(m for m in result.members if not m.requires_preemption)
    status = result.member_status(fit)
    assert status is not None and status.message.endswith("waiting for preemption to complete")
    outcome = ended(fit.record, fit, status, result)
    assert outcome.nominated_node == "n1" and outcome.post_filter is not None
    assert outcome.post_filter.nominated_node_name == "n1" and not outcome.evict_only


def test_members_already_placed_count_toward_the_quorum() -> None:
    cycle, snapshot = replica(["4"], 3)
    placed = make_pod(
        "bound", uid="bound", node_name="n0", spec={"schedulingGroup": {"podGroupName": "train"}}
    )
    snapshot.add_pod(placed)
    assert cycle.run(members(2)).status is None


def leased(name: str, group: str) -> LeasedPod:
    pending = PendingPod(uid=name, namespace="default", name=name, scheduler_name="default-scheduler")
    return LeasedPod(lease_id=f"l-{name}", deadline=0.0, lease_seconds=30.0, pod=pending, group=group)


@pytest.mark.parametrize(
    ("group_cycles", "want"),
    [(True, [["a", "b"], ["solo"], ["c"]]), (False, [["a"], ["b"], ["solo"], ["c"]])],
)
def test_a_pop_reply_cut_into_batches(group_cycles: bool, want: list[list[str]]) -> None:
    pods = [leased("a", "default/x"), leased("b", "default/x"), leased("solo", ""), leased("c", "default/y")]
    batches = leased_batches(pods, group_cycles)
    assert [[p.pod.name for p in batch] for batch in batches] == want
    assert all(not p.group for batch in batches for p in batch) or group_cycles


def test_the_attempt_result_labels_are_upstreams() -> None:
    cycle, _ = replica(["2", "2"], 2)
    assert pod_group_result(cycle.run(members(2))) == "scheduled"
    cycle, _ = replica(["1"], 2)
    assert pod_group_result(cycle.run(members(2))) == "unschedulable"


def test_the_group_states_follow_a_re_bootstrapped_snapshot() -> None:
    """A replica's re-bootstrap resets its snapshot in place: the frameworks read the new groups."""
    cycle, snapshot = replica(["4"], 1)
    fw = cycle.cycle.frameworks["default-scheduler"]
    snapshot.reset()
    snapshot.add_pod(
        make_pod("m", uid="m", node_name="n0", spec={"schedulingGroup": {"podGroupName": "train"}})
    )
    state = fw.pod_group_states.get("default", "train")
    assert state is not None and state.scheduled_pods_count() == 1


def test_a_preempting_member_whose_reserve_fails_ends_with_that_failure_and_no_nomination() -> None:
    """As :func:`preempting_group` (2 members): m1 preempts the low pod on n0, where Reserve then
    rejects it. Upstream's ``podGroupPodSchedulingAlgorithm`` ends the member with the failure as the
    FitError of that one node and clears its nomination (the eviction its PostFilter started goes on)."""
    cycle, snapshot = replica(["2", "2"], 2)
    snapshot.add_pod(make_pod("low", uid="low", node_name="n0", priority=0, requests={"cpu": "1500m"}))
    cycle.cycle.frameworks["default-scheduler"].plugins.reserve.append(RefusesNode("n0"))
    gang = members(2, "1200m")
    for pod in gang:
        pod.spec.priority = 1000
    result = cycle.run(gang)
    member = next(m for m in result.members if m.record.victims)
    status = result.member_status(member) or result.status
    assert status is not None
    outcome = ended(member.record, member, status, result)
    assert outcome.message == "0/1 nodes are available: 1 node is being drained."
    assert outcome.plugins == {"RefusesNode"} and outcome.nominated_node == ""
    assert outcome.evict_only and [v.uid for v in outcome.victims] == ["low"]
    assert "low" in snapshot.pod_locations and snapshot.pod_locations.get(member.pod.uid) is None


def test_members_that_fit_in_a_group_left_unschedulable_have_an_earlier_nomination_cleared() -> None:
    """A retry of a group whose first cycle waited for a preemption: its members carry the nominations
    that cycle gave them. Now the group is short of room and waits for no preemption; upstream ends
    each member that fit with ``clearNominatedNode`` (ksched kept the nominations: seed 9305, case 55
    of ``ksched differential``'s ``gangs``, through the pipeline). The member that did not fit ends
    with its own attempt, whose preemption found no candidate: that clears it too."""
    cycle, _ = replica(["2", "1"], 4)
    gang = members(4)
    for pod in gang:
        pod.status.nominated_node_name = "n0"
    result = cycle.run(gang)
    assert result.status is not None and not result.waiting_on_preemption
    fit = 0
    for member in result.members:
        status = result.member_status(member)
        assert status is not None
        fit += member.status is None
        outcome = ended(member.record, member, status, result)
        assert outcome.nominated_node == ""
        assert status_nomination(outcome.pod, outcome.post_filter, outcome.evict_only) == ""
    assert fit == 3


def test_the_members_nominations_keep_no_room_from_each_other_in_the_groups_retry() -> None:
    """Upstream pops a group's members together, and its queue hands a nominated pod it does not hold
    over as a bare reference (priority 0, no requests): in the retry of a group whose first cycle
    nominated m0 where it fit and m1 where it preempted (both n1), m1's nomination keeps no room from
    m0, which fits beside the victim still terminating there (seed 9305, case 96 of ``ksched
    differential``'s ``gangs``, through the pipeline: ksched left both pending)."""
    cycle, snapshot = replica(["1", "4"], 1)
    low = make_pod("low", uid="low", node_name="n1", priority=0, requests={"cpu": "1450m"})
    low.metadata.deletion_timestamp = "2026-12-07T06:37:49Z"  # the first cycle's victim, no kubelet
    disrupted = {"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler"}
    low.status.conditions = [msgspec.convert(disrupted, PodCondition)]
    snapshot.add_pod(low)
    gang = members(2, "1450m")
    for pod in gang:
        pod.spec.priority = 1000
        pod.status.nominated_node_name = "n1"
        cycle.cycle.nominator.add(PodInfo(pod), "n1")
    result = cycle.run(gang)
    assert result.status is None, result.status  # minCount 1
    placed = [m for m in result.members if m.status is None]
    assert [(m.pod.uid, m.record.node) for m in placed] == [("m0", "n1")]
    m1 = result.members[1].status
    assert m1 is not None and m1.message.endswith(
        "not eligible due to a terminating pod on the nominated node."
    )
    assert [p.priority for p in cycle.cycle.nominator.nominated_pods_for_node("n1")] == [1000]  # after it
