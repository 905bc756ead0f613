"""NodeDeclaredFeatures table tests ported from upstream ``nodedeclaredfeatures_test.go`` (mock features
become :class:`Feature` values), plus the features of the 1.36 registry inferred from real pod specs."""

from __future__ import annotations

import pytest

from ksched.api.core import Node, Pod, PodSpec
from ksched.framework.changes import node_changes
from ksched.framework.cycle_state import CycleState
from ksched.framework.events import ActionType, EventResource, QueueingHint
from ksched.framework.nodeinfo import NodeInfo
from ksched.framework.podinfo import PodInfo
from ksched.framework.status import Code, Status
from ksched.framework.testing import make_node, make_pod
from ksched.plugins.nodedeclaredfeatures import (
    DEFAULT_FEATURES,
    ERR_REASON,
    PRE_FILTER_STATE_KEY,
    Feature,
    NodeDeclaredFeatures,
    Version,
    _PreFilterState,
    new,
)


def feature(name: str, needed: bool, max_version: Version | None = None) -> Feature:
    return Feature(name, lambda spec: needed, max_version)


def node(name: str = "node-1", features: list[str] | None = None) -> Node:
    return make_node(name, status={"declaredFeatures": features} if features is not None else None)


# name, features, scheduler version, expected PreFilter status, expected required features
PRE_FILTER_CASES: list[tuple[str, list[Feature], Version, Status | None, frozenset[str] | None]] = [
    (
        "Pod with feature requirements",
        [feature("TestFeature1", True), feature("TestFeature2", False)],
        (1, 35, 0),
        None,
        frozenset({"TestFeature1"}),
    ),
    (
        "Pod with multiple feature requirements",
        [feature("TestFeature1", True, (1, 38, 0)), feature("TestFeature2", True, (1, 38, 0))],
        (1, 35, 0),
        None,
        frozenset({"TestFeature1", "TestFeature2"}),
    ),
    (
        "Pod with no requirements",
        [feature("TestFeature1", False), feature("TestFeature2", False)],
        (1, 35, 0),
        Status.skip(),
        None,
    ),
    (
        "Feature not required, version > MaxVersion",
        [feature("TestFeature1", True, (1, 33, 0)), feature("TestFeature2", False)],
        (1, 34, 0),
        Status.skip(),
        None,
    ),
]


@pytest.mark.parametrize(("name", "features", "version", "want_status", "want_reqs"), PRE_FILTER_CASES)
def test_pre_filter(
    name: str,
    features: list[Feature],
    version: Version,
    want_status: Status | None,
    want_reqs: frozenset[str] | None,
) -> None:
    plugin = NodeDeclaredFeatures(features, version)
    state = CycleState()
    result, status = plugin.pre_filter(state, PodInfo(make_pod("test-pod")), [])
    assert result is None
    assert status == want_status
    found = state.get(PRE_FILTER_STATE_KEY, _PreFilterState)
    if want_reqs is None:
        assert found is None
    else:
        assert found is not None and found.required == want_reqs


UNRESOLVABLE = Status.unresolvable(ERR_REASON)
# name, node, required features written by PreFilter (None: nothing written), expected status
FILTER_CASES: list[tuple[str, Node, list[str] | None, Status | None]] = [
    ("Node matches requirements", node(features=["FeatureA", "FeatureB"]), ["FeatureA"], None),
    ("Node does not match requirements", node(features=["FeatureB"]), ["FeatureA"], UNRESOLVABLE),
    (
        "Node with multiple features, pod requires subset",
        node("node-multi", ["FeatureA", "FeatureB", "FeatureC"]),
        ["FeatureA", "FeatureC"],
        None,
    ),
    ("Node has no declared features", node(), ["FeatureA"], UNRESOLVABLE),
    (
        "Node with some but not all required features",
        node(features=["FeatureA"]),
        ["FeatureA", "FeatureB"],
        UNRESOLVABLE,
    ),
]


@pytest.mark.parametrize(("name", "n", "reqs", "want"), FILTER_CASES)
def test_filter(name: str, n: Node, reqs: list[str] | None, want: Status | None) -> None:
    state = CycleState()
    if reqs is not None:
        state.write(PRE_FILTER_STATE_KEY, _PreFilterState(frozenset(reqs)))
    status = NodeDeclaredFeatures().filter(state, PodInfo(make_pod("test-pod")), NodeInfo(n))
    if want is None:
        assert status is None or status.code == Code.SUCCESS
    else:
        assert status is not None
        assert (status.code, status.reasons) == (want.code, want.reasons)


def test_filter_without_pre_filter_state_is_an_error() -> None:
    status = NodeDeclaredFeatures().filter(CycleState(), PodInfo(make_pod("test-pod")), NodeInfo(node()))
    assert status is not None and status.code == Code.ERROR
    assert status.message == 'error reading "PreFilterNodeDeclaredFeatures" from cycle-state: not found'


@pytest.mark.parametrize(
    ("name", "old", "new_node", "want"),
    [
        ("Node Add with feature", None, node(features=["FeatureA"]), QueueingHint.QUEUE),
        ("Node Update (Features Added)", node(), node(features=["FeatureA"]), QueueingHint.QUEUE),
        (
            "Node Update (Features Unchanged)",
            node(features=["FeatureA"]),
            node(features=["FeatureA"]),
            QueueingHint.QUEUE_SKIP,
        ),
    ],
)
def test_hint_node_changed(name: str, old: Node | None, new_node: Node, want: QueueingHint) -> None:
    assert NodeDeclaredFeatures([]).hint_node_changed(make_pod("test-pod"), old, new_node) == want


def _sequenced(*answers: bool) -> Feature:
    """A feature whose inference answers ``answers`` in turn (upstream's mock with a call counter)."""
    calls = iter(answers)
    return Feature("TestFeature", lambda spec: next(calls))


TARGET = make_pod("test-pod", uid="123")
LABELLED = make_pod("test-pod", uid="123", labels={"foo": "bar"})


@pytest.mark.parametrize(
    ("name", "old", "new_pod", "feat", "want"),
    [
        ("Pod Update adds requirement", TARGET, LABELLED, _sequenced(False, True), QueueingHint.QUEUE),
        ("Pod Update removes requirement", LABELLED, TARGET, _sequenced(True, False), QueueingHint.QUEUE),
        (
            "Pod Update with no change in requirements",
            TARGET,
            TARGET,
            feature("TestFeature", False),
            QueueingHint.QUEUE_SKIP,
        ),
    ],
)
def test_hint_target_pod_updated(
    name: str, old: Pod, new_pod: Pod, feat: Feature, want: QueueingHint
) -> None:
    plugin = NodeDeclaredFeatures([feat], (1, 35, 0))
    assert plugin.hint_pod_updated(TARGET, old, new_pod) == want


def test_hint_without_a_version_is_an_error() -> None:
    """Upstream's "Infer returns error": the queue requeues the pod when a hint raises."""
    plugin = NodeDeclaredFeatures([feature("TestFeature", True)], None)
    with pytest.raises(ValueError, match="target version cannot be nil"):
        plugin.hint_pod_updated(TARGET, TARGET, LABELLED)


def test_hint_for_another_pod_skips() -> None:
    other = make_pod("other", uid="456")
    assert NodeDeclaredFeatures().hint_pod_updated(TARGET, other, other) == QueueingHint.QUEUE_SKIP


def test_events_to_register() -> None:
    events = NodeDeclaredFeatures().events_to_register()
    assert [(e.event.resource, e.event.action) for e in events] == [
        (EventResource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_DECLARED_FEATURE),
        (EventResource.POD, ActionType.UPDATE),
    ]


def _spec(**fields: object) -> PodSpec:
    return make_pod("p", spec=fields).spec


@pytest.mark.parametrize(
    ("spec", "want"),
    [
        (_spec(), frozenset()),
        (
            _spec(containers=[{"name": "c", "restartPolicyRules": [{"action": "RestartAllContainers"}]}]),
            frozenset({"RestartAllContainersOnContainerExits"}),
        ),
        (
            _spec(
                initContainers=[
                    {
                        "name": "i",
                        "restartPolicyRules": [
                            {
                                "action": "RestartAllContainers",
                                "exitCodes": {"operator": "In", "values": [42]},
                            }
                        ],
                    }
                ]
            ),
            frozenset({"RestartAllContainersOnContainerExits"}),
        ),
        (
            _spec(containers=[{"name": "c", "restartPolicyRules": [{"action": "Restart"}]}]),
            frozenset(),
        ),
        (_spec(hostNetwork=True, hostUsers=False), frozenset({"UserNamespacesHostNetworkSupport"})),
        (_spec(hostNetwork=True), frozenset()),
        (_spec(hostNetwork=False, hostUsers=False), frozenset()),
    ],
)
def test_registry_infers_from_the_pod_spec(spec: PodSpec, want: frozenset[str]) -> None:
    assert NodeDeclaredFeatures(DEFAULT_FEATURES).required_features(spec) == want


def test_a_pod_with_requirements_fits_only_nodes_declaring_them() -> None:
    plugin = new(None, None)  # type: ignore[arg-type]
    pod = PodInfo(make_pod("p", spec={"hostNetwork": True, "hostUsers": False}))
    state = CycleState()
    assert plugin.pre_filter(state, pod, []) == (None, None)
    declaring = NodeInfo(node("a", ["UserNamespacesHostNetworkSupport", "SomethingNewer"]))
    assert plugin.filter(state, pod, declaring) is None
    status = plugin.filter(state, pod, NodeInfo(node("b", ["RestartAllContainersOnContainerExits"])))
    assert status is not None and status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE


def test_a_change_of_declared_features_is_its_own_node_event() -> None:
    events = node_changes(node(features=["FeatureA"]), node(features=[]))
    assert [e.action for e in events] == [ActionType.UPDATE_NODE_DECLARED_FEATURE]
    assert node_changes(node(features=["FeatureA"]), node(features=["FeatureA"])) == []
