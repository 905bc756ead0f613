"""End to end: every service publishes a pod's lifecycle on the bus and ``ksched trace`` (a separate
process) prints it: a scheduled pod's trace goes queued -> popped -> assumed -> bound with
durations; an unschedulable pod's shows the nodes each plugin rejected and the FailedScheduling
message."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from kubernetes_asyncio.client import ApiClient
from nats.aio.msg import Msg

from ksched.bus.codec import decode
from ksched.bus.connect import TRACE_ID_HEADER, Bus, connect
from ksched.bus.messages import AssumeRequest, DoneRequest
from ksched.bus.subjects import Subjects
from ksched.launcher.stack import Stack
from ksched.tracing.reader import pod_history
from tests.e2e.testing import (
    api_for,
    create_nodes,
    create_pods,
    eventually,
    ksched_trace,
    node,
    pod,
    pod_nodes,
    stack_fixture,
)

pytestmark = pytest.mark.e2e

TAINT = {"key": "dedicated", "value": "batch", "effect": "NoSchedule"}


stack = stack_fixture("trace-stack", pod_start_delay=0.1, time_scale=0.01)


@pytest.fixture(scope="module")
async def bus(stack: Stack) -> AsyncIterator[Bus]:
    b = await connect(stack.nats.url, name="trace-test", subjects=Subjects(stack.options.prefix))
    try:
        yield b
    finally:
        await b.close()


@pytest.fixture(scope="module")
async def hop_headers(bus: Bus) -> dict[tuple[str, str], list[str]]:
    """(hop, pod name) -> the Ksched-Trace-Id headers of the assume and done requests seen."""
    seen: dict[tuple[str, str], list[str]] = {}

    async def record(msg: Msg) -> None:
        request = decode(msg.data, AssumeRequest | DoneRequest)
        if isinstance(request, AssumeRequest):
            hop, name = "assume", request.placement.name
        else:
            assert isinstance(request, DoneRequest)
            hop, name = "done", request.name
        seen.setdefault((hop, name), []).append((msg.headers or {}).get(TRACE_ID_HEADER, ""))

    for subject in (bus.subjects.assume, bus.subjects.queue_done):
        await bus.nc.subscribe(subject, cb=record)
    await bus.nc.flush()
    return seen


@pytest.fixture(scope="module")
async def api(stack: Stack, hop_headers: dict[tuple[str, str], list[str]]) -> AsyncIterator[ApiClient]:
    a = await api_for(stack.kubeconfig)
    await create_nodes(
        a, [node("plain", cpu="2"), node("plain-small", cpu="1"), node("tainted", cpu="2", taints=[TAINT])]
    )
    await create_pods(a, [pod("traced-ok", cpu="100m"), pod("traced-big", cpu="3")])
    try:
        yield a
    finally:
        await a.close()


async def phases_of(bus: Bus, name: str) -> list[str]:
    """The pod's phases in time order (services flush on their own clocks: stream order differs)."""
    history = sorted(await pod_history(bus, "default", name), key=lambda t: t.event.ts)
    return [t.event.phase for t in history]


async def test_scheduled_pod_trace_has_every_phase_with_durations(
    stack: Stack, api: ApiClient, bus: Bus, hop_headers: dict[tuple[str, str], list[str]]
) -> None:
    async def bound() -> bool:
        return (await pod_nodes(api)).get("traced-ok") == "plain"

    assert await eventually(bound, timeout=30)

    async def traced() -> list[str] | None:
        phases = await phases_of(bus, "traced-ok")
        return phases if "bound" in phases else None

    await eventually(traced, timeout=15)

    code, out, err = await ksched_trace(stack, "default/traced-ok", "--json")
    assert code == 0, err
    events: list[dict[str, Any]] = [json.loads(line) for line in out.splitlines()]
    trace_ids = {e["trace_id"] for e in events}
    assert len(trace_ids) == 1, "one attempt, one trace id across services"
    assert hop_headers[("assume", "traced-ok")] == list(trace_ids)  # and in the hops' NATS headers
    assert ("done", "traced-ok") not in hop_headers  # the queue ends the attempt on the informer's feed
    phases = [e["phase"] for e in events]
    for earlier, later in zip(
        ["queued", "popped", "snapshot", "filter", "score", "assumed", "prebind"],
        ["popped", "snapshot", "filter", "score", "assumed", "prebind", "bound"],
        strict=True,
    ):
        assert phases.index(earlier) < phases.index(later), phases
    by_phase = {e["phase"]: e for e in events}
    assert {by_phase[p]["service"] for p in ("queued", "popped")} == {"queue"}
    assert {by_phase[p]["service"] for p in ("filter", "score", "assumed")} == {"scheduler"}
    assert {by_phase[p]["service"] for p in ("prebind", "bound")} == {"binder"}
    for measured in ("filter", "assumed", "prebind", "bound"):
        assert by_phase[measured]["duration"] is not None and by_phase[measured]["duration"] >= 0
    assert by_phase["assumed"]["details"]["node"] == by_phase["bound"]["details"]["node"] == "plain"
    top = by_phase["score"]["details"]["top"]
    assert [n for n, _ in top] == ["plain", "plain-small"]  # the tainted node was filtered out
    assert by_phase["queued"]["details"]["queue"] == "active"

    code, out, err = await ksched_trace(stack, "default/traced-ok")
    assert code == 0, err
    steps = [line.split() for line in out.splitlines() if line.startswith("  ") and "ms" in line]
    seen = [s[3] for s in steps]  # offset value, unit, service, phase, took...
    assert [p for p in seen if p in ("queued", "popped", "assumed", "bound")] == [
        "queued",
        "popped",
        "assumed",
        "bound",
    ]
    for step in steps:
        if step[3] in ("queued", "popped", "assumed", "bound"):
            took = step[4].strip("(")
            assert float(took) >= 0 and step[5].rstrip(")") in ("ms", "s"), step
    assert "bound on plain after" in out


async def test_unschedulable_pod_trace_shows_rejections_per_plugin(
    stack: Stack, api: ApiClient, bus: Bus
) -> None:
    async def traced() -> list[str] | None:
        phases = await phases_of(bus, "traced-big")
        return phases if "requeued" in phases else None

    phases = await eventually(traced, timeout=30)
    assert phases.index("filter") < phases.index("unschedulable") < phases.index("requeued")

    code, out, err = await ksched_trace(stack, "default/traced-big")
    assert code == 0, err
    assert "rejected by: NodeResourcesFit 2, TaintToleration 1" in out
    assert "message: 0/3 nodes are available: 1 node(s) had untolerated taint(s), 2 Insufficient cpu." in out
    requeued = next(line for line in out.splitlines() if line.startswith("  ") and " requeued " in line)
    assert (
        "queue=unschedulable event=ScheduleAttemptFailure plugins=NodeResourcesFit,TaintToleration"
        in requeued
    )
    assert "requeued after" in out
