"""The queue's trace events on a real QueueCore (fake clock): one trace id per attempt, carried by
the lease; ``requeued`` ends an attempt under the old id; the next move starts a new one."""

from __future__ import annotations

from typing import Any

from ksched_queue.core import QueueCore
from ksched_queue.tracing import QueueTracing

from ksched.bus.messages import DoneOutcome, DoneRequest, LeasedPod, PopRequest, RequeueRequest
from ksched.framework.events import ActionType, EventResource
from ksched.tracing import Details, Tracer
from tests.queue.testing import cluster_event, new_core, node, pending_of, pod

FIT = "NodeResourcesFit"
NODE_ADD = cluster_event(EventResource.NODE, ActionType.ADD)


class RecordingTracer(Tracer):
    """Keeps what it is given (no bus: the queue's side only)."""

    def __init__(self) -> None:
        super().__init__("queue", "q-0", enabled=True)
        self.events: list[tuple[str, str, str, dict[str, Any]]] = []

    def emit(self, phase: str, trace_id: str, uid: str, namespace: str, name: str, **kw: Any) -> None:
        details: Details | None = kw.get("details")
        values = details() if callable(details) else details
        self.events.append((phase, trace_id, f"{namespace}/{name}", dict(values or {})))


def traced_core() -> tuple[QueueCore, RecordingTracer]:
    core, _ = new_core()
    tracer = RecordingTracer()
    QueueTracing(tracer, core.queue).install(core)
    return core, tracer


def pop(core: QueueCore) -> LeasedPod:
    leased = core.pop(PopRequest(scheduler_id="s-0", scheduler_names=["default-scheduler"], max_pods=1))
    assert len(leased) == 1
    return leased[0]


def done(core: QueueCore, leased: LeasedPod, outcome: DoneOutcome, plugins: list[str] | None = None) -> None:
    ack = core.done(
        DoneRequest(
            lease_id=leased.lease_id,
            scheduler_id="s-0",
            pod_uid=leased.pod.uid,
            namespace=leased.pod.namespace,
            name=leased.pod.name,
            outcome=outcome,
            unschedulable_plugins=plugins or [],
        )
    )
    assert ack.ok, ack


def test_an_unschedulable_attempt_then_a_new_attempt_after_a_node_event() -> None:
    core, tracer = traced_core()
    core.queue.add(pending_of(pod("web")))
    leased = pop(core)
    done(core, leased, DoneOutcome.UNSCHEDULABLE, [FIT])
    core.queue.on_cluster_event(NODE_ADD, None, node("n9"))
    second = pop(core)

    phases = [(phase, trace) for phase, trace, _, _ in tracer.events]
    first_id, second_id = leased.trace_id, second.trace_id
    assert first_id and second_id and first_id != second_id
    assert phases == [
        ("queued", first_id),
        ("popped", first_id),
        ("requeued", first_id),
        ("queued", second_id),  # NodeAdd: to backoffQ (its backoff is still running)
        ("queued", second_id),  # activeQ is empty: popped from backoffQ
        ("popped", second_id),
    ]
    queued, popped, requeued, moved, from_backoff, _ = (d for _, _, _, d in tracer.events)
    assert queued == {"queue": "active", "event": "UnschedulablePodAdd"}
    assert popped["scheduler"] == "s-0" and popped["attempt"] == 1 and popped["lease"] == leased.lease_id
    assert requeued == {"queue": "unschedulable", "event": "ScheduleAttemptFailure", "plugins": [FIT]}
    assert moved == {"queue": "backoff", "event": "NodeAdd", "backoff": 1.0, "plugins": [FIT]}
    assert from_backoff["event"] == "PopFromBackoffQ"
    assert {key for _, _, key, _ in tracer.events} == {"default/web"}


def test_a_rejected_assume_ends_the_attempt_and_starts_the_next_in_the_active_queue() -> None:
    core, tracer = traced_core()
    core.queue.add(pending_of(pod("web")))
    leased = pop(core)
    done(core, leased, DoneOutcome.RETRY)
    again = pop(core)
    assert [(p, t) for p, t, _, _ in tracer.events][2:] == [
        ("requeued", leased.trace_id),
        ("queued", again.trace_id),
        ("popped", again.trace_id),
    ]
    assert tracer.events[2][3] == {"queue": "active", "event": "AssumeRejected"}


def test_a_failed_binding_requeues_with_backoff_under_the_attempts_id() -> None:
    core, tracer = traced_core()
    core.queue.add(pending_of(pod("web")))
    leased = pop(core)
    done(core, leased, DoneOutcome.SCHEDULED)
    ack = core.requeue(
        RequeueRequest(
            pod_uid=leased.pod.uid, namespace="default", name="web", reason="bind failed", backoff=True
        )
    )
    assert ack.ok
    requeued, queued = tracer.events[-2:]
    assert requeued[:2] == ("requeued", leased.trace_id)
    assert requeued[3]["queue"] == "backoff" and requeued[3]["event"] == "ScheduleAttemptFailure"
    assert requeued[3]["backoff"] > 0
    assert queued[0] == "queued" and queued[1] not in ("", leased.trace_id)


def test_a_gated_pod_is_traced_as_queued_in_unschedulable_with_its_gate() -> None:
    core, tracer = traced_core()
    core.queue.add(pending_of(pod("gated", gates=["example.com/wait"])))
    assert tracer.events == [
        (
            "queued",
            tracer.events[0][1],
            "default/gated",
            {
                "queue": "unschedulable",
                "event": "UnschedulablePodAdd",
                "plugins": ["SchedulingGates"],
                "gated_by": "SchedulingGates",
            },
        )
    ]


def test_without_tracing_leases_still_get_a_trace_id() -> None:
    core, _ = new_core()
    QueueTracing(Tracer("queue", "q", enabled=False), core.queue).install(core)
    core.queue.add(pending_of(pod("web")))
    assert pop(core).trace_id


def test_an_expired_lease_ends_the_attempt_and_requeues_under_a_new_id() -> None:
    core, tracer = traced_core()
    clock = core.queue.clock
    core.queue.add(pending_of(pod("web")))
    leased = pop(core)
    clock.advance(core.leases.lease_seconds + 1)  # type: ignore[attr-defined]
    assert len(core.expire_leases()) == 1
    requeued, queued = tracer.events[-2:]
    assert requeued[:2] == ("requeued", leased.trace_id) and requeued[3]["event"] == "LeaseExpired"
    assert queued[0] == "queued" and queued[1] != leased.trace_id and queued[3]["queue"] == "active"
    assert pop(core).trace_id == queued[1]
