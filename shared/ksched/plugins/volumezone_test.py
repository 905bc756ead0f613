"""VolumeZone tests ported from upstream ``volume_zone_test.go`` (TestSingleZone, TestMultiZone,
TestWithBinding and the queueing-hint tables). NotFound texts are those of the informer listers the
scheduler uses (``storageclass.storage.k8s.io``), not of upstream's fake listers (``storageclasses``)."""

from __future__ import annotations

from typing import Any

import pytest

from ksched.api.core import PersistentVolume, Pod
from ksched.framework.cycle_state import CycleState
from ksched.framework.events import ActionType, EventResource, QueueingHint
from ksched.framework.nodeinfo import NodeInfo
from ksched.framework.podinfo import PodInfo
from ksched.framework.status import Status
from ksched.framework.testing import make_node
from ksched.plugins.helper.testing import handle_for, make_pv, make_pvc, make_sc, pod_with_claims
from ksched.plugins.volumezone import ERR_REASON_CONFLICT, VolumeZone, new

BETA_ZONE = "failure-domain.beta.kubernetes.io/zone"
BETA_REGION = "failure-domain.beta.kubernetes.io/region"
ZONE = "topology.kubernetes.io/zone"
REGION = "topology.kubernetes.io/region"
CONFLICT = Status.unresolvable(ERR_REASON_CONFLICT)


def pod_with_volume(pvc: str) -> Pod:
    return pod_with_claims("pod_1", [pvc])


def bound(name: str, volume: str) -> Any:
    return make_pvc(name, volume_name=volume)


SINGLE_ZONE_OBJECTS: list[Any] = [
    make_pv("Vol_1", labels={BETA_ZONE: "us-west1-a"}),
    make_pv("Vol_2", labels={BETA_REGION: "us-west1", "uselessLabel": "none"}),
    make_pv("Vol_3", labels={BETA_REGION: "us-west1"}),
    make_pv("Vol_Stable_1", labels={ZONE: "us-west1-a"}),
    make_pv("Vol_Stable_2", labels={REGION: "us-west1", "uselessLabel": "none"}),
    make_pv("Vol_Stable_3", labels={ZONE: "us-west1-a", REGION: "us-west1-a"}),
    bound("PVC_1", "Vol_1"),
    bound("PVC_2", "Vol_2"),
    bound("PVC_3", "Vol_3"),
    bound("PVC_4", "Vol_not_exist"),
    bound("PVC_Stable_1", "Vol_Stable_1"),
    bound("PVC_Stable_2", "Vol_Stable_2"),
    bound("PVC_Stable_3", "Vol_Stable_3"),
]


def run(objects: list[Any], pod: Pod, node_labels: dict[str, str]) -> tuple[Status | None, Status | None]:
    pl = VolumeZone(handle_for(objects=objects))
    state = CycleState()
    node = NodeInfo(make_node("host1", labels=node_labels))
    _, pre = pl.pre_filter(state, PodInfo(pod), [node])
    return pre, pl.filter(state, PodInfo(pod), node)


def no_hostname(labels: dict[str, str]) -> dict[str, str]:
    return labels


@pytest.mark.parametrize(
    ("pod", "labels", "pre", "filt"),
    [
        (pod_with_claims("pod_1"), {BETA_ZONE: "us-west1-a"}, Status.skip(), None),
        (pod_with_volume("PVC_1"), {}, None, None),
        (pod_with_volume("PVC_1"), {BETA_ZONE: "us-west1-a", "uselessLabel": "none"}, None, None),
        (pod_with_volume("PVC_2"), {BETA_REGION: "us-west1", "uselessLabel": "none"}, None, None),
        (pod_with_volume("PVC_2"), {BETA_REGION: "no_us-west1", "uselessLabel": "none"}, None, CONFLICT),
        (pod_with_volume("PVC_1"), {BETA_ZONE: "no_us-west1-a", "uselessLabel": "none"}, None, CONFLICT),
        (pod_with_volume("PVC_Stable_1"), {ZONE: "us-west1-a", "uselessLabel": "none"}, None, None),
        (pod_with_volume("PVC_Stable_2"), {REGION: "us-west1", "uselessLabel": "none"}, None, None),
        (pod_with_volume("PVC_Stable_2"), {REGION: "no_us-west1", "uselessLabel": "none"}, None, CONFLICT),
        (pod_with_volume("PVC_Stable_1"), {ZONE: "no_us-west1-a", "uselessLabel": "none"}, None, CONFLICT),
        (pod_with_volume("PVC_Stable_3"), {ZONE: "us-west1-a"}, None, CONFLICT),
        (pod_with_volume("PVC_Stable_1"), {BETA_ZONE: "us-west1-a"}, None, CONFLICT),
        (pod_with_volume("PVC_1"), {ZONE: "us-west1-a"}, None, None),
        (pod_with_volume("PVC_1"), {ZONE: "us-west1-b"}, None, CONFLICT),
        (
            pod_with_volume("PVC_4"),
            {ZONE: "us-west1-b"},
            Status.unresolvable('persistentvolume "Vol_not_exist" not found'),
            Status.unresolvable('persistentvolume "Vol_not_exist" not found'),
        ),
    ],
    ids=[
        "pod without volume",
        "node without labels",
        "beta zone label matched",
        "beta region label matched",
        "beta region label doesn't match",
        "beta zone label doesn't match",
        "zone label matched",
        "region label matched",
        "region label doesn't match",
        "zone label doesn't match",
        "pv with zone and region, node with only zone",
        "pv with zone,node with beta zone",
        "pv with beta label,node with ga label, matched",
        "pv with beta label,node with ga label, don't match",
        "pv not found",
    ],
)
def test_single_zone(pod: Pod, labels: dict[str, str], pre: Status | None, filt: Status | None) -> None:
    assert run(SINGLE_ZONE_OBJECTS, pod, labels) == (pre, filt)


MULTI_ZONE_OBJECTS: list[Any] = [
    make_pv("Vol_1", labels={BETA_ZONE: "us-west1-a"}),
    make_pv("Vol_2", labels={BETA_ZONE: "us-west1-b", "uselessLabel": "none"}),
    make_pv("Vol_3", labels={BETA_ZONE: "us-west1-c__us-west1-a"}),
    make_pv("Vol_Stable_1", labels={ZONE: "us-west1-a"}),
    make_pv("Vol_Stable_2", labels={ZONE: "us-west1-c__us-west1-a"}),
    bound("PVC_1", "Vol_1"),
    bound("PVC_2", "Vol_2"),
    bound("PVC_3", "Vol_3"),
    bound("PVC_4", "Vol_not_exist"),
    bound("PVC_Stable_1", "Vol_Stable_1"),
    bound("PVC_Stable_2", "Vol_Stable_2"),
]


@pytest.mark.parametrize(
    ("pvc", "labels", "filt"),
    [
        ("PVC_3", {}, None),
        ("PVC_3", {BETA_ZONE: "us-west1-a", "uselessLabel": "none"}, None),
        ("PVC_1", {BETA_ZONE: "us-west1-b", "uselessLabel": "none"}, CONFLICT),
        ("PVC_Stable_2", {ZONE: "us-west1-a", "uselessLabel": "none"}, None),
        ("PVC_Stable_1", {ZONE: "us-west1-b", "uselessLabel": "none"}, CONFLICT),
    ],
    ids=[
        "node without labels",
        "beta zone label matched",
        "beta zone label doesn't match",
        "zone label matched",
        "zone label doesn't match",
    ],
)
def test_multi_zone(pvc: str, labels: dict[str, str], filt: Status | None) -> None:
    assert run(MULTI_ZONE_OBJECTS, pod_with_volume(pvc), labels) == (None, filt)


BINDING_OBJECTS: list[Any] = [
    make_sc("Class_Immediate", mode=None),
    make_sc("Class_Wait", mode="WaitForFirstConsumer"),
    make_pv("Vol_1", labels={BETA_ZONE: "us-west1-a"}),
    bound("PVC_1", "Vol_1"),
    make_pvc("PVC_NoSC", storage_class="Class_0"),
    make_pvc("PVC_EmptySC"),
    make_pvc("PVC_WaitSC", storage_class="Class_Wait"),
    make_pvc("PVC_ImmediateSC", storage_class="Class_Immediate"),
]
TEST_NODE = {BETA_ZONE: "us-west1-a", "uselessLabel": "none"}


def both(msg: str) -> tuple[Status, Status]:
    return Status.unresolvable(msg), Status.unresolvable(msg)


@pytest.mark.parametrize(
    ("pvc", "want"),
    [
        ("PVC_1", (None, None)),
        ("PVC_EmptySC", both("PersistentVolumeClaim had no pv name and storageClass name")),
        ("PVC_NoSC", both('storageclass.storage.k8s.io "Class_0" not found')),
        ("PVC_ImmediateSC", both('VolumeBindingMode not set for StorageClass "Class_Immediate"')),
        ("PVC_WaitSC", (Status.skip(), None)),
    ],
    ids=[
        "label zone failure domain matched",
        "unbound volume empty storage class",
        "unbound volume no storage class",
        "unbound volume immediate binding mode",
        "unbound volume wait binding mode",
    ],
)
def test_with_binding(pvc: str, want: tuple[Status | None, Status | None]) -> None:
    assert run(BINDING_OBJECTS, pod_with_volume(pvc), TEST_NODE) == want


def test_unbound_immediate_claim_has_no_pv_name() -> None:
    objects = [make_sc("imm", mode="Immediate"), make_pvc("c", storage_class="imm")]
    assert run(objects, pod_with_volume("c"), TEST_NODE) == both("PersistentVolume had no name")


def test_events_to_register() -> None:
    got = [
        (e.event.resource, e.event.action, e.hint is not None)
        for e in new(None, handle_for()).events_to_register()
    ]
    assert got == [
        (EventResource.STORAGE_CLASS, ActionType.ADD, True),
        (EventResource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL, False),
        (EventResource.PERSISTENT_VOLUME_CLAIM, ActionType.ADD | ActionType.UPDATE, True),
        (EventResource.PERSISTENT_VOLUME, ActionType.ADD | ActionType.UPDATE, True),
    ]


Q, SKIP = QueueingHint.QUEUE, QueueingHint.QUEUE_SKIP


@pytest.mark.parametrize(
    ("pod", "old", "new_obj", "want"),
    [
        (pod_with_claims("pod_1"), None, bound("PVC_1", "Vol_1"), SKIP),
        (pod_with_volume("PVC_2"), None, bound("PVC_1", "Vol_1"), SKIP),
        (pod_with_volume("PVC_1"), None, make_pvc("PVC_1", namespace="ns1", volume_name="Vol_1"), SKIP),
        (pod_with_volume("PVC_1"), None, bound("PVC_1", "Vol_1"), Q),
        (pod_with_volume("PVC_1"), make_pvc("PVC_1"), bound("PVC_1", "Vol_1"), Q),
        (pod_with_claims("pod_1"), make_pvc("PVC_1"), bound("PVC_1", "Vol_1"), SKIP),
    ],
    ids=[
        "pvc-was-added-but-pod-refers-no-pvc",
        "pvc-was-added-and-pod-was-bound-to-different-pvc",
        "pvc-was-added-and-pod-was-bound-to-pvc-but-different-ns",
        "pvc-was-added-and-pod-was-bound-to-the-pvc",
        "pvc-was-updated-and-pod-was-bound-to-the-pvc",
        "pvc-was-updated-but-pod-refers-no-pvc",
    ],
)
def test_hint_pvc(pod: Pod, old: Any, new_obj: Any, want: QueueingHint) -> None:
    assert VolumeZone.hint_pvc_change(pod, old, new_obj) == want


def test_hint_pvc_wrong_object() -> None:
    with pytest.raises(TypeError):
        VolumeZone.hint_pvc_change(pod_with_volume("PVC_1"), None, "not-a-pvc")


@pytest.mark.parametrize(
    ("new_obj", "want"),
    [(make_sc("SC_1", mode=None), SKIP), (make_sc("SC_1", mode="WaitForFirstConsumer"), Q)],
    ids=["sc-doesn't-have-volume-binding-mode", "new-sc-is-wait-for-first-consumer-mode"],
)
def test_hint_storage_class_added(new_obj: Any, want: QueueingHint) -> None:
    assert VolumeZone.hint_storage_class_added(pod_with_volume("PVC_1"), None, new_obj) == want
    with pytest.raises(TypeError):
        VolumeZone.hint_storage_class_added(pod_with_volume("PVC_1"), None, "not-a-storageclass")


def zoned(labels: dict[str, str]) -> PersistentVolume:
    return make_pv("Vol_1", labels=labels)


@pytest.mark.parametrize(
    ("old", "new_obj", "want"),
    [
        (None, zoned({BETA_ZONE: "us-west1-b"}), Q),
        (zoned({BETA_ZONE: "us-west1-a"}), zoned({BETA_ZONE: "us-west1-b"}), Q),
        (zoned({BETA_ZONE: "us-west1-a"}), zoned({BETA_ZONE: "us-west1-a", ZONE: "zone"}), Q),
        (
            zoned({BETA_ZONE: "us-west1-a", ZONE: "zone"}),
            zoned({BETA_ZONE: "us-west1-a", ZONE: "zone"}),
            SKIP,
        ),
    ],
    ids=[
        "new-pv-was-added",
        "pv-was-updated-and-changed-topology",
        "pv-was-updated-and-added-topology-label",
        "pv-was-updated-but-no-topology-is-changed",
    ],
)
def test_hint_pv(old: PersistentVolume | None, new_obj: PersistentVolume, want: QueueingHint) -> None:
    assert VolumeZone.hint_pv_change(pod_with_volume("PVC_1"), old, new_obj) == want


@pytest.mark.parametrize(("old", "new_obj"), [(None, "not-a-pv"), ("not-a-pv", make_pv("Vol_1"))])
def test_hint_pv_wrong_objects(old: Any, new_obj: Any) -> None:
    with pytest.raises(TypeError):
        VolumeZone.hint_pv_change(pod_with_volume("PVC_1"), old, new_obj)
