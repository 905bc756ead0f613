"""The queue with pod groups (GenericWorkload, GangScheduling; docs/gang.md): GangScheduling's
PreEnqueue on the informer's group views, the hints that release a gang, a group popped whole into
one reply, and gang members retried on backoff alone."""

from __future__ import annotations

import msgspec
from ksched_queue.core import QueueCore
from ksched_queue.settings import QueueSettings, build_core

from ksched.api.lifecycle import PodLifecycle
from ksched.api.scheduling import PodGroup
from ksched.bus.messages import (
    DoneOutcome,
    DoneRequest,
    LeasedPod,
    PendingPod,
    PendingPodAction,
    PendingPodGroup,
    PopRequest,
)
from ksched.config import parse_config
from ksched.features import FeatureGates
from ksched.framework.events import ActionType, EventResource
from ksched.service.options import CommonOptions
from tests.queue.testing import START, TWO_PROFILES, FakeClock, event_msg, pending_event, pending_of, pod

GATES = FeatureGates.parse("GenericWorkload=true,GangScheduling=true")


def gang_core() -> tuple[QueueCore, FakeClock]:
    clock = FakeClock(START)
    config = parse_config(TWO_PROFILES, gates=GATES)
    core = build_core(
        QueueSettings(scheduler_config=config, common=CommonOptions(identity="queue", feature_gates=GATES)),
        clock,
        on_incoming=None,
    )
    core.cursor.epoch = "e1"
    return core, clock


def group(name: str, min_count: int) -> PodGroup:
    raw = {
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"schedulingPolicy": {"gang": {"minCount": min_count}}},
    }
    return msgspec.convert(raw, PodGroup)


def member(name: str, group_name: str, all_pods: int, pod_group: PodGroup | None, **kw: object) -> PendingPod:
    p = pod(name, spec={"schedulingGroup": {"podGroupName": group_name}}, **kw)  # type: ignore[arg-type]
    pending = pending_of(p)
    raw = msgspec.json.encode(pod_group) if pod_group is not None else b""
    pending.group = PendingPodGroup(name=group_name, pod_group=raw, all_pods=all_pods)
    return pending


def add(core: QueueCore, pending: PendingPod) -> None:
    core.apply_pending(pending_event(PendingPodAction.ADD, pending))


def pop(core: QueueCore, max_pods: int = 16, scheduler: str = "s1") -> list[tuple[str, str]]:
    leased = core.pop(PopRequest(scheduler_id=scheduler, scheduler_names=[], max_pods=max_pods))
    return [(p.pod.name, p.group) for p in leased]


def test_a_gang_waits_for_its_pod_group_and_min_count_then_pops_whole() -> None:
    core, _ = gang_core()
    pg = group("train", 3)
    add(core, member("a", "train", 1, None))
    assert core.queue.state_of("uid-a") == PodLifecycle.GATED  # no PodGroup yet
    add(core, member("b", "train", 2, None))
    core.apply_cluster_event(event_msg(EventResource.POD_GROUP, ActionType.ADD, new=pg))
    assert core.queue.state_of("uid-a") == PodLifecycle.GATED  # the PodGroup, but 2 of 3 pods
    add(core, member("c", "train", 3, pg))  # the third pod releases the others (UnschedulablePod/Add)
    assert {core.queue.state_of(f"uid-{n}") for n in "abc"} == {PodLifecycle.ACTIVE}
    assert sorted(pop(core, max_pods=1)) == [
        ("a", "default/train"),
        ("b", "default/train"),
        ("c", "default/train"),
    ]
    assert pop(core) == []


def test_the_pod_group_event_releases_a_gang_with_enough_pods() -> None:
    core, _ = gang_core()
    add(core, member("a", "train", 2, None))
    add(core, member("b", "train", 2, None))
    assert core.queue.state_of("uid-b") == PodLifecycle.GATED
    core.apply_cluster_event(event_msg(EventResource.POD_GROUP, ActionType.ADD, new=group("train", 2)))
    assert core.queue.state_of("uid-a") == core.queue.state_of("uid-b") == PodLifecycle.ACTIVE


def done(core: QueueCore, leased: LeasedPod, outcome: DoneOutcome) -> str:
    request = DoneRequest(
        lease_id=leased.lease_id,
        scheduler_id="s1",
        pod_uid=leased.pod.uid,
        namespace="default",
        name=leased.pod.name,
        outcome=outcome,
        unschedulable_plugins=["NodeResourcesFit"] if outcome == DoneOutcome.UNSCHEDULABLE else [],
    )
    return core.done(request).code


def test_a_group_pop_takes_members_from_backoff_but_not_other_groups_or_profiles() -> None:
    core, _ = gang_core()
    pg = group("train", 1)
    for name in ("a", "b"):
        add(core, member(name, "train", 3, pg))
    add(core, member("other-profile", "train", 3, pg, scheduler_name="other-scheduler"))
    add(core, member("x", "elsewhere", 1, group("elsewhere", 1)))
    request = PopRequest(scheduler_id="s1", scheduler_names=["default-scheduler"], max_pods=1)
    a, b = core.pop(request)
    assert (a.pod.name, b.pod.name, a.group, b.group) == ("a", "b", "default/train", "default/train")
    assert done(core, a, DoneOutcome.UNSCHEDULABLE) == PodLifecycle.BACKOFF
    assert done(core, b, DoneOutcome.RETRY) == PodLifecycle.ACTIVE
    assert [p.pod.name for p in core.pop(request)] == ["b", "a"]  # a comes out of backoff with b
    assert core.queue.state_of("uid-other-profile") == PodLifecycle.ACTIVE
    assert core.queue.state_of("uid-x") == PodLifecycle.ACTIVE


def test_a_gang_member_rejected_by_plugins_skips_the_unschedulable_pool() -> None:
    core, _ = gang_core()
    add(core, member("a", "train", 1, group("train", 1)))
    [leased] = core.pop(PopRequest(scheduler_id="s1", scheduler_names=[], max_pods=1))
    assert done(core, leased, DoneOutcome.UNSCHEDULABLE) == PodLifecycle.BACKOFF
    add(core, pending_of(pod("solo")))  # without a group: the unschedulable pool, as always
    [solo] = core.pop(PopRequest(scheduler_id="s1", scheduler_names=[], max_pods=1))
    assert done(core, solo, DoneOutcome.UNSCHEDULABLE) == PodLifecycle.UNSCHEDULABLE


def test_without_the_gates_pods_of_a_group_are_popped_alone() -> None:
    clock = FakeClock(START)
    core = build_core(QueueSettings(scheduler_config=parse_config(TWO_PROFILES)), clock, on_incoming=None)
    pg = group("train", 2)
    for name in ("a", "b"):
        add(core, member(name, "train", 2, pg))
    assert pop(core, max_pods=1) == [("a", "")]
