"""A scheduler replica's decisions and the messages they send, in process (tests/scheduler/
harness.py): a pod placed (assume, then done), a pod rejected with upstream's message and its
rejecting plugins, a Permit wait carried to the binder, a refused assume, and Unreserve."""

from __future__ import annotations

from typing import Any

import pytest

from ksched.api.core import Node
from ksched.bus.messages import AssumeReply, AssumeRequest, DoneOutcome, DoneRequest
from ksched.framework.cycle_state import CycleState
from ksched.framework.podinfo import PodInfo
from ksched.framework.status import Code, Status
from ksched.framework.testing import make_node, make_pod
from tests.scheduler.harness import EPOCH, SchedulerHarness

ALLOC = {"cpu": "2", "memory": "4Gi", "pods": "110"}


def two_nodes() -> list[Node]:
    return [
        make_node("small", allocatable=ALLOC),
        make_node("big", allocatable={**ALLOC, "cpu": "8"}, labels={"disk": "ssd"}),
    ]


async def test_a_pod_that_fits_one_node_is_assumed_there_and_its_lease_left_to_the_queue() -> None:
    """An accepted placement sends no done: the queue ends the attempt when the informer's feed says
    the pod is assumed (docs/architecture.md, the pod's state machine)."""
    h = SchedulerHarness(two_nodes())
    pod = make_pod("p", requests={"cpu": "4"})
    sent = await h.schedule(pod)
    (assume,) = sent
    assert isinstance(assume, AssumeRequest)
    assert h.service.core.held == {}  # not renewed any more
    p = assume.placement
    assert (p.node_name, p.namespace, p.name, p.pod_uid) == ("big", "default", "p", pod.metadata.uid)
    assert (p.epoch, p.snapshot_generation, p.scheduler_id, p.profile) == (
        EPOCH,
        1,
        "replica-h",
        "default-scheduler",
    )
    assert p.permit_waits == {}
    assert h.replica.snapshot.location(pod.metadata.uid) == "big"  # counted at once


async def test_a_pod_that_fits_nowhere_is_reported_with_upstream_s_message() -> None:
    h = SchedulerHarness(two_nodes())
    [done] = await h.schedule(make_pod("huge", requests={"cpu": "16"}))
    assert isinstance(done, DoneRequest)
    assert done.outcome == DoneOutcome.UNSCHEDULABLE
    assert done.unschedulable_plugins == ["NodeResourcesFit"]
    # more than any node's allocatable: NodeResourcesFit says preemption cannot help (upstream 1.36)
    assert done.message == (
        "0/2 nodes are available: 2 Insufficient cpu. no new claims to deallocate, preemption: "
        "0/2 nodes are available: 2 Preemption is not helpful for scheduling."
    )


async def test_a_pod_that_fits_only_by_evicting_its_equals_finds_no_victims() -> None:
    busy = make_pod("busy", requests={"cpu": "7"}, node_name="big", priority=10)
    h = SchedulerHarness(two_nodes(), [busy])
    [done] = await h.schedule(make_pod("p", requests={"cpu": "4"}, priority=10))
    assert isinstance(done, DoneRequest)
    assert (done.outcome, done.nominated_node_name) == (DoneOutcome.UNSCHEDULABLE, "")
    assert done.message == (
        "0/2 nodes are available: 2 Insufficient cpu. no new claims to deallocate, preemption: "
        "0/2 nodes are available: 1 No preemption victims found for incoming pod, "
        "1 Preemption is not helpful for scheduling."
    )


async def test_a_higher_priority_pod_nominates_the_node_of_its_victims() -> None:
    busy = make_pod("busy", requests={"cpu": "7"}, node_name="big", priority=1)
    h = SchedulerHarness(two_nodes(), [busy])
    [done] = await h.schedule(make_pod("vip", requests={"cpu": "4"}, priority=100))
    assert isinstance(done, DoneRequest)
    assert (done.outcome, done.nominated_node_name) == (DoneOutcome.UNSCHEDULABLE, "big")


async def test_a_node_selector_nobody_matches_names_node_affinity() -> None:
    h = SchedulerHarness(two_nodes())
    [done] = await h.schedule(make_pod("picky", spec={"nodeSelector": {"disk": "nvme"}}))
    assert isinstance(done, DoneRequest)
    assert (done.outcome, done.unschedulable_plugins) == (DoneOutcome.UNSCHEDULABLE, ["NodeAffinity"])
    assert done.message == (
        "0/2 nodes are available: 2 node(s) didn't match Pod's node affinity/selector. no new claims to "
        "deallocate, preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling."
    )


class WaitingPermit:
    """A Permit plugin that makes every pod wait (a gang scheduler would)."""

    name = "Gang"

    def permit(self, state: CycleState, pod: PodInfo, node_name: str) -> tuple[Status | None, float]:
        return Status(Code.WAIT, "waiting for the gang"), 12.0


async def test_a_permit_wait_travels_with_the_placement() -> None:
    h = SchedulerHarness(two_nodes())
    h.cycle.frameworks["default-scheduler"].plugins.permit.append(WaitingPermit())
    (assume,) = await h.schedule(make_pod("member"))
    assert isinstance(assume, AssumeRequest)
    assert assume.placement.permit_waits == {"Gang": 12.0}  # the binder waits in WaitOnPermit


class RejectingPermit:
    """A Permit plugin that refuses every pod, as a gang's would once it cannot be completed."""

    name = "Gang"

    def permit(self, state: CycleState, pod: PodInfo, node_name: str) -> tuple[Status | None, float]:
        return Status.unschedulable("the gang cannot be completed"), 0.0


class FailingPermit:
    name = "Broken"

    def permit(self, state: CycleState, pod: PodInfo, node_name: str) -> tuple[Status | None, float]:
        return Status.as_error("its backend is down"), 0.0


@pytest.mark.parametrize(
    ("plugin", "outcome", "message"),
    [
        # upstream wraps a rejection in a FitError of the one node the pod was reserved on
        (
            RejectingPermit(),
            DoneOutcome.UNSCHEDULABLE,
            "0/1 nodes are available: 1 the gang cannot be completed.",
        ),
        # and an error as RunPermitPlugins does (Go's %q)
        (FailingPermit(), DoneOutcome.ERROR, 'running Permit plugin "Broken": its backend is down'),
    ],
)
async def test_a_permit_failure_reads_as_upstreams(plugin: Any, outcome: str, message: str) -> None:
    h = SchedulerHarness(two_nodes())
    h.cycle.frameworks["default-scheduler"].plugins.permit.append(plugin)
    (done,) = await h.schedule(make_pod("refused"))
    assert isinstance(done, DoneRequest)
    assert (done.outcome, done.message) == (outcome, message)


async def test_a_refused_assume_is_undone_and_retried() -> None:
    h = SchedulerHarness(two_nodes())
    h.outbox.answer = lambda _: AssumeReply(accepted=False, code="PodNotPending", reason="gone", epoch=EPOCH)
    pod = make_pod("p")
    assume, done = await h.schedule(pod)
    assert isinstance(assume, AssumeRequest) and isinstance(done, DoneRequest)
    assert (done.outcome, done.message) == (DoneOutcome.RETRY, "PodNotPending: gone")
    assert h.replica.snapshot.location(pod.metadata.uid) is None  # forgotten locally


async def test_unreserve_from_the_binder_undoes_the_local_placement_once() -> None:
    h = SchedulerHarness(two_nodes())
    pod = make_pod("p", requests={"cpu": "4"})
    (assume,) = await h.schedule(pod)
    assert isinstance(assume, AssumeRequest)
    placement = assume.placement
    ack = await h.unreserve(placement.placement_id, pod, placement.node_name)
    assert ack.ok and h.replica.snapshot.location(pod.metadata.uid) is None
    again = await h.unreserve(placement.placement_id, pod, placement.node_name)
    assert (again.ok, again.code) == (False, "Unknown")


async def test_a_pod_the_snapshot_shows_bound_is_nominated_nowhere() -> None:
    """A replica's own nomination may never reach the API (the pod bound elsewhere first): the informer
    then sends no nominations batch for it, and the snapshot's binding clears it."""
    h = SchedulerHarness(two_nodes())
    pod = make_pod("preemptor", priority=100)
    h.service.nominations.nominate(PodInfo(pod), "big")
    assert h.service.nominator.node_of(pod.metadata.uid) == "big"
    h.service._bound(pod.metadata.uid)  # what the replica calls for a delta showing it bound
    assert h.service.nominator.node_of(pod.metadata.uid) is None


async def test_a_placed_pod_leased_again_is_not_scheduled_and_stays_where_the_replica_has_it() -> None:
    """The queue leases a pod again whose placement it has not heard of yet (its lease expired while
    NATS restarted, or the replica's assume timed out after the informer accepted it), though the
    replica has it on "small": it is not scheduled again (upstream skips an assumed pod), its attempt
    ends as scheduled, and the pod stays on "small". Deciding it again moved it off "small" in the
    replica while that assume was in flight, and the informer's check of a later decision reads only
    what changed after its snapshot (``ksched bench chaos`` found pods of one anti-affinity group on
    one node so)."""
    bound = make_pod("p", requests={"cpu": "1500m"}, node_name="small")
    h = SchedulerHarness(two_nodes(), [bound])
    pending = make_pod("p", uid=bound.metadata.uid, requests={"cpu": "1500m"})
    (done,) = await h.schedule(pending)
    assert isinstance(done, DoneRequest)
    assert (done.outcome, done.node_name) == (DoneOutcome.SCHEDULED, "small")
    assert h.replica.snapshot.location(bound.metadata.uid) == "small"
    assert h.replica.snapshot.node_map["small"].requested.milli_cpu == 1500
