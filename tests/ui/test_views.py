"""``ksched ui``'s data assembly, without a browser: node bars by zone, the queue listing, a pod's
page from real trace events (the scheduler's own builders on real cycles)."""

from __future__ import annotations

from typing import Any

import msgspec
from ksched_scheduler.cycle import SchedulingCycle
from ksched_scheduler.tracing import trace_cycle
from ksched_ui import views

from ksched.bus.messages import LeasedPod, PendingPod, QueueListEntry, QueueListReply, TraceEvent
from ksched.config import default_config
from ksched.config.profile import build_frameworks
from ksched.framework.algorithm import ScheduleAlgorithm
from ksched.framework.nominator import Nominator
from ksched.framework.snapshot import Snapshot
from ksched.framework.testing import make_node, make_pod, make_snapshot
from ksched.tracing import Tracer

ZONE = views.ZONE_LABEL
MESSAGE = "0/3 nodes are available: 3 Insufficient cpu."


def node(name: str, zone: str | None, cpu: str = "4", **kw: Any) -> Any:
    labels = {ZONE: zone} if zone else {}
    return make_node(name, labels=labels, allocatable={"cpu": cpu, "memory": "8Gi", "pods": "10"}, **kw)


def test_cluster_view_groups_nodes_by_zone_with_requested_and_allocatable() -> None:
    snapshot = make_snapshot(
        [node("b-1", "zone-b"), node("a-2", "zone-a"), node("a-1", "zone-a"), node("bare", None, cpu="2")],
        [
            make_pod("web", uid="u1", node_name="a-1", requests={"cpu": "1500m", "memory": "1Gi"}),
            make_pod("db", uid="u2", node_name="a-1", requests={"cpu": "1"}),
        ],
    )
    view = views.cluster_view(snapshot, generation=7, synced=True)
    assert [z["zone"] for z in view["zones"]] == ["zone-a", "zone-b", ""]  # no zone last
    assert [n["name"] for n in view["zones"][0]["nodes"]] == ["a-1", "a-2"]
    a1 = view["zones"][0]["nodes"][0]
    assert a1["cpu"] == [2500, 4000]
    assert a1["memory"] == [1024**3, 8 * 1024**3]
    assert a1["pods"] == [2, 10]
    assert view["totals"]["cpu"] == [2500, 14000] and view["totals"]["pods"] == [2, 40]
    assert view["generation"] == 7 and view["synced"] and view["nodes"] == 4


def test_cordoned_and_tainted_nodes_are_flagged() -> None:
    taint = {"key": "gpu", "value": "yes", "effect": "NoSchedule"}
    snapshot = make_snapshot([node("n", "z", unschedulable=True, taints=[taint])])
    (row,) = views.cluster_view(snapshot, generation=1, synced=True)["zones"][0]["nodes"]
    assert row["unschedulable"] and row["taints"] == 1


def entry(name: str, queue: str, **kw: Any) -> QueueListEntry:
    return QueueListEntry(
        uid=f"uid-{name}", namespace="default", name=name, scheduler_name="s", queue=queue, **kw
    )


def test_queue_rows_say_why_each_pod_waits() -> None:
    reply = QueueListReply(
        pods=[
            entry("big", "unschedulable", plugins=["NodeResourcesFit"], message=MESSAGE, attempts=2),
            entry("gated", "gated", gating_plugin="SchedulingGates"),
            entry("plain", "unschedulable", plugins=["TaintToleration", "NodeAffinity"]),
            entry("new", "active"),
        ],
        counts={"active": 1, "unschedulable": 2, "gated": 1},
        matched=4,
    )
    view = views.queue_view(reply)
    reasons = {row["key"]: row["reason"] for row in view["pods"]}
    assert reasons == {
        "default/big": MESSAGE,
        "default/gated": "gated by SchedulingGates",
        "default/plain": "rejected by TaintToleration, NodeAffinity",
        "default/new": "",
    }
    assert view["available"] and view["counts"]["unschedulable"] == 2 and view["pods"][0]["attempts"] == 2


def test_queue_view_without_an_answer_says_why() -> None:
    view = views.queue_view(None, "the queue did not answer (NoRespondersError)")
    assert not view["available"] and view["pods"] == [] and "NoResponders" in view["error"]


class Collecting(Tracer):
    """The scheduler's tracer, collecting the events it would publish."""

    def __init__(self) -> None:
        super().__init__("scheduler", "scheduler-0", enabled=True)
        self.out: list[TraceEvent] = []

    def emit(self, phase: str, trace_id: str, uid: str, namespace: str, name: str, **kw: Any) -> None:
        details = kw.get("details")
        values = details() if callable(details) else details
        self.out.append(
            TraceEvent(
                trace_id=trace_id,
                pod_uid=uid,
                namespace=namespace,
                name=name,
                service=self.service,
                instance=self.instance,
                phase=phase,
                ts=kw["ts"],
                duration=kw.get("duration"),
                details=dict(values or {}),
            )
        )


def traced(snapshot: Snapshot, pod_name: str, cpu: str, trace_id: str, ts: float) -> list[TraceEvent]:
    """A real cycle's scheduler events, after the queue's ``queued`` and ``popped``."""
    cycle = SchedulingCycle(
        build_frameworks(default_config(), snapshot), snapshot, ScheduleAlgorithm(seed=3), Nominator()
    )
    outcome = cycle.run(make_pod(pod_name, uid=f"uid-{pod_name}", requests={"cpu": cpu}))
    pending = PendingPod(uid=f"uid-{pod_name}", namespace="default", name=pod_name, scheduler_name="s")
    leased = LeasedPod(lease_id="l", deadline=0, lease_seconds=30, pod=pending, trace_id=trace_id)
    tracer = Collecting()
    trace_cycle(
        tracer, leased, outcome, epoch="e", generation=3, arrived=ts + 0.002, waited=0.0, started=ts + 0.002,
        elapsed=0.001,
    )  # fmt: skip
    steps: list[tuple[str, dict[str, Any]]] = [("queued", {"queue": "active"}), ("popped", {"attempt": 1})]
    queue = [
        TraceEvent(trace_id=trace_id, pod_uid=f"uid-{pod_name}", namespace="default", name=pod_name,
                   service="queue", instance="queue", phase=phase, ts=ts + i * 0.001, details=details)
        for i, (phase, details) in enumerate(steps)
    ]  # fmt: skip
    return [*tracer.out, *queue]  # out of time order, as services flush independently


def test_pod_page_of_an_unschedulable_pod_names_every_node_and_the_upstream_reason() -> None:
    taint = {"key": "dedicated", "value": "batch", "effect": "NoSchedule"}
    snapshot = make_snapshot([node("a", "z1"), node("b", "z2"), node("c", "z1", taints=[taint])])
    events = traced(snapshot, "huge", cpu="64", trace_id="t1", ts=100.0)
    queued = entry("huge", "unschedulable", plugins=["NodeResourcesFit", "TaintToleration"], attempts=1)
    page = views.pod_view("default", "huge", events, queued)
    assert page["key"] == "default/huge" and page["uid"] == "uid-huge" and page["node"] == ""
    (attempt,) = page["attempts"]
    assert [s["phase"] for s in attempt["steps"]] == [
        "queued",
        "popped",
        "snapshot",
        "filter",
        "unschedulable",
    ]
    assert attempt["steps"][0]["offset"] == 0.0
    last = page["last"]
    assert last["rejected"] == [
        {"node": "a", "plugin": "NodeResourcesFit", "reason": "Insufficient cpu"},
        {"node": "b", "plugin": "NodeResourcesFit", "reason": "Insufficient cpu"},
        {"node": "c", "plugin": "TaintToleration", "reason": "node(s) had untolerated taint(s)"},
    ]
    assert last["unnamed"] == 0 and last["scores"] == []
    assert last["message"].startswith(
        "0/3 nodes are available: 1 node(s) had untolerated taint(s), 2 Insufficient cpu."
    )
    # no message from the queue: the reason is the scheduler's FailedScheduling message
    assert page["reason"] == last["message"]
    assert "rejections" not in attempt["steps"][3]["details"]  # the table has them, not the timeline


def test_pod_page_of_a_scheduled_pod_has_per_plugin_scores() -> None:
    snapshot = make_snapshot([node(f"n{i}", "z", cpu=str(2 + i)) for i in range(4)])
    events = traced(snapshot, "web", cpu="1", trace_id="t2", ts=50.0)
    page = views.pod_view("default", "web", events, None, placed_on="n3")
    last = page["last"]
    assert last["node"] == "n3" and page["node"] == "n3" and page["queue"] is None
    assert last["scores"][0]["node"] == "n3" and len(last["scores"]) == 4
    assert "NodeResourcesFit" in last["plugins"] and last["rejected"] == []
    for row in last["scores"]:
        assert sum(row["scores"].values()) == row["total"]


def test_pod_page_takes_the_last_attempt_and_the_queues_message() -> None:
    snapshot = make_snapshot([node("a", "z")])
    first = traced(snapshot, "p", cpu="64", trace_id="t-old", ts=10.0)
    second = traced(make_snapshot([node("a", "z", cpu="128")]), "p", cpu="64", trace_id="t-new", ts=20.0)
    page = views.pod_view("default", "p", second + first, entry("p", "backoff", message="bind failed: 409"))
    assert [a["trace_id"] for a in page["attempts"]] == ["t-old", "t-new"]
    assert page["last"]["rejected"] == [] and page["last"]["message"] == ""  # the newer attempt fitted
    assert page["reason"] == "bind failed: 409"


def test_rejected_nodes_count_those_the_trace_did_not_name() -> None:
    groups = [
        {"plugin": "NodeAffinity", "reason": "no match", "count": 25, "nodes": ["n2", "n1"]},
        {"plugin": "PreFilter", "reason": "", "count": 3, "nodes": []},
    ]
    rows, unnamed = views.rejected_nodes(groups)
    assert [r["node"] for r in rows] == ["n1", "n2"] and unnamed == 26


def test_pod_without_events_is_shown_from_the_queue() -> None:
    page = views.pod_view("default", "quiet", [], entry("quiet", "gated", gating_plugin="SchedulingGates"))
    assert page["attempts"] == [] and page["last"] is None and page["reason"] == "gated by SchedulingGates"


def test_search_puts_exact_names_first() -> None:
    found = views.search("web", ["default/web-2", "default/api"], {"team/web": None}, ["default/web-1"])
    assert found == ["team/web", "default/web-1", "default/web-2"]
    assert views.search("WEB-1", ["default/web-1"]) == ["default/web-1"]
    assert views.search("x", [f"ns/x{i}" for i in range(100)], limit=5) == [
        f"ns/x{i}" for i in (0, 1, 10, 11, 12)
    ]


def test_unexpected_detail_shapes_are_skipped() -> None:
    """Trace details written by another version: what does not fit is left out, the page still renders."""
    rows, unnamed = views.rejected_nodes(
        [["NodeAffinity", 3], {"plugin": "P", "reason": "r", "count": 1, "nodes": ["n"]}]
    )
    assert rows == [{"node": "n", "plugin": "P", "reason": "r"}] and unnamed == 0
    scored = [["n", 3], {"node": "n", "total": 3, "scores": {"A": 3}}]
    event = TraceEvent(
        trace_id="t", pod_uid="u", namespace="default", name="p", service="scheduler", instance="s",
        phase="score", ts=1.0, details={"node": "n", "plugin_scores": scored},
    )  # fmt: skip
    last = views.pod_view("default", "p", [event])["last"]
    assert last["scores"] == [{"node": "n", "total": 3, "scores": {"A": 3}}] and last["plugins"] == ["A"]
    # the table form (score_plugins + score_rows): a row of another width is left out
    table = {"node": "n", "score_plugins": ["A", "B"], "score_rows": [["n", 5, [2, 3]], ["m", 1, [1]], "x"]}
    event = msgspec.structs.replace(event, details=table)
    last = views.pod_view("default", "p", [event])["last"]
    assert last["scores"] == [{"node": "n", "total": 5, "scores": {"A": 2, "B": 3}}]
    assert last["plugins"] == ["A", "B"]
