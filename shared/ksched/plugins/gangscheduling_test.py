"""GangScheduling tests ported from upstream 1.36 ``gangscheduling_test.go`` (the hint tables and
``TestGangSchedulingFlow``). The scheduler cache upstream's test drives is a
:class:`~ksched.framework.podgroups.PodGroupTable` here; a pod group cycle reads the snapshot."""

from __future__ import annotations

from dataclasses import dataclass, field

import msgspec
import pytest

from ksched.api.core import Pod
from ksched.api.scheduling import PodGroup
from ksched.framework.cycle_state import CycleState
from ksched.framework.events import ActionType, ClusterEvent, EventResource, QueueingHint
from ksched.framework.podgroups import PodGroupTable
from ksched.framework.podinfo import PodInfo
from ksched.framework.snapshot import Snapshot, with_node_name
from ksched.framework.status import Code, Status
from ksched.framework.testing import FakeHandle, make_pod
from ksched.plugins.gangscheduling import NAME, PERMIT_TIMEOUT, GangScheduling


def gang_pod(name: str, group: str | None, namespace: str = "", uid: str | None = None) -> Pod:
    spec = {"schedulingGroup": {"podGroupName": group}} if group else None
    return make_pod(name, namespace, uid=uid or name, spec=spec)


def pod_group(name: str, min_count: int | None = None, namespace: str = "") -> PodGroup:
    policy = {"gang": {"minCount": min_count}} if min_count is not None else {"basic": {}}
    raw = {"metadata": {"name": name, "namespace": namespace}, "spec": {"schedulingPolicy": policy}}
    return msgspec.convert(raw, PodGroup)


@pytest.mark.parametrize(
    ("pod", "added", "want"),
    [
        (gang_pod("p", "pg"), gang_pod("", "pg"), QueueingHint.QUEUE),
        (gang_pod("p", "pg"), gang_pod("", "pg", namespace="foo"), QueueingHint.QUEUE_SKIP),
        (gang_pod("p", "pg1"), gang_pod("", "pg2"), QueueingHint.QUEUE_SKIP),
    ],
    ids=[
        "add a newPod which matches the pod's scheduling group",
        "add a newPod which doesn't match the pod's namespace",
        "add a newPod which doesn't match the pod's pod group name",
    ],
)
def test_is_schedulable_after_pod_added(pod: Pod, added: Pod, want: QueueingHint) -> None:
    assert GangScheduling.is_schedulable_after_pod_added(pod, None, added) == want


@pytest.mark.parametrize(
    ("pod", "added", "want"),
    [
        (gang_pod("p", "pg"), pod_group("pg", 1), QueueingHint.QUEUE),
        (gang_pod("p", "pg1"), pod_group("pg2", 1), QueueingHint.QUEUE_SKIP),
        (gang_pod("p", "pg", namespace="ns1"), pod_group("pg", 1, namespace="ns2"), QueueingHint.QUEUE_SKIP),
    ],
    ids=[
        "add a pod group which matches the pod's pod group name",
        "add a pod group which doesn't match the pod's scheduling group name",
        "add a pod group which doesn't match the pod's scheduling group namespace",
    ],
)
def test_is_schedulable_after_pod_group_added(pod: Pod, added: PodGroup, want: QueueingHint) -> None:
    assert GangScheduling.is_schedulable_after_pod_group_added(pod, None, added) == want


def test_hints_of_other_object_types_fail() -> None:
    with pytest.raises(TypeError):
        GangScheduling.is_schedulable_after_pod_added(gang_pod("p", "pg"), None, pod_group("pg", 1))


def test_events_to_register() -> None:
    events = [e.event for e in GangScheduling(FakeHandle()).events_to_register()]
    assert events == [
        ClusterEvent(EventResource.POD, ActionType.ADD),
        ClusterEvent(EventResource.POD_GROUP, ActionType.ADD),
    ]


GANG_1 = pod_group("pg1", 3, namespace="ns1")
GANG_2 = pod_group("pg2", 4, namespace="ns1")
BASIC = pod_group("pg3", namespace="ns1")
P1, P2, P3 = (gang_pod(f"p{i}", "pg1", namespace="ns1") for i in (1, 2, 3))
P4, P5 = (gang_pod(f"p{i}", "pg2", namespace="ns1") for i in (4, 5))
BASIC_POD = gang_pod("basic-pod", "pg3", namespace="ns1")
NON_GANG = gang_pod("non-gang", None, namespace="ns1")

WAIT = Status(Code.WAIT, "waiting for minCount pods from a gang to be scheduled")


@dataclass
class Flow:
    name: str
    pod: Pod
    initial_pods: list[Pod] = field(default_factory=list)
    pod_groups: list[PodGroup] = field(default_factory=list)
    waiting_on_permit: list[Pod] = field(default_factory=list)
    pod_group_cycle: bool = False
    want_pre_enqueue: Status | None = None
    want_permit: Status | None = None
    want_activated: list[str] = field(default_factory=list)
    want_allowed: list[str] = field(default_factory=list)


FLOWS = [
    Flow("non-gang pod succeeds immediately", NON_GANG, pod_groups=[GANG_1, GANG_2, BASIC]),
    Flow("basic policy pod succeeds immediately", BASIC_POD, pod_groups=[GANG_1, GANG_2, BASIC]),
    Flow(
        "gang pod fails PreEnqueue when pod group is not yet created",
        P1,
        initial_pods=[P2, P3, P4, P5],
        want_pre_enqueue=Status.unresolvable(
            'waiting for pods\'s pod group "pg1" to appear in scheduling queue'
        ),
    ),
    Flow(
        "gang pod fails PreEnqueue when quorum is not met",
        P1,
        initial_pods=[P2, P4, P5],  # only p1 and p2 of pg1 exist, minCount is 3
        pod_groups=[GANG_1, GANG_2],
        want_pre_enqueue=Status.unresolvable(
            "waiting for minCount pods from a gang to appear in scheduling queue"
        ),
    ),
    Flow(
        "gang pod passes PreEnqueue, but waits at Permit",
        P1,
        initial_pods=[P2, P3, P4, P5],
        pod_groups=[GANG_1, GANG_2],
        waiting_on_permit=[P2, P4, P5],
        want_permit=WAIT,  # p1 assumed makes 2 of the 3 pg1 needs
        want_activated=["p3"],
    ),
    Flow(
        "final gang pod arrives at Permit and allows all waiting pods from a gang",
        P1,
        initial_pods=[P2, P3, P4, P5],
        pod_groups=[GANG_1, GANG_2],
        waiting_on_permit=[P2, P3, P4, P5],
        want_allowed=["p1", "p2", "p3"],
    ),
    Flow(
        "final gang pod arrives at Permit during pod group scheduling cycle",
        P1,
        initial_pods=[P2, P3, P4, P5],
        pod_groups=[GANG_1, GANG_2],
        waiting_on_permit=[P2, P3, P4, P5],
        pod_group_cycle=True,
        want_allowed=["p1", "p2", "p3"],
    ),
]


@pytest.mark.parametrize("flow", FLOWS, ids=[f.name for f in FLOWS])
def test_gang_scheduling_flow(flow: Flow) -> None:
    snapshot = Snapshot()
    for group in flow.pod_groups:
        snapshot.objects.put(group)
    handle = FakeHandle(snapshot)
    cache = PodGroupTable([*flow.initial_pods, flow.pod])
    handle.pod_group_manager = cache
    pl = GangScheduling(handle)

    assert pl.pre_enqueue(flow.pod) == flow.want_pre_enqueue
    if flow.want_pre_enqueue is not None:
        return

    # Other pods already hit Permit and wait there.
    for waiting in flow.waiting_on_permit:
        placed = with_node_name(waiting, "some-node")
        cache.assume_pod(placed)
        status, timeout = pl.permit(CycleState(), PodInfo(placed), "some-node")
        assert status == WAIT and timeout == PERMIT_TIMEOUT, waiting.metadata.name
        handle.waiting_pods.add(PodInfo(placed), {NAME: timeout})
    handle.activated.clear()

    state = CycleState()
    placed = with_node_name(flow.pod, "some-node")
    if flow.pod_group_cycle:
        # The snapshot is taken with the waiting pods assumed; the pod is assumed in it.
        state.pod_group_cycle = True
        for waiting in flow.waiting_on_permit:
            snapshot.add_pod(with_node_name(waiting, "some-node"))
        snapshot.add_pod(placed)
    else:
        cache.assume_pod(placed)
    status, timeout = pl.permit(state, PodInfo(placed), "some-node")
    assert status == flow.want_permit
    assert [p.metadata.name for p in handle.activated] == flow.want_activated
    if status is not None:
        return
    assert timeout == 0.0
    for uid in flow.want_allowed:
        waiting_pod = handle.get_waiting_pod(uid)
        assert waiting_pod is None or waiting_pod.allowed, uid
    others = {p.metadata.uid for p in flow.waiting_on_permit} - set(flow.want_allowed)
    for uid in others:  # members of the other gang still wait
        waiting_pod = handle.get_waiting_pod(uid)
        assert waiting_pod is not None and not waiting_pod.allowed, uid


def test_permit_of_a_pod_whose_pod_group_is_gone_is_an_error() -> None:
    handle = FakeHandle()
    status, _ = GangScheduling(handle).permit(CycleState(), PodInfo(P1), "n")
    assert status is not None and status.code == Code.ERROR
    assert status.message == 'failed to get podGroup ns1/pg1: podgroup.scheduling.k8s.io "pg1" not found'


def test_pre_enqueue_without_a_group_state_is_an_error() -> None:
    snapshot = Snapshot()
    snapshot.objects.put(GANG_1)
    status = GangScheduling(FakeHandle(snapshot)).pre_enqueue(P1)
    assert status is not None and status.code == Code.ERROR
    assert status.message == "pod group state not found for pod group ns1/pg1"
