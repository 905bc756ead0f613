"""VolumeRestrictions tests ported from upstream ``volume_restrictions_test.go``.

1.36.2 differs from the stored upstream table in TestAccessModeConflicts: a claim in use by a
scheduled pod no longer fails PreFilter; PreFilter records the conflict and Filter answers
Unschedulable (so preemption may remove the user), with the reworded reason.
"""

from __future__ import annotations

from typing import Any

import pytest

from ksched.api.core import Pod
from ksched.framework.cycle_state import CycleState
from ksched.framework.events import ActionType, EventResource, QueueingHint
from ksched.framework.nodeinfo import NodeInfo
from ksched.framework.podinfo import PodInfo
from ksched.framework.status import Status
from ksched.framework.testing import make_node, make_pod
from ksched.plugins.helper.testing import handle_for, make_pvc, pod_with_claims
from ksched.plugins.volumerestrictions import (
    ERR_REASON_DISK_CONFLICT,
    ERR_REASON_RWOP_CONFLICT,
    VolumeRestrictions,
    new,
)


def pod_with(volume: dict[str, Any] | None, name: str = "p") -> Pod:
    return make_pod(name, spec={"volumes": [{"name": "v", **volume}] if volume else []})


def node_with(*pods: Pod) -> NodeInfo:
    ni = NodeInfo(make_node("n"))
    for p in pods:
        ni.add_pod(PodInfo(p))
    return ni


DISK_KINDS: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
    "GCE": ({"gcePersistentDisk": {"pdName": "foo"}}, {"gcePersistentDisk": {"pdName": "bar"}}),
    "AWS": ({"awsElasticBlockStore": {"volumeID": "foo"}}, {"awsElasticBlockStore": {"volumeID": "bar"}}),
    "RBD": (
        {"rbd": {"monitors": ["a", "b"], "pool": "foo", "image": "bar", "fsType": "ext4"}},
        {"rbd": {"monitors": ["c", "d"], "pool": "foo", "image": "bar", "fsType": "ext4"}},
    ),
    "ISCSI": (
        {"iscsi": {"targetPortal": "127.0.0.1:3260", "iqn": "iqn.2016-12.server:storage.target01", "lun": 0}},
        {"iscsi": {"targetPortal": "127.0.0.1:3260", "iqn": "iqn.2017-12.server:storage.target01", "lun": 0}},
    ),
}


@pytest.mark.parametrize("kind", list(DISK_KINDS))
@pytest.mark.parametrize(
    ("pod_vol", "node_vols", "conflict"),
    [(None, [], False), (None, [0], False), (0, [0], True), (1, [0], False)],
    ids=["nothing", "one state", "same state", "different state"],
)
def test_disk_conflicts(kind: str, pod_vol: int | None, node_vols: list[int], conflict: bool) -> None:
    vols = DISK_KINDS[kind]
    pod = pod_with(vols[pod_vol] if pod_vol is not None else None)
    node = node_with(*[pod_with(vols[i], f"existing-{i}") for i in node_vols])
    pl = VolumeRestrictions(handle_for())
    state = CycleState()
    _, pre = pl.pre_filter(state, PodInfo(pod), [])
    if pre == Status.skip():
        assert not conflict
        return
    want = Status.unschedulable(ERR_REASON_DISK_CONFLICT) if conflict else None
    assert pl.filter(state, PodInfo(pod), node) == want


@pytest.mark.parametrize(
    ("read_only", "conflict"),
    [((True, True), False), ((True, False), True), ((False, False), True)],
    ids=["both-read-only", "one-writer", "two-writers"],
)
def test_gce_and_iscsi_read_only_mounts_share(read_only: tuple[bool, bool], conflict: bool) -> None:
    for key, source in (("gcePersistentDisk", {"pdName": "d"}), ("iscsi", {"iqn": "q", "targetPortal": "t"})):
        pod = pod_with({key: {**source, "readOnly": read_only[0]}})
        node = node_with(pod_with({key: {**source, "readOnly": read_only[1]}}, "other"))
        pl = VolumeRestrictions(handle_for())
        state = CycleState()
        pl.pre_filter(state, PodInfo(pod), [])
        assert (pl.filter(state, PodInfo(pod), node) is not None) == conflict


RWOP = make_pvc("claim-with-rwop", access_modes=["ReadWriteOncePod"])
RWX = make_pvc("claim-with-rwx", access_modes=["ReadWriteMany"])
POD_RWOP = pod_with_claims("pod-with-rwop", ["claim-with-rwop"], node_name="node-1")
POD_RWX = pod_with_claims("pod-with-rwx", ["claim-with-rwx"], node_name="node-1")


@pytest.mark.parametrize(
    ("pod", "existing", "pvcs", "pre_filter", "filter"),
    [
        (make_pod("p"), [], [], Status.skip(), None),
        (
            POD_RWOP,
            [],
            [],
            Status.unresolvable('persistentvolumeclaim "claim-with-rwop" not found'),
            None,
        ),
        (POD_RWOP, [POD_RWX], [RWOP, RWX], Status.skip(), None),
        (POD_RWOP, [POD_RWOP, POD_RWX], [RWOP, RWX], None, Status.unschedulable(ERR_REASON_RWOP_CONFLICT)),
    ],
    ids=["nothing", "failed to get PVC", "no access mode conflict", "access mode conflict"],
)
def test_access_mode_conflicts(
    pod: Pod, existing: list[Pod], pvcs: list[Any], pre_filter: Status | None, filter: Status | None
) -> None:
    pl = VolumeRestrictions(handle_for([make_node("node-1")], existing, pvcs))
    state = CycleState()
    _, status = pl.pre_filter(state, PodInfo(pod), [])
    assert status == pre_filter
    if status is None:
        assert pl.filter(state, PodInfo(pod), NodeInfo(make_node("node-2"))) == filter


def test_add_and_remove_pod_adjust_the_conflict_count() -> None:
    """Preemption removing the claim's user makes the node feasible again."""
    pl = VolumeRestrictions(handle_for([make_node("node-1")], [POD_RWOP], [RWOP]))
    pod = PodInfo(pod_with_claims("new", ["claim-with-rwop"]))
    state = CycleState()
    assert pl.pre_filter(state, pod, [])[1] is None
    node = NodeInfo(make_node("node-1"))
    copy = state.clone()
    assert pl.remove_pod(copy, pod, PodInfo(POD_RWOP), node) is None
    assert pl.filter(copy, pod, node) is None
    assert pl.filter(state, pod, node) == Status.unschedulable(ERR_REASON_RWOP_CONFLICT)
    assert pl.add_pod(copy, pod, PodInfo(POD_RWOP), node) is None
    assert pl.filter(copy, pod, node) == Status.unschedulable(ERR_REASON_RWOP_CONFLICT)


def test_events_to_register() -> None:
    got = [
        (e.event.resource, e.event.action, e.hint is not None)
        for e in new(None, handle_for()).events_to_register()
    ]
    assert got == [
        (EventResource.POD, ActionType.DELETE, True),
        (EventResource.NODE, ActionType.ADD, False),
        (EventResource.PERSISTENT_VOLUME_CLAIM, ActionType.ADD, True),
    ]


Q, SKIP = QueueingHint.QUEUE, QueueingHint.QUEUE_SKIP


@pytest.mark.parametrize(
    ("pod", "claim", "want"),
    [
        (pod_with_claims("p", ["pvc1"], namespace="ns1"), make_pvc("pvc1", namespace="ns2"), SKIP),
        (pod_with_claims("p", ["pvc1"], namespace="ns1"), make_pvc("pvc1", namespace="ns1"), Q),
        (pod_with_claims("p", ["pvc1"], namespace="ns1"), make_pvc("pvc2", namespace="ns1"), SKIP),
    ],
    ids=["other-namespace", "claim-of-the-pod", "other-claim"],
)
def test_hint_pvc_added(pod: Pod, claim: Any, want: QueueingHint) -> None:
    assert VolumeRestrictions.hint_pvc_added(pod, None, claim) == want


@pytest.mark.parametrize(
    ("pod", "deleted", "want"),
    [
        (
            pod_with({"gcePersistentDisk": {"pdName": "d"}}),
            pod_with({"gcePersistentDisk": {"pdName": "d"}}, "o"),
            Q,
        ),
        (pod_with_claims("p", ["c"]), pod_with_claims("o", ["c"]), Q),
        (pod_with_claims("p", ["c"]), pod_with_claims("o", ["c"], namespace="elsewhere"), SKIP),
        (pod_with_claims("p", ["c"]), pod_with_claims("o", ["d"]), SKIP),
    ],
    ids=["conflicting-disk", "same-claim", "other-namespace", "unrelated"],
)
def test_hint_pod_deleted(pod: Pod, deleted: Pod, want: QueueingHint) -> None:
    assert VolumeRestrictions.hint_pod_deleted(pod, deleted, None) == want
    with pytest.raises(TypeError):
        VolumeRestrictions.hint_pod_deleted(pod, "not-a-pod", None)
