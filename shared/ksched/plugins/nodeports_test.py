"""NodePorts table tests ported from upstream ``node_ports_test.go`` (1.36.2 names the pod-deleted hint
``isSchedulableAfterPodDeleted``; the stored test calls it ``...AssignedPodDeleted``)."""

from __future__ import annotations

from typing import Any

import pytest

from ksched.api.core import Pod
from ksched.framework.cycle_state import CycleState
from ksched.framework.events import ActionType, EventResource, QueueingHint
from ksched.framework.nodeinfo import NodeInfo
from ksched.framework.podinfo import PodInfo
from ksched.framework.status import Code, Status
from ksched.framework.testing import container, make_node, make_pod
from ksched.plugins.nodeports import ERR_REASON, NodePorts, fits, new


def new_pod(host: str, *port_infos: str) -> Pod:
    """Upstream ``newPod``: each info is ``PROTOCOL/hostIP/hostPort``."""
    ports = []
    for info in port_infos:
        proto, ip, port = info.split("/")
        ports.append(
            {"containerPort": 0, "hostPort": int(port), "protocol": proto, **({"hostIP": ip} if ip else {})}
        )
    return make_pod("p", node_name=host, containers=[{"name": "c", "ports": ports}])


def node_info_with(*pods: Pod) -> NodeInfo:
    ni = NodeInfo(make_node("node"))
    for p in pods:
        ni.add_pod(PodInfo(p))
    return ni


def init_container_pod(sidecar: bool) -> Pod:
    init = container("init", host_ports=[(8001, "TCP", "")], restart_policy="Always" if sidecar else None)
    return make_pod("p", init_containers=[init])


UNSCHEDULABLE = Status.unschedulable(ERR_REASON)
CASES: list[tuple[str, Pod, NodeInfo, Status | None, Status | None]] = [
    ("skip filter", make_pod("p"), NodeInfo(make_node("node")), Status.skip(), None),
    (
        "other port",
        new_pod("m1", "UDP/127.0.0.1/8080"),
        node_info_with(new_pod("m1", "UDP/127.0.0.1/9090")),
        None,
        None,
    ),
    (
        "same udp port",
        new_pod("m1", "UDP/127.0.0.1/8080"),
        node_info_with(new_pod("m1", "UDP/127.0.0.1/8080")),
        None,
        UNSCHEDULABLE,
    ),
    (
        "same tcp port",
        new_pod("m1", "TCP/127.0.0.1/8080"),
        node_info_with(new_pod("m1", "TCP/127.0.0.1/8080")),
        None,
        UNSCHEDULABLE,
    ),
    (
        "different host ip",
        new_pod("m1", "TCP/127.0.0.1/8080"),
        node_info_with(new_pod("m1", "TCP/127.0.0.2/8080")),
        None,
        None,
    ),
    (
        "different protocol",
        new_pod("m1", "UDP/127.0.0.1/8080"),
        node_info_with(new_pod("m1", "TCP/127.0.0.1/8080")),
        None,
        None,
    ),
    (
        "second udp port conflict",
        new_pod("m1", "UDP/127.0.0.1/8000", "UDP/127.0.0.1/8080"),
        node_info_with(new_pod("m1", "UDP/127.0.0.1/8080")),
        None,
        UNSCHEDULABLE,
    ),
    (
        "first tcp port conflict",
        new_pod("m1", "TCP/127.0.0.1/8001", "UDP/127.0.0.1/8080"),
        node_info_with(new_pod("m1", "TCP/127.0.0.1/8001", "UDP/127.0.0.1/8081")),
        None,
        UNSCHEDULABLE,
    ),
    (
        "first tcp port conflict due to 0.0.0.0 hostIP",
        new_pod("m1", "TCP/0.0.0.0/8001"),
        node_info_with(new_pod("m1", "TCP/127.0.0.1/8001")),
        None,
        UNSCHEDULABLE,
    ),
    (
        "TCP hostPort conflict due to 0.0.0.0 hostIP",
        new_pod("m1", "TCP/10.0.10.10/8001", "TCP/0.0.0.0/8001"),
        node_info_with(new_pod("m1", "TCP/127.0.0.1/8001")),
        None,
        UNSCHEDULABLE,
    ),
    (
        "second tcp port conflict to 0.0.0.0 hostIP",
        new_pod("m1", "TCP/127.0.0.1/8001"),
        node_info_with(new_pod("m1", "TCP/0.0.0.0/8001")),
        None,
        UNSCHEDULABLE,
    ),
    (
        "second different protocol",
        new_pod("m1", "UDP/127.0.0.1/8001"),
        node_info_with(new_pod("m1", "TCP/0.0.0.0/8001")),
        None,
        None,
    ),
    (
        "UDP hostPort conflict due to 0.0.0.0 hostIP",
        new_pod("m1", "UDP/127.0.0.1/8001"),
        node_info_with(new_pod("m1", "TCP/0.0.0.0/8001", "UDP/0.0.0.0/8001")),
        None,
        UNSCHEDULABLE,
    ),
    (
        "non-sidecar initContainer using hostPort",
        init_container_pod(sidecar=False),
        node_info_with(new_pod("m1", "TCP/0.0.0.0/8001")),
        Status.skip(),
        None,
    ),
    (
        "TCP hostPort conflict from sidecar initContainer",
        init_container_pod(sidecar=True),
        node_info_with(new_pod("m1", "TCP/0.0.0.0/8001")),
        None,
        UNSCHEDULABLE,
    ),
]


@pytest.mark.parametrize(
    ("pod", "node", "want_pre_filter", "want_filter"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_node_ports(
    pod: Pod, node: NodeInfo, want_pre_filter: Status | None, want_filter: Status | None
) -> None:
    pl = NodePorts()
    state = CycleState()
    pi = PodInfo(pod)
    result, status = pl.pre_filter(state, pi, [])
    assert result is None
    assert status == want_pre_filter
    if status is not None:
        return
    assert pl.filter(state, pi, node) == want_filter


def test_pre_filter_disabled() -> None:
    status = NodePorts().filter(CycleState(), PodInfo(make_pod("p")), NodeInfo(make_node("n")))
    assert status is not None and status.code == Code.ERROR
    assert status.message == 'reading "PreFilterNodePorts" from cycleState: not found'


POD_WITH_HOST_PORT = make_pod("target", containers=[container(host_ports=[(8080, "TCP", "")])])
HINT_CASES: list[tuple[str, Any, QueueingHint | None]] = [
    ("backoff-wrong-old-object", "not-a-pod", None),
    ("skip-queue-on-unscheduled", make_pod("d"), QueueingHint.QUEUE_SKIP),
    ("skip-queue-on-non-hostport", make_pod("d", node_name="fake-node"), QueueingHint.QUEUE_SKIP),
    (
        "skip-queue-on-unrelated-hostport",
        make_pod("d", node_name="fake-node", containers=[container(host_ports=[(8081, "TCP", "")])]),
        QueueingHint.QUEUE_SKIP,
    ),
    (
        "queue-on-released-hostport",
        make_pod("d", node_name="fake-node", containers=[container(host_ports=[(8080, "TCP", "")])]),
        QueueingHint.QUEUE,
    ),
    (
        # 1.36.2 also counts pods that were only nominated to a node
        "queue-on-released-hostport-of-nominated-pod",
        make_pod(
            "d", containers=[container(host_ports=[(8080, "TCP", "")])], status={"nominatedNodeName": "n"}
        ),
        QueueingHint.QUEUE,
    ),
]


@pytest.mark.parametrize(("old", "expected"), [c[1:] for c in HINT_CASES], ids=[c[0] for c in HINT_CASES])
def test_is_schedulable_after_pod_deleted(old: Any, expected: QueueingHint | None) -> None:
    if expected is None:
        with pytest.raises(TypeError):
            NodePorts.hint_pod_deleted(POD_WITH_HOST_PORT, old, None)
        return
    assert NodePorts.hint_pod_deleted(POD_WITH_HOST_PORT, old, None) == expected


FITS_CASES: list[tuple[str, Pod, NodeInfo, bool]] = [
    (
        "non-conflicting ports",
        new_pod("p", "TCP/127.0.0.1/80"),
        node_info_with(new_pod("p1", "TCP/127.0.0.1/9090")),
        True,
    ),
    (
        "multiple non-conflicting ports",
        new_pod("p", "TCP/127.0.0.1/80", "TCP/127.0.1.1/80", "TCP/127.0.1.1/90", "TCP/127.0.1.1/100"),
        node_info_with(new_pod("p1", "TCP/127.0.0.1/9090", "TCP/127.0.0.1/9191", "TCP/127.0.1.1/8080")),
        True,
    ),
    (
        "same ports on different protocols",
        new_pod("m1", "TCP/127.0.0.1/80"),
        node_info_with(new_pod("p1", "UDP/127.0.0.1/80")),
        True,
    ),
    (
        "conflicting ports",
        new_pod("m1", "TCP/127.0.0.1/80"),
        node_info_with(new_pod("p1", "TCP/127.0.0.1/80")),
        False,
    ),
    (
        "multiple ports, some conflicting",
        new_pod("p", "TCP/127.0.0.1/80", "TCP/127.0.1.1/80", "TCP/127.0.1.1/90", "TCP/127.0.1.1/100"),
        node_info_with(new_pod("p1", "TCP/127.0.0.1/9090", "TCP/127.0.1.1/90", "TCP/127.0.1.1/8080")),
        False,
    ),
]


@pytest.mark.parametrize(
    ("pod", "node", "expect"), [c[1:] for c in FITS_CASES], ids=[c[0] for c in FITS_CASES]
)
def test_fits(pod: Pod, node: NodeInfo, expect: bool) -> None:
    assert fits(PodInfo(pod), node) is expect


def test_events_to_register_with_queueing_hints() -> None:
    events = new(None, None).events_to_register()  # type: ignore[arg-type]
    got = {(e.event.resource, e.event.action, e.hint is not None) for e in events}
    assert got == {(EventResource.POD, ActionType.DELETE, True), (EventResource.NODE, ActionType.ADD, False)}
