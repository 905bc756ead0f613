"""Queueing hints, registered events and construction, ported from upstream ``plugin_test.go``.

The stored upstream table predates 1.36's toleration rule (``UpdatePodToleration`` with a
``nodeTaintsPolicy: Honor`` constraint); those cases are written from the 1.36.2 source. Upstream's
pods share an empty UID; here every pod has its own, as real pods do.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from ksched.api.core import Node, Pod
from ksched.framework.events import ActionType, EventResource, QueueingHint
from ksched.framework.snapshot import Snapshot
from ksched.plugins.args.types import PodTopologySpreadArgs
from ksched.plugins.podtopologyspread import NAME, PodTopologySpread, new
from ksched.plugins.podtopologyspread.common import SYSTEM_DEFAULT_CONSTRAINTS
from ksched.plugins.podtopologyspread.testing import constraint, exists, make_plugin, node, pod, spread

DNS = "DoNotSchedule"
F = exists("foo")
B = exists("bar")
Q, SKIP = QueueingHint.QUEUE, QueueingHint.QUEUE_SKIP
ZONE_F = spread(1, "zone", DNS, F)
NODE_F = spread(1, "node", DNS, F)


@dataclass
class NodeHintCase:
    name: str
    pod: Pod
    old: Node | None
    new: Node | None
    want: QueueingHint


P_ZONE = pod(constraints=[ZONE_F])
P_ZONE_NODE = pod(constraints=[ZONE_F, NODE_F])

NODE_HINT_CASES = [
    NodeHintCase(
        "node updates label which matches topologyKey",
        P_ZONE,
        node("node-a", {"zone": "zone1"}),
        node("node-a", {"zone": "zone2"}),
        Q,
    ),
    NodeHintCase(
        "node that doesn't match topologySpreadConstraints updates non-related label",
        P_ZONE,
        node("node-a", {"foo": "bar1"}),
        node("node-a", {"foo": "bar2"}),
        SKIP,
    ),
    # The stored upstream table expects Queue (older rule: any label change); 1.36.2 queues only when a
    # topology key's value changes (checkTopologyKeyLabelsChanged) or the taints change.
    NodeHintCase(
        "node that match topologySpreadConstraints adds non-related label",
        P_ZONE_NODE,
        node("node-a", {"zone": "zone1", "node": "node1", "foo": "bar"}),
        node("node-a", {"zone": "zone1", "node": "node1"}),
        SKIP,
    ),
    NodeHintCase("create node with non-related labels", P_ZONE, None, node("node-a", {"foo": "bar"}), SKIP),
    NodeHintCase("create node with related labels", P_ZONE, None, node("node-a", {"zone": "zone1"}), Q),
    NodeHintCase("delete node with non-related labels", P_ZONE, node("node-a", {"foo": "bar"}), None, SKIP),
    NodeHintCase("delete node with related labels", P_ZONE, node("node-a", {"zone": "zone1"}), None, Q),
    NodeHintCase(
        "add node with related labels that only match one of topologySpreadConstraints",
        P_ZONE_NODE,
        None,
        node("node-a", {"zone": "zone1"}),
        SKIP,
    ),
    NodeHintCase(
        "add node with related labels that match all topologySpreadConstraints",
        P_ZONE_NODE,
        None,
        node("node-a", {"zone": "zone1", "node": "node1"}),
        Q,
    ),
    NodeHintCase(
        "update node with related labels that only match one of topologySpreadConstraints",
        P_ZONE_NODE,
        node("node-a", {"zone": "zone1"}),
        node("node-a", {"zone": "zone1"}),
        SKIP,
    ),
    NodeHintCase(
        "update node with related labels that match all topologySpreadConstraints",
        P_ZONE_NODE,
        node("node-a", {"zone": "zone1", "node": "node1"}),
        node("node-a", {"zone": "zone1", "node": "node2"}),
        Q,
    ),
    # 1.36.2: a matching node whose taints change may now admit the pod.
    NodeHintCase(
        "update node taints of a node that matches all topologySpreadConstraints",
        P_ZONE,
        node("node-a", {"zone": "zone1"}),
        node("node-a", {"zone": "zone1"}, tainted=True),
        Q,
    ),
]


@pytest.mark.parametrize("case", NODE_HINT_CASES, ids=lambda c: c.name)
def test_is_schedulable_after_node_change(case: NodeHintCase) -> None:
    plugin = make_plugin(Snapshot())
    assert plugin.hint_node_change(case.pod, case.old, case.new) == case.want


@dataclass
class PodHintCase:
    name: str
    pod: Pod
    old: Pod | None
    new: Pod | None
    want: QueueingHint


def bound(**labels: str) -> Pod:
    return pod("other", labels=labels, node="fake-node")


def unbound(**labels: str) -> Pod:
    return pod("other", labels=labels)


P_FOO = pod(labels={"foo": ""}, constraints=[ZONE_F])
P_FOO_BAR = pod(labels={"foo": ""}, constraints=[ZONE_F, spread(1, "node", DNS, B)])
P_HONOR = pod(
    labels={"foo": ""}, uid="spread-pod", constraints=[spread(1, "zone", DNS, F, None, None, "Honor")]
)

POD_HINT_CASES = [
    PodHintCase(
        "add pod with labels match topologySpreadConstraints selector", P_FOO, None, bound(foo=""), Q
    ),
    PodHintCase("add un-scheduled pod", P_FOO, None, unbound(foo=""), SKIP),
    PodHintCase("update un-scheduled pod", P_FOO, unbound(bar=""), unbound(foo=""), SKIP),
    PodHintCase("delete un-scheduled pod", P_FOO, unbound(foo=""), None, SKIP),
    PodHintCase(
        "add pod with different namespace",
        P_FOO,
        None,
        pod("other", "fake-namespace", labels={"foo": ""}, node="fake-node"),
        SKIP,
    ),
    PodHintCase(
        "add pod with labels don't match topologySpreadConstraints selector", P_FOO, None, bound(bar=""), SKIP
    ),
    PodHintCase(
        "delete pod with labels that match topologySpreadConstraints selector", P_FOO, bound(foo=""), None, Q
    ),
    PodHintCase(
        "delete pod with labels that don't match topologySpreadConstraints selector",
        P_FOO,
        bound(bar=""),
        None,
        SKIP,
    ),
    PodHintCase(
        "update pod's non-related label", P_FOO, bound(foo="", bar="bar1"), bound(foo="", bar="bar2"), SKIP
    ),
    PodHintCase(
        "add pod's label that matches topologySpreadConstraints selector", P_FOO, bound(), bound(foo=""), Q
    ),
    PodHintCase(
        "delete pod label that matches topologySpreadConstraints selector", P_FOO, bound(foo=""), bound(), Q
    ),
    PodHintCase(
        "change pod's label that matches topologySpreadConstraints selector",
        P_FOO,
        bound(foo="foo1"),
        bound(foo="foo2"),
        SKIP,
    ),
    PodHintCase(
        "change pod's label that doesn't match topologySpreadConstraints selector",
        P_FOO,
        bound(foo="", bar="bar1"),
        bound(foo="", bar="bar2"),
        SKIP,
    ),
    PodHintCase(
        "add pod's label that matches topologySpreadConstraints selector with multi "
        "topologySpreadConstraints",
        P_FOO_BAR,
        bound(foo=""),
        bound(foo="", bar="bar2"),
        Q,
    ),
    PodHintCase(
        "change pod's label that doesn't match topologySpreadConstraints selector with multi "
        "topologySpreadConstraints",
        P_FOO_BAR,
        bound(foo=""),
        bound(foo="", baz=""),
        SKIP,
    ),
    PodHintCase(
        "change pod's label that match topologySpreadConstraints selector with multi "
        "topologySpreadConstraints",
        P_FOO_BAR,
        bound(foo="", bar=""),
        bound(foo="", bar="bar2"),
        SKIP,
    ),
    # 1.36.2: the rejected pod itself got a toleration and one of its constraints honors taints.
    PodHintCase(
        "the pod gets a new toleration and a constraint has NodeTaintsPolicy Honor",
        P_HONOR,
        pod(
            labels={"foo": ""}, uid="spread-pod", constraints=[spread(1, "zone", DNS, F, None, None, "Honor")]
        ),
        pod(
            labels={"foo": ""},
            uid="spread-pod",
            tolerations=["node.kubernetes.io/unschedulable"],
            constraints=[spread(1, "zone", DNS, F, None, None, "Honor")],
        ),
        Q,
    ),
    PodHintCase(
        "the pod gets a new toleration but no constraint honors taints",
        P_FOO,
        pod(labels={"foo": ""}, uid=P_FOO.metadata.uid, constraints=[ZONE_F]),
        pod(labels={"foo": ""}, uid=P_FOO.metadata.uid, tolerations=["k"], constraints=[ZONE_F]),
        SKIP,
    ),
]


@pytest.mark.parametrize("case", POD_HINT_CASES, ids=lambda c: c.name)
def test_is_schedulable_after_pod_change(case: PodHintCase) -> None:
    plugin = make_plugin(Snapshot())
    assert plugin.hint_pod_change(case.pod, case.old, case.new) == case.want


def test_hints_raise_on_wrong_object_types() -> None:
    """util.As errors: the queue treats a raising hint as Queue."""
    plugin = make_plugin(Snapshot())
    with pytest.raises(TypeError):
        plugin.hint_pod_change(P_FOO, None, node("n"))
    with pytest.raises(TypeError):
        plugin.hint_node_change(P_FOO, pod(), None)


def test_events_to_register() -> None:
    events = make_plugin(Snapshot()).events_to_register()
    got = {(e.event.resource, e.event.action) for e in events}
    pod_actions = (
        ActionType.ADD | ActionType.UPDATE_POD_LABEL | ActionType.UPDATE_POD_TOLERATION | ActionType.DELETE
    )
    node_actions = (
        ActionType.ADD | ActionType.DELETE | ActionType.UPDATE_NODE_LABEL | ActionType.UPDATE_NODE_TAINT
    )
    assert got == {(EventResource.POD, pod_actions), (EventResource.NODE, node_actions)}
    assert all(e.hint is not None for e in events)


def test_new_with_default_args_uses_system_defaults() -> None:
    from ksched.framework.testing import FakeHandle

    plugin = new(None, FakeHandle(Snapshot()))
    assert plugin.name == NAME == "PodTopologySpread"
    assert plugin.system_defaulted
    assert plugin.default_constraints == SYSTEM_DEFAULT_CONSTRAINTS
    assert [(c.topology_key, c.max_skew) for c in plugin.default_constraints] == [
        ("kubernetes.io/hostname", 3),
        ("topology.kubernetes.io/zone", 5),
    ]


def test_new_rejects_invalid_args() -> None:
    from ksched.framework.testing import FakeHandle

    args = PodTopologySpreadArgs(
        defaulting_type="System",
        default_constraints=[constraint(max_skew=1, key="zone", when="DoNotSchedule")],
    )
    with pytest.raises(ValueError, match=r'defaultingType: Invalid value: "System"'):
        new(args, FakeHandle(Snapshot()))


def test_list_defaulting_without_constraints_has_no_defaults() -> None:
    plugin = make_plugin(Snapshot())
    assert not plugin.system_defaulted and plugin.default_constraints == ()
    assert plugin.constraints(pod(labels={"foo": ""}), DNS) == []


def test_indexes_do_not_keep_snapshots_alive() -> None:
    import gc
    import weakref

    plugin = make_plugin(Snapshot())
    other = Snapshot.build([node("n", {"zone": "z"})], [pod("e", labels={"foo": ""}, node="n")])
    plugin.index_for(other)
    ref = weakref.ref(other)
    del other
    gc.collect()
    assert ref() is None


def test_implements_the_extension_point_protocols() -> None:
    from ksched.framework import interfaces as ifc

    plugin = make_plugin(Snapshot())
    for proto in (
        ifc.PreFilterPlugin,
        ifc.PreFilterExtensions,
        ifc.BatchFilterPlugin,
        ifc.PreScorePlugin,
        ifc.BatchScorePlugin,
        ifc.ScoreExtensions,
        ifc.EnqueueExtensions,
    ):
        assert isinstance(plugin, proto), proto.__name__


def test_registry_builds_the_plugin() -> None:
    from ksched.framework.testing import FakeHandle
    from ksched.plugins.registry import Registry

    reg = Registry()["PodTopologySpread"]
    assert reg.args_type is PodTopologySpreadArgs
    plugin = reg.factory(reg.default_args(), FakeHandle(Snapshot()))
    assert isinstance(plugin, PodTopologySpread) and plugin.system_defaulted
