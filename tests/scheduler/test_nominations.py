"""The scheduler replica's nominations: its own PostFilter decisions, the API's view through the
pending-pod feed and leases, and what the preemptor's status patch carries."""

from __future__ import annotations

import msgspec
from ksched_scheduler.cycle import UNSCHEDULABLE, CycleOutcome
from ksched_scheduler.nominations import NominationTracker
from ksched_scheduler.preemption import PreemptionRunner, preempted_message, status_nomination

from ksched.api.core import Pod
from ksched.bus.messages import PendingPod, PendingPodAction, PendingPodEvent
from ksched.framework.cycle_state import CycleState
from ksched.framework.nominator import Nominator
from ksched.framework.podinfo import PodInfo
from ksched.framework.results import NominatingMode, PostFilterResult
from ksched.framework.runtime import Framework
from ksched.framework.snapshot import Snapshot
from ksched.framework.testing import make_pod
from ksched.plugins.defaultpreemption import PreemptionResult
from ksched.service.tasks import TaskGroup


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def pending(pod: Pod, nominated: str = "") -> PendingPod:
    return PendingPod(
        uid=pod.metadata.uid,
        namespace=pod.metadata.namespace,
        name=pod.metadata.name,
        scheduler_name=pod.spec.scheduler_name,
        nominated_node_name=nominated,
        pod=msgspec.json.encode(pod),
    )


def event(action: PendingPodAction, p: PendingPod) -> PendingPodEvent:
    return PendingPodEvent(action=action, pod=p, epoch="e", generation=1)


def tracker(placed: set[str] | None = None) -> tuple[NominationTracker, Nominator, Clock]:
    nominator, clock = Nominator(), Clock()
    gone = placed if placed is not None else set()
    return NominationTracker(nominator, gone.__contains__, hold_seconds=10, clock=clock), nominator, clock


def test_an_undecodable_nominated_pod_is_skipped() -> None:
    t, nominator, _ = tracker()
    p = pending(make_pod("p", priority=10), "node-1")
    bad_cpu = b'{"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "lots"}}}]}}'
    # invalid UTF-8 and a quantity that does not parse raised before the fix (found by tests/fuzz)
    for bad in (b"{broken", b'{"metadata": {"name": "\xff"}}', bad_cpu):
        t.on_event(event(PendingPodAction.ADD, msgspec.structs.replace(p, pod=bad)))
        assert nominator.node_of(p.uid) is None


def test_feed_nominations_count_and_end_with_the_pod() -> None:
    t, nominator, _ = tracker()
    p = make_pod("p", priority=10)
    t.on_event(event(PendingPodAction.ADD, pending(p, "node-1")))
    assert [pi.uid for pi in nominator.nominated_pods_for_node("node-1")] == [p.metadata.uid]
    t.on_event(event(PendingPodAction.UPDATE, pending(p, "node-2")))
    assert nominator.node_of(p.metadata.uid) == "node-2" and not nominator.nominated_pods_for_node("node-1")
    t.on_event(event(PendingPodAction.UPDATE, pending(p)))
    assert nominator.node_of(p.metadata.uid) is None
    t.on_event(event(PendingPodAction.UPDATE, pending(p, "node-3")))
    t.on_event(event(PendingPodAction.DELETE, pending(p, "node-3")))
    assert len(nominator) == 0


def test_own_decision_wins_over_stale_reports_until_the_hold_ends() -> None:
    t, nominator, clock = tracker()
    p = make_pod("p")
    t.nominate(PodInfo(p), "node-1")
    t.observe(pending(p))  # an update written before our status patch landed
    assert nominator.node_of(p.metadata.uid) == "node-1"
    t.observe(pending(p, "node-1"))  # confirmed: the API's word counts again
    t.observe(pending(p))
    assert nominator.node_of(p.metadata.uid) is None
    t.clear(p.metadata.uid)
    t.observe(pending(p, "node-9"))  # stale: we cleared it
    assert nominator.node_of(p.metadata.uid) is None
    clock.now += 11
    t.observe(pending(p, "node-9"))  # long after: another replica's nomination
    assert nominator.node_of(p.metadata.uid) == "node-9"


def test_the_apis_copy_of_a_pod_nominated_here_replaces_the_popped_one() -> None:
    """Our own nomination stores the pod as popped (no nominatedNodeName yet); once the API shows
    the nomination, its copy is the one a later preemption reads, and clears (upstream's nominator
    reads the informer's copy; sequences-s8701-25 of ``ksched differential``: the lower pod kept
    its nomination, since the preemption skips a pod that shows none)."""
    t, nominator, _ = tracker()
    popped = make_pod("p", priority=10)
    t.nominate(PodInfo(popped), "node-1")
    (stored,) = nominator.nominated_pods_for_node("node-1")
    assert not stored.pod.status.nominated_node_name
    shown = make_pod("p", uid=popped.metadata.uid, priority=10, status={"nominatedNodeName": "node-1"})
    t.observe(pending(shown, "node-1"))
    (stored,) = nominator.nominated_pods_for_node("node-1")
    assert stored.pod.status.nominated_node_name == "node-1"


def test_placed_pods_and_bootstrap() -> None:
    placed: set[str] = set()
    t, nominator, _ = tracker(placed)
    a, b, c = make_pod("a"), make_pod("b"), make_pod("c")
    placed.add(a.metadata.uid)
    t.observe(pending(a, "node-1"))
    assert nominator.node_of(a.metadata.uid) is None
    t.observe(pending(b, "node-1"))
    t.load([pending(c, "node-2")])  # b is no longer pending
    assert nominator.uids() == [c.metadata.uid]


def outcome_with(pod: Pod, result: PostFilterResult | None) -> CycleOutcome:
    fw = Framework("default-scheduler", Snapshot())
    return CycleOutcome(UNSCHEDULABLE, PodInfo(pod), fw, CycleState(), post_filter=result)


def test_post_filter_results_update_the_nominations() -> None:
    t, nominator, _ = tracker()
    runner = PreemptionRunner(None, None, t, TaskGroup())
    preemptor = make_pod("preemptor", priority=100)
    lower = make_pod("lower", priority=1)
    victim = make_pod("victim", priority=1, node_name="node-1")
    t.observe(pending(lower, "node-1"))
    result = PreemptionResult(
        nominated_node_name="node-1", victims=[PodInfo(victim)], lower_priority_nominated=[PodInfo(lower)]
    )
    runner.after_failure(outcome_with(preemptor, result))
    assert [pi.uid for pi in nominator.nominated_pods_for_node("node-1")] == [preemptor.metadata.uid]
    runner.after_failure(outcome_with(preemptor, None))  # no result: the nomination stays
    assert nominator.node_of(preemptor.metadata.uid) == "node-1"
    runner.after_failure(outcome_with(preemptor, PostFilterResult("")))  # "preemption not helpful"
    assert len(nominator) == 0
    runner.after_failure(outcome_with(preemptor, result))
    evicting = outcome_with(preemptor, result)
    evicting.evict_only = True  # a pod group member whose group waits for no preemption
    runner.after_failure(evicting)
    assert nominator.node_of(preemptor.metadata.uid) is None


def test_a_preemption_whose_victims_are_all_being_deleted_clears_no_nomination() -> None:
    """Upstream's async executor starts no goroutine when every victim is being deleted already: a
    lower-priority pod nominated to the node keeps its nomination, and nothing holds the preemptor
    back (seed 9510, case 1225: the pipeline cleared it, and the pod was tried again)."""
    t, nominator, _ = tracker()
    runner = PreemptionRunner(None, None, t, TaskGroup())
    preemptor = make_pod("preemptor", priority=100)
    lower = make_pod("lower", priority=1)
    terminating = make_pod("victim", priority=1, node_name="node-1")
    terminating.metadata.deletion_timestamp = "2026-12-07T20:23:26Z"
    t.observe(pending(lower, "node-1"))
    for victims in ([PodInfo(terminating)], []):
        result = PreemptionResult(
            nominated_node_name="node-1", victims=victims, lower_priority_nominated=[PodInfo(lower)]
        )
        assert runner.after_failure(outcome_with(preemptor, result)) == ""  # the queue holds nothing
        assert nominator.node_of(lower.metadata.uid) == "node-1"
        assert nominator.node_of(preemptor.metadata.uid) == "node-1"


def test_status_nomination_only_when_an_override_changes_it() -> None:
    fresh = PodInfo(make_pod("p"))
    nominated = PodInfo(make_pod("q", status={"nominatedNodeName": "node-1"}))
    assert status_nomination(fresh, PostFilterResult("node-1")) == "node-1"
    assert status_nomination(nominated, PostFilterResult("node-1")) is None
    assert status_nomination(nominated, PostFilterResult("")) == ""
    assert status_nomination(fresh, PostFilterResult("")) is None
    assert status_nomination(nominated, PostFilterResult("node-2", mode=NominatingMode.NOOP)) is None
    assert status_nomination(nominated, None) is None
    # a pod group member whose group waits for no preemption: cleared, whatever PostFilter said
    assert status_nomination(nominated, PostFilterResult("node-1"), evict_only=True) == ""
    assert status_nomination(fresh, PostFilterResult("node-1"), evict_only=True) is None


def test_preempted_event_text() -> None:
    assert preempted_message("u-1", "node-7") == "Preempted by pod u-1 on node node-7"
