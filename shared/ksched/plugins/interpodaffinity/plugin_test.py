# ruff: noqa: E501  (upstream case names are long; kept verbatim so they can be grepped)
"""Queueing hints and registration, ported from upstream ``plugin_test.go`` (1.36); args validation."""

from __future__ import annotations

import pytest

from ksched.api.core import Node, Pod
from ksched.framework.events import ActionType, EventResource, QueueingHint
from ksched.framework.testing import FakeHandle
from ksched.plugins.args.interpodaffinity_validation import validate_inter_pod_affinity_args
from ksched.plugins.args.types import InterPodAffinityArgs
from ksched.plugins.interpodaffinity import NAME, InterPodAffinity, new
from ksched.plugins.interpodaffinity.testing import affinity, node, pod, term, term_exists, term_in
from ksched.plugins.registry import Registry

Q, SKIP = QueueingHint.QUEUE, QueueingHint.QUEUE_SKIP

AFF_SERVICE_REGION = affinity(required=[term_in("service", "region", ["securityscan", "value2"])])
ANTI_SERVICE_REGION = affinity(anti=[term_in("service", "region", ["securityscan", "value2"])])
AFF_AAA_BBB = affinity(required=[term_exists("aaa", "hostname"), term_exists("bbb", "hostname")])


def target(aff: dict[str, object]) -> Pod:
    return pod("p", aff=aff)


def other(labels: dict[str, str], node_name: str = "fake-node") -> Pod:
    return pod("other", labels=labels, node=node_name)


POD_CHANGE_CASES = [
    (
        "add a pod which matches the pod affinity",
        target(AFF_SERVICE_REGION),
        None,
        other({"service": "securityscan"}),
        Q,
    ),
    (
        "add an un-scheduled pod",
        target(AFF_SERVICE_REGION),
        None,
        other({"service": "securityscan"}, ""),
        SKIP,
    ),
    (
        "add a pod which doesn't match the pod affinity",
        target(AFF_SERVICE_REGION),
        None,
        other({"aaa": "a"}),
        SKIP,
    ),
    (
        "update a pod from non-match to match pod affinity",
        target(AFF_SERVICE_REGION),
        other({"aaa": "a"}),
        other({"service": "securityscan"}),
        Q,
    ),
    (
        "the updating pod matches target pod's affinity both before and after label changes",
        target(AFF_SERVICE_REGION),
        other({"service": "value2"}),
        other({"service": "securityscan"}),
        SKIP,
    ),
    (
        "update an un-scheduled pod",
        target(AFF_SERVICE_REGION),
        other({"service": "securityscan"}, ""),
        other({"service": "securityscan"}, ""),
        SKIP,
    ),
    (
        "update a pod from match to non-match the pod affinity",
        target(AFF_SERVICE_REGION),
        other({"service": "securityscan"}),
        other({"aaa": "a"}),
        SKIP,
    ),
    (
        "update a pod from match to non-match pod's affinity - multiple terms case",
        target(AFF_AAA_BBB),
        other({"aaa": "a"}),
        other({"service": "securityscan"}),
        SKIP,
    ),
    (
        "update a pod from non-match to match pod's affinity - multiple terms case",
        target(AFF_AAA_BBB),
        other({"aaa": "a"}),
        other({"aaa": "", "bbb": ""}),
        Q,
    ),
    (
        "modify pod label to change it from satisfying pod anti-affinity to not satisfying anti-affinity",
        target(ANTI_SERVICE_REGION),
        other({"service": "securityscan"}),
        other({"service": "aaaa"}),
        Q,
    ),
    (
        "modify pod label to change it from not satisfying pod anti-affinity to satisfying anti-affinity",
        target(ANTI_SERVICE_REGION),
        other({"service": "bbb"}),
        other({"service": "securityscan"}),
        SKIP,
    ),
    (
        "delete a pod which doesn't match pod's anti-affinity",
        target(ANTI_SERVICE_REGION),
        other({"aaa": "a"}),
        None,
        SKIP,
    ),
    (
        "delete a pod which matches pod's anti-affinity",
        target(ANTI_SERVICE_REGION),
        other({"service": "securityscan"}),
        None,
        Q,
    ),
]


@pytest.mark.parametrize(("name", "target_pod", "old", "new_pod", "want"), POD_CHANGE_CASES)
def test_is_schedulable_after_pod_change(
    name: str, target_pod: Pod, old: Pod | None, new_pod: Pod | None, want: QueueingHint
) -> None:
    assert InterPodAffinity.hint_pod_change(target_pod, old, new_pod) == want


def test_pod_change_of_the_target_pod_itself_queues() -> None:
    p = target(AFF_SERVICE_REGION)
    assert InterPodAffinity.hint_pod_change(p, p, p) == Q


def test_deleted_pod_whose_anti_affinity_the_target_matches_queues() -> None:
    deleted = pod("d", node="n", aff=affinity(anti=[term_in("app", "zone", ["web"])]))
    assert InterPodAffinity.hint_pod_change(pod("p", labels={"app": "web"}), deleted, None) == Q
    assert InterPodAffinity.hint_pod_change(pod("p", labels={"app": "db"}), deleted, None) == SKIP


def zone(name: str, labels: dict[str, str]) -> Node:
    return node(name, labels)


AFF_ZONE = affinity(required=[term_in("service", "zone", ["securityscan", "value2"])])
ANTI_ZONE = affinity(anti=[term("zone", match_labels={"another": "label"})])

NODE_CHANGE_CASES = [
    (
        "add a new node with matched pod affinity topologyKey",
        AFF_ZONE,
        None,
        zone("node-a", {"zone": "zone1"}),
        Q,
    ),
    (
        "add a new node without matched topologyKey",
        affinity(required=[term_in("service", "region", ["securityscan", "value2"])]),
        None,
        zone("node-a", {"zone": "zone1"}),
        SKIP,
    ),
    (
        "update node label but not topologyKey",
        AFF_ZONE,
        zone("node-a", {"aaa": "a"}),
        zone("node-a", {"aaa": "b"}),
        SKIP,
    ),
    (
        "update node label that isn't related to the pod affinity",
        AFF_ZONE,
        zone("node-a", {"zone": "zone1"}),
        zone("node-a", {"zone": "zone1", "unrelated-label": "unrelated"}),
        SKIP,
    ),
    (
        "update node with different affinity topologyKey value",
        AFF_ZONE,
        zone("node-a", {"zone": "zone1"}),
        zone("node-a", {"zone": "zone2"}),
        Q,
    ),
    (
        "update node to have the affinity topology label",
        AFF_ZONE,
        zone("node-a", {"aaa": "a"}),
        zone("node-a", {"zone": "zone1"}),
        Q,
    ),
    (
        "add a new node with matched pod anti-affinity topologyKey",
        ANTI_ZONE,
        None,
        zone("node-a", {"zone": "zone1"}),
        Q,
    ),
    ("add a new node without matched pod anti-affinity topologyKey", ANTI_ZONE, None, zone("node-a", {}), Q),
    (
        "update node label that isn't related to the pod anti-affinity",
        ANTI_ZONE,
        zone("node-a", {"zone": "zone1"}),
        zone("node-a", {"zone": "zone1", "unrelated-label": "unrelated"}),
        SKIP,
    ),
    (
        "update node with different anti-affinity topologyKey value",
        ANTI_ZONE,
        zone("node-a", {"zone": "zone1"}),
        zone("node-a", {"zone": "zone2"}),
        Q,
    ),
    (
        "update node to have the anti-affinity topology label",
        ANTI_ZONE,
        zone("node-a", {"aaa": "a"}),
        zone("node-a", {"zone": "zone1"}),
        SKIP,
    ),
    (
        "update node label not to have anti-affinity topology label",
        ANTI_ZONE,
        zone("node-a", {"zone": "zone1"}),
        zone("node-a", {"aaa": "a"}),
        Q,
    ),
]


@pytest.mark.parametrize(("name", "aff", "old", "new_node", "want"), NODE_CHANGE_CASES)
def test_is_schedulable_after_node_change(
    name: str, aff: dict[str, object], old: Node | None, new_node: Node, want: QueueingHint
) -> None:
    assert InterPodAffinity.hint_node_change(target(aff), old, new_node) == want


def test_hint_with_unparsable_terms_queues() -> None:
    bad = target(affinity(required=[term_in("service", "zone", ["{{.bad-value.}}"])]))
    assert InterPodAffinity.hint_node_change(bad, None, zone("n", {})) == Q
    assert InterPodAffinity.hint_pod_change(bad, None, other({"service": "x"})) == Q


def test_events_to_register() -> None:
    plugin = new(None, FakeHandle())
    events = plugin.events_to_register()
    assert [(e.event.resource, e.event.action) for e in events] == [
        (EventResource.POD, ActionType.ADD | ActionType.UPDATE_POD_LABEL | ActionType.DELETE),
        (EventResource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL),
    ]
    assert [e.event.label for e in events] == ["PodAdd|Delete|UpdatePodLabel", "NodeAdd|UpdateNodeLabel"]
    assert all(e.hint is not None for e in events)


def test_registry_builds_the_plugin_with_default_args() -> None:
    reg = Registry()["InterPodAffinity"]
    assert reg.args_type is InterPodAffinityArgs
    plugin = reg.factory(reg.default_args(), FakeHandle())
    assert isinstance(plugin, InterPodAffinity)
    assert plugin.name == NAME == "InterPodAffinity"
    assert plugin.args.hard_pod_affinity_weight == 1
    assert plugin.args.ignore_preferred_terms_of_existing_pods is False


@pytest.mark.parametrize(
    ("weight", "path", "want"),
    [
        (0, "", []),
        (100, "", []),
        (-1, "", ["hardPodAffinityWeight: Invalid value: -1: not in valid range [0, 100]"]),
        (
            101,
            "profiles[0].pluginConfig[2].args",
            [
                "profiles[0].pluginConfig[2].args.hardPodAffinityWeight: Invalid value: 101: not in valid range [0, 100]"
            ],
        ),
    ],
)
def test_validate_inter_pod_affinity_args(weight: int, path: str, want: list[str]) -> None:
    assert (
        validate_inter_pod_affinity_args(InterPodAffinityArgs(hard_pod_affinity_weight=weight), path) == want
    )


def test_new_rejects_invalid_args() -> None:
    with pytest.raises(
        ValueError, match=r"hardPodAffinityWeight: Invalid value: 101: not in valid range \[0, 100\]"
    ):
        new(InterPodAffinityArgs(hard_pod_affinity_weight=101), FakeHandle())
