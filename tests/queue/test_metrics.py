"""The queue's upstream metrics: scheduler_unschedulable_pods (kept as pods move), scheduler_inflight_events,
scheduler_event_handling_duration_seconds (labels per informer event), PreEnqueue plugin durations and
the PreEnqueue extension point."""

from __future__ import annotations

from ksched_queue.core import QueueCore
from ksched_queue.metrics import QUEUE_STATE, bind_queue_metrics
from prometheus_client import REGISTRY, generate_latest

from ksched.api.lifecycle import PodLifecycle
from ksched.bus.messages import PendingPodAction
from ksched.framework.events import ActionType, EventResource
from ksched.metrics.plugin_metrics import PLUGIN_EXECUTION_DURATION
from tests.queue.testing import event_msg, new_core, node, pending_event, pending_of, pod

FIT = "NodeResourcesFit"
PORTS = "NodePorts"
PROFILE = "default-scheduler"


def gauge(core: QueueCore) -> dict[tuple[str, str], int]:
    return core.queue.rejections.nonzero()


def test_a_rejected_pod_counts_once_per_plugin_until_popped_again() -> None:
    core, clock = new_core()
    core.queue.add(pending_of(pod("p", requests={"cpu": "3"})))
    core.queue.pop()
    assert gauge(core) == {}  # in flight: nothing
    assert core.queue.failed("uid-p", (FIT, PORTS), ("VolumeBinding",)) == PodLifecycle.UNSCHEDULABLE
    assert gauge(core) == {(FIT, PROFILE): 1, (PORTS, PROFILE): 1, ("VolumeBinding", PROFILE): 1}
    # an event moves it to activeQ: upstream keeps counting it until the next pop
    core.apply_cluster_event(event_msg(EventResource.NODE, ActionType.ADD, None, node("n1")))
    clock.advance(1.5)
    core.queue.flush_backoff_completed()
    assert core.queue.state_of("uid-p") in (PodLifecycle.ACTIVE, PodLifecycle.BACKOFF)
    assert gauge(core) == {(FIT, PROFILE): 1, (PORTS, PROFILE): 1, ("VolumeBinding", PROFILE): 1}
    assert core.queue.pop() is not None
    assert gauge(core) == {}
    assert core.queue.rejections.counts[FIT, PROFILE] == 0  # the series stays, at 0


def test_deleting_or_assuming_a_rejected_pod_takes_it_out() -> None:
    core, _ = new_core()
    for name in ("a", "b"):
        core.queue.add(pending_of(pod(name, requests={"cpu": "3"})))
        core.queue.pop()
        core.queue.failed(f"uid-{name}", (FIT,))
    assert gauge(core) == {(FIT, PROFILE): 2}
    core.apply_pending(pending_event(PendingPodAction.DELETE, pod("a"), reason="deleted"))
    assert gauge(core) == {(FIT, PROFILE): 1}
    core.apply_pending(pending_event(PendingPodAction.DELETE, pod("b"), reason="assumed"))
    assert core.queue.state_of("uid-b") == PodLifecycle.ASSUMED
    assert gauge(core) == {}


def test_a_pod_counts_under_its_profile_and_a_failed_bind_counts_again() -> None:
    core, _ = new_core()
    core.queue.add(pending_of(pod("o", scheduler_name="other-scheduler")))
    core.queue.pop()
    core.queue.scheduled("uid-o")
    assert gauge(core) == {}
    core.queue.requeue_assumed("uid-o", unschedulable_plugins=("VolumeBinding",))
    assert gauge(core) == {("VolumeBinding", "other-scheduler"): 1}


def test_a_gated_pod_counts_for_its_gate_and_an_error_for_nothing() -> None:
    core, _ = new_core()
    core.queue.add(pending_of(pod("g", gates=["example.com/wait"])))
    core.queue.add(pending_of(pod("e")))
    assert core.queue.state_of("uid-g") == PodLifecycle.GATED
    core.queue.pop()
    core.queue.failed("uid-e")  # an error: no rejecting plugin
    assert gauge(core) == {("SchedulingGates", PROFILE): 1}


def test_inflight_events_count_popped_pods_and_the_events_they_may_need() -> None:
    core, _ = new_core()
    core.queue.add(pending_of(pod("a", requests={"cpu": "3"})))
    core.queue.add(pending_of(pod("b", requests={"cpu": "3"})))
    assert core.queue.in_flight_event_counts() == {"PodPopped": 0}
    core.queue.pop()
    core.apply_cluster_event(event_msg(EventResource.NODE, ActionType.ADD, None, node("n1")))
    core.queue.pop()
    core.apply_cluster_event(event_msg(EventResource.NODE, ActionType.ADD, None, node("n2")))
    core.apply_cluster_event(
        event_msg(EventResource.ASSIGNED_POD, ActionType.DELETE, pod("x", node_name="n1"))
    )
    assert core.queue.in_flight_event_counts() == {"PodPopped": 2, "NodeAdd": 2, "AssignedPodDelete": 1}
    core.queue.failed("uid-a", (FIT,))  # the first event was only a's
    assert core.queue.in_flight_event_counts() == {"PodPopped": 1, "NodeAdd": 1, "AssignedPodDelete": 1}
    core.queue.failed("uid-b", (FIT,))
    assert core.queue.in_flight_event_counts() == {"PodPopped": 0}


def test_event_handling_is_observed_under_upstream_labels() -> None:
    core, _ = new_core()
    seen: list[str] = []
    core.on_event_handled = lambda label, seconds: seen.append(label)
    p = pod("p", labels={"app": "a"})
    core.apply_pending(pending_event(PendingPodAction.ADD, p))
    p.metadata.labels = {"app": "b"}
    core.apply_pending(pending_event(PendingPodAction.UPDATE, p))
    pending = pending_of(p)
    core.apply_pending(pending_event(PendingPodAction.UPDATE, pending))
    core.apply_pending(pending_event(PendingPodAction.UPDATE, pending))  # same resourceVersion: ignored
    core.apply_cluster_event(
        event_msg(EventResource.NODE, ActionType.UPDATE_NODE_TAINT, node("n"), node("n"))
    )
    core.apply_pending(pending_event(PendingPodAction.DELETE, pod("x"), reason="assumed"))  # ksched's own
    core.apply_pending(pending_event(PendingPodAction.DELETE, p, reason="deleted"))
    core.apply_pending(pending_event(PendingPodAction.DELETE, pod("y", scheduler_name="elsewhere")))
    assert seen == [
        "UnschedulablePodAdd",
        "UnschedulablePodUpdate",
        "UnschedulablePodUpdatePodLabel",
        "UnschedulablePodUpdate",
        "NodeUpdateNodeTaint",
        "UnschedulablePodDelete",
    ]


def test_the_metrics_endpoint_shows_the_bound_queue() -> None:
    core, _ = new_core()
    bind_queue_metrics(core)
    try:
        core.queue.sample_plugin_metrics = lambda: True
        gated_before = PLUGIN_EXECUTION_DURATION.count(
            ("SchedulingGates", "PreEnqueue", "UnschedulableAndUnresolvable")
        )
        core.apply_pending(pending_event(PendingPodAction.ADD, pod("g", gates=["example.com/wait"])))
        core.apply_pending(pending_event(PendingPodAction.ADD, pod("p", requests={"cpu": "3"})))
        core.queue.pop()
        text = generate_latest(REGISTRY).decode()
    finally:
        QUEUE_STATE.queue = None
    assert 'scheduler_unschedulable_pods{plugin="SchedulingGates",profile="default-scheduler"} 1.0' in text
    assert 'scheduler_inflight_events{event="PodPopped"} 1.0' in text
    assert 'scheduler_event_handling_duration_seconds_count{event="UnschedulablePodAdd"}' in text
    assert 'scheduler_event_handling_duration_seconds_bucket{event="UnschedulablePodAdd",le="0.0001"}' in text
    assert (
        PLUGIN_EXECUTION_DURATION.count(("SchedulingGates", "PreEnqueue", "UnschedulableAndUnresolvable"))
        == gated_before + 1
    )
    assert 'scheduler_plugin_execution_duration_seconds_count{extension_point="PreEnqueue"' in text


def test_every_pre_enqueue_run_is_observed_by_profile_and_status() -> None:
    core, _ = new_core()
    runs: list[tuple[str, str]] = []
    core.queue.observe_pre_enqueue = lambda profile, status, seconds: runs.append((profile, status))
    core.apply_pending(pending_event(PendingPodAction.ADD, pod("g", gates=["example.com/wait"])))
    core.apply_pending(pending_event(PendingPodAction.ADD, pod("o", scheduler_name="other-scheduler")))
    assert runs == [
        (PROFILE, "UnschedulableAndUnresolvable"),  # SchedulingGates gates it
        ("other-scheduler", "Success"),
    ]
    # a failed attempt goes back to backoffQ through PreEnqueue (SchedulerPopFromBackoffQ)
    core.queue.pop()
    core.queue.failed("uid-o")
    assert runs[-1] == ("other-scheduler", "Success") and len(runs) == 3


def test_pre_enqueue_runs_land_in_the_extension_point_histogram() -> None:
    core, _ = new_core()
    bind_queue_metrics(core)
    series = {"extension_point": "PreEnqueue", "status": "Success", "profile": PROFILE}
    name = "scheduler_framework_extension_point_duration_seconds"
    try:
        before = REGISTRY.get_sample_value(f"{name}_count", series) or 0.0
        core.apply_pending(pending_event(PendingPodAction.ADD, pod("plain")))
        assert REGISTRY.get_sample_value(f"{name}_count", series) == before + 1
        assert REGISTRY.get_sample_value(f"{name}_bucket", {**series, "le": "0.2048"}) == before + 1
    finally:
        QUEUE_STATE.queue = None
