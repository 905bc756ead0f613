"""VolumeBinding plugin tests ported from upstream ``volume_binding_test.go`` (TestVolumeBinding),
plus the 1.36 queueing hints, Reserve/Unreserve and the state hand-over to the binder process.

Differences with the stored upstream table, following the 1.36.2 source: PreFilter returns Skip for
a pod without claims; scores need StorageCapacityScoring (off by default, so PreScore skips);
the "EnableVolumeCapacityPriority" cases run with StorageCapacityScoring on.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

import pytest

from ksched.api.core import Node, PersistentVolume, PersistentVolumeClaim, Pod
from ksched.api.storage import CSIDriver, CSINode, CSIStorageCapacity, StorageClass
from ksched.framework.cycle_state import CycleState
from ksched.framework.events import ActionType, EventResource, QueueingHint
from ksched.framework.nodeinfo import NodeInfo
from ksched.framework.podinfo import PodInfo
from ksched.framework.status import Code, Status
from ksched.framework.testing import make_node
from ksched.plugins.args.types import UtilizationShapePoint, VolumeBindingArgs
from ksched.plugins.helper.storage import ANN_SELECTED_NODE
from ksched.plugins.helper.testing import (
    handle_for,
    make_capacity,
    make_csi_driver,
    make_csi_node,
    make_pv,
    make_pvc,
    make_sc,
    pod_with_claims,
)
from ksched.plugins.volumebinding import VolumeBinding, VolumeBindingFeatures, new
from ksched.plugins.volumebinding.binder import (
    ERR_REASON_BIND_CONFLICT,
    ERR_REASON_NODE_CONFLICT,
    ERR_REASON_PV_NOT_EXIST,
)
from ksched.plugins.volumebinding.state import STATE_KEY, StateExportError, VolumeBindingState

HOSTNAME = "kubernetes.io/hostname"
IMMEDIATE_SC = make_sc("immediate-sc", mode="Immediate")
WAIT_SC = make_sc("wait-sc", mode="WaitForFirstConsumer")
WAIT_HDD_SC = make_sc("wait-hdd-sc", mode="WaitForFirstConsumer")
CLASSES = [IMMEDIATE_SC, WAIT_SC, WAIT_HDD_SC]
SCORING = VolumeBindingFeatures(storage_capacity_scoring=True)
DEFAULT_SHAPE = [
    UtilizationShapePoint(utilization=0, score=0),
    UtilizationShapePoint(utilization=100, score=10),
]


def pvc(
    name: str, cls: str, *, bound_pv: str = "", request: str | None = None, phase: str | None = None
) -> PersistentVolumeClaim:
    """upstream ``makePVC`` (+ withBoundPV / withRequestStorage / withPhase)."""
    return make_pvc(
        name,
        storage_class=cls,
        volume_name=bound_pv,
        annotations={"pv.kubernetes.io/bind-completed": "true"} if bound_pv else None,
        request=request,
        phase=phase,
    )


def pv(
    name: str, cls: str, *, capacity: str | None = None, affinity: dict[str, list[str]] | None = None
) -> PersistentVolume:
    return make_pv(name, storage_class=cls, capacity=capacity, node_affinity=affinity)


def zone_node(name: str, region: str, zone: str) -> Node:
    return make_node(
        name, labels={"topology.kubernetes.io/region": region, "topology.kubernetes.io/zone": zone}
    )


def zonal_pv(name: str, capacity: str, region: str, zone: str) -> PersistentVolume:
    return pv(
        name,
        WAIT_SC.metadata.name,
        capacity=capacity,
        affinity={"topology.kubernetes.io/region": [region], "topology.kubernetes.io/zone": [zone]},
    )


UNSCHED_BIND = Status.unresolvable(ERR_REASON_BIND_CONFLICT)


@dataclass
class Case:
    pod: Pod
    nodes: list[Node]
    pvcs: list[PersistentVolumeClaim] = field(default_factory=list)
    pvs: list[PersistentVolume] = field(default_factory=list)
    features: VolumeBindingFeatures = field(default_factory=VolumeBindingFeatures)
    args: VolumeBindingArgs | None = None
    pre_filter: Status | None = None
    filter: list[Status | None] = field(default_factory=list)
    #: None: PreScore skips (upstream does not score)
    scores: list[int] | None = None


ZONE_NODES = [
    zone_node("zone-a-node-a", "region-a", "zone-a"),
    zone_node("zone-a-node-b", "region-a", "zone-a"),
    zone_node("zone-b-node-a", "region-b", "zone-b"),
    zone_node("zone-b-node-b", "region-b", "zone-b"),
    zone_node("zone-c-node-a", "region-c", "zone-c"),
    zone_node("zone-c-node-b", "region-c", "zone-c"),
]
ZONE_PVS = [
    zonal_pv("pv-a-0", "200Gi", "region-a", "zone-a"),
    zonal_pv("pv-a-1", "200Gi", "region-a", "zone-a"),
    zonal_pv("pv-b-0", "100Gi", "region-b", "zone-b"),
    zonal_pv("pv-b-1", "100Gi", "region-b", "zone-b"),
]


def local_pv(name: str, cls: str, capacity: str, node: str) -> PersistentVolume:
    return pv(name, cls, capacity=capacity, affinity={HOSTNAME: [node]})


W, H = WAIT_SC.metadata.name, WAIT_HDD_SC.metadata.name
ABC = [make_node("node-a"), make_node("node-b"), make_node("node-c")]

CASES: dict[str, Case] = {
    "pod has not pvcs": Case(
        pod=pod_with_claims("pod-a"), nodes=[make_node("node-a")], pre_filter=Status.skip()
    ),
    "all bound": Case(
        pod=pod_with_claims("pod-a", ["pvc-a"]),
        nodes=[make_node("node-a")],
        pvcs=[pvc("pvc-a", W, bound_pv="pv-a")],
        pvs=[pv("pv-a", W)],
        filter=[None],
    ),
    "PVC does not exist": Case(
        pod=pod_with_claims("pod-a", ["pvc-a"]),
        nodes=[make_node("node-a")],
        pre_filter=Status.unresolvable('persistentvolumeclaim "pvc-a" not found'),
    ),
    "Part of PVCs do not exist": Case(
        pod=pod_with_claims("pod-a", ["pvc-a", "pvc-b"]),
        nodes=[make_node("node-a")],
        pvcs=[pvc("pvc-a", W, bound_pv="pv-a")],
        pre_filter=Status.unresolvable('persistentvolumeclaim "pvc-b" not found'),
    ),
    "immediate claims not bound": Case(
        pod=pod_with_claims("pod-a", ["pvc-a"]),
        nodes=[make_node("node-a")],
        pvcs=[pvc("pvc-a", IMMEDIATE_SC.metadata.name)],
        pre_filter=Status.unresolvable("pod has unbound immediate PersistentVolumeClaims"),
    ),
    "unbound claims no matches": Case(
        pod=pod_with_claims("pod-a", ["pvc-a"]),
        nodes=[make_node("node-a")],
        pvcs=[pvc("pvc-a", W)],
        filter=[UNSCHED_BIND],
    ),
    "bound and unbound unsatisfied": Case(
        pod=pod_with_claims("pod-a", ["pvc-a", "pvc-b"]),
        nodes=[make_node("node-a", labels={"foo": "barbar"})],
        pvcs=[pvc("pvc-a", W, bound_pv="pv-a"), pvc("pvc-b", W)],
        pvs=[pv("pv-a", W, affinity={"foo": ["bar"]})],
        filter=[Status.unresolvable(ERR_REASON_NODE_CONFLICT, ERR_REASON_BIND_CONFLICT)],
    ),
    "pvc not found": Case(
        pod=pod_with_claims("pod-a", ["pvc-a"]),
        nodes=[make_node("node-a")],
        pre_filter=Status.unresolvable('persistentvolumeclaim "pvc-a" not found'),
    ),
    "pv not found": Case(
        pod=pod_with_claims("pod-a", ["pvc-a"]),
        nodes=[make_node("node-a")],
        pvcs=[pvc("pvc-a", W, bound_pv="pv-a")],
        filter=[Status.unresolvable(ERR_REASON_PV_NOT_EXIST)],
    ),
    "pv not found claim lost": Case(
        pod=pod_with_claims("pod-a", ["pvc-a"]),
        nodes=[make_node("node-a")],
        pvcs=[pvc("pvc-a", W, bound_pv="pv-a", phase="Lost")],
        pre_filter=Status.unresolvable(
            'persistentvolumeclaim "pvc-a" bound to non-existent persistentvolume "pv-a"'
        ),
    ),
    "local volumes with close capacity are preferred": Case(
        pod=pod_with_claims("pod-a", ["pvc-a"]),
        nodes=ABC,
        pvcs=[pvc("pvc-a", W, request="50Gi")],
        pvs=[
            local_pv("pv-a-0", W, "200Gi", "node-a"),
            local_pv("pv-a-1", W, "200Gi", "node-a"),
            local_pv("pv-b-0", W, "100Gi", "node-b"),
            local_pv("pv-b-1", W, "100Gi", "node-b"),
        ],
        features=SCORING,
        args=VolumeBindingArgs(bind_timeout_seconds=300, shape=DEFAULT_SHAPE),
        filter=[None, None, UNSCHED_BIND],
        scores=[25, 50, 0],
    ),
    "local volumes with close capacity are preferred (multiple pvcs)": Case(
        pod=pod_with_claims("pod-a", ["pvc-0", "pvc-1"]),
        nodes=ABC,
        pvcs=[pvc("pvc-0", W, request="50Gi"), pvc("pvc-1", H, request="100Gi")],
        pvs=[
            local_pv("pv-a-0", W, "200Gi", "node-a"),
            local_pv("pv-a-1", W, "200Gi", "node-a"),
            local_pv("pv-a-2", H, "200Gi", "node-a"),
            local_pv("pv-a-3", H, "200Gi", "node-a"),
            local_pv("pv-b-0", W, "100Gi", "node-b"),
            local_pv("pv-b-1", W, "100Gi", "node-b"),
            local_pv("pv-b-2", H, "100Gi", "node-b"),
            local_pv("pv-b-3", H, "100Gi", "node-b"),
        ],
        features=SCORING,
        args=VolumeBindingArgs(bind_timeout_seconds=300, shape=DEFAULT_SHAPE),
        filter=[None, None, UNSCHED_BIND],
        scores=[38, 75, 0],
    ),
    "zonal volumes with close capacity are preferred": Case(
        pod=pod_with_claims("pod-a", ["pvc-a"]),
        nodes=ZONE_NODES,
        pvcs=[pvc("pvc-a", W, request="50Gi")],
        pvs=ZONE_PVS,
        features=SCORING,
        args=VolumeBindingArgs(bind_timeout_seconds=300, shape=DEFAULT_SHAPE),
        filter=[None, None, None, None, UNSCHED_BIND, UNSCHED_BIND],
        scores=[25, 25, 50, 50, 0, 0],
    ),
    "zonal volumes with close capacity are preferred (custom shape)": Case(
        pod=pod_with_claims("pod-a", ["pvc-a"]),
        nodes=ZONE_NODES,
        pvcs=[pvc("pvc-a", W, request="50Gi")],
        pvs=ZONE_PVS,
        features=SCORING,
        args=VolumeBindingArgs(
            bind_timeout_seconds=300,
            shape=[
                UtilizationShapePoint(utilization=0, score=0),
                UtilizationShapePoint(utilization=50, score=3),
                UtilizationShapePoint(utilization=100, score=5),
            ],
        ),
        filter=[None, None, None, None, UNSCHED_BIND, UNSCHED_BIND],
        scores=[15, 15, 30, 30, 0, 0],
    ),
    "static bindings are not scored without StorageCapacityScoring (1.36 default)": Case(
        pod=pod_with_claims("pod-a", ["pvc-a"]),
        nodes=ABC,
        pvcs=[pvc("pvc-a", W, request="50Gi")],
        pvs=[local_pv("pv-a-0", W, "200Gi", "node-a"), local_pv("pv-b-0", W, "100Gi", "node-b")],
        filter=[None, None, UNSCHED_BIND],
    ),
}


def make_plugin(
    nodes: list[Node],
    objects: list[object],
    pods: list[Pod] = (),  # type: ignore[assignment]
    *,
    features: VolumeBindingFeatures | None = None,
    args: VolumeBindingArgs | None = None,
    client: object | None = None,
) -> VolumeBinding:
    return VolumeBinding(handle_for(nodes, pods, objects, client=client), args, features)


@pytest.mark.parametrize("name", list(CASES), ids=list(CASES))
def test_volume_binding(name: str) -> None:
    case = CASES[name]
    pl = make_plugin(case.nodes, [*CLASSES, *case.pvcs, *case.pvs], features=case.features, args=case.args)
    state, pi = CycleState(), PodInfo(case.pod)
    nodes = [NodeInfo(n) for n in case.nodes]
    _, status = pl.pre_filter(state, pi, nodes)
    assert status == case.pre_filter
    if status is not None:
        return
    assert [pl.filter(state, pi, ni) for ni in nodes] == case.filter
    pre_score = pl.pre_score(state, pi, nodes)
    if case.scores is None:
        assert pre_score == Status.skip()
        return
    assert pre_score is None
    assert [pl.score(state, pi, ni) for ni in nodes] == case.scores


def test_dynamic_provisioning_scored_by_node_capacity() -> None:
    """With StorageCapacityScoring and no static binding, provisions score by CSIStorageCapacity."""
    sc = make_sc("csi-wffc", mode="WaitForFirstConsumer", provisioner="csi.example.com")
    nodes = [make_node("n1", labels={"zone": "a"}), make_node("n2", labels={"zone": "b"})]
    objects: list[object] = [
        sc,
        make_csi_driver("csi.example.com", True),
        make_capacity("cap-a", "csi-wffc", {"zone": "a"}, "100Gi"),
        make_capacity("cap-b", "csi-wffc", {"zone": "b"}, "200Gi"),
        make_pvc("data", storage_class="csi-wffc", request="50Gi"),
    ]
    pl = make_plugin(nodes, objects, features=SCORING)  # default 1.36 shape: 0% -> 10, 100% -> 0
    state, pi = CycleState(), PodInfo(pod_with_claims("p", ["data"]))
    infos = [NodeInfo(n) for n in nodes]
    assert pl.pre_filter(state, pi, infos)[1] is None
    assert [pl.filter(state, pi, ni) for ni in infos] == [None, None]
    assert pl.pre_score(state, pi, infos) is None
    assert [pl.score(state, pi, ni) for ni in infos] == [50, 75]


def test_ephemeral_volume_claims() -> None:
    pod = pod_with_claims("abc", uid="12345", volumes=[{"name": "xyz", "ephemeral": {}}])
    pl = make_plugin([make_node("n")], [])
    _, status = pl.pre_filter(CycleState(), PodInfo(pod), [])
    assert status == Status.unresolvable(
        'waiting for ephemeral volume controller to create the persistentvolumeclaim "abc-xyz"'
    )
    pl = make_plugin([make_node("n")], [make_pvc("abc-xyz", storage_class=W)])
    _, status = pl.pre_filter(CycleState(), PodInfo(pod), [])
    assert status == Status.unresolvable(
        "PVC default/abc-xyz was not created for pod default/abc (pod is not owner)"
    )
    pl = make_plugin([make_node("n")], [*CLASSES, make_pvc("abc-xyz", storage_class=W, owner=pod)])
    state = CycleState()
    assert pl.pre_filter(state, PodInfo(pod), [])[1] is None
    assert pl.filter(state, PodInfo(pod), NodeInfo(make_node("n"))) == UNSCHED_BIND


def test_claim_being_deleted() -> None:
    claim = make_pvc("c", storage_class=W, spec={})
    import msgspec

    claim = msgspec.structs.replace(
        claim, metadata=msgspec.structs.replace(claim.metadata, deletion_timestamp="2026-01-01T00:00:00Z")
    )
    pl = make_plugin([make_node("n")], [claim])
    assert pl.pre_filter(CycleState(), PodInfo(pod_with_claims("p", ["c"])), [])[1] == Status.unresolvable(
        'persistentvolumeclaim "c" is being deleted'
    )


def test_storage_class_without_binding_mode_is_an_error() -> None:
    pl = make_plugin([make_node("n")], [make_sc("broken", mode=None), make_pvc("c", storage_class="broken")])
    _, status = pl.pre_filter(CycleState(), PodInfo(pod_with_claims("p", ["c"])), [])
    assert status is not None and status.code == Code.ERROR
    assert status.message == 'VolumeBindingMode not set for StorageClass "broken"'


# --- Reserve / Unreserve / hand-over -------------------------------------------------------------------


def scheduled_cycle(
    objects: list[object], nodes: list[Node], claims: list[str], chosen: str
) -> tuple[VolumeBinding, CycleState, PodInfo]:
    pl = make_plugin(nodes, [*CLASSES, *objects])
    state, pi = CycleState(), PodInfo(pod_with_claims("pod-a", claims, uid="pod-uid"))
    infos = [NodeInfo(n) for n in nodes]
    assert pl.pre_filter(state, pi, infos)[1] is None
    for ni in infos:
        pl.filter(state, pi, ni)
    assert pl.reserve(state, pi, chosen) is None
    return pl, state, pi


def test_reserve_assumes_and_unreserve_reverts() -> None:
    claim = make_pvc("pvc-a", storage_class=W, request="1Gi", uid="claim-uid")
    objects: list[object] = [
        claim,
        local_pv("pv-a", W, "5Gi", "node-a"),
        local_pv("pv-b", W, "5Gi", "node-b"),
    ]
    pl, state, pi = scheduled_cycle(objects, ABC[:2], ["pvc-a"], "node-a")
    st = state.read(STATE_KEY)
    assert isinstance(st, VolumeBindingState) and st.all_bound is False
    assumed = pl.binder.pv_cache.get("pv-a")
    assert assumed.spec.claim_ref is not None and assumed.spec.claim_ref.uid == "claim-uid"
    # a second pod with the same kind of claim no longer sees pv-a as available on node-a
    other = make_pvc("pvc-z", storage_class=W, request="1Gi")
    pl._handle.snapshot.objects.put(other)
    state2, pi2 = CycleState(), PodInfo(pod_with_claims("pod-z", ["pvc-z"]))
    assert pl.pre_filter(state2, pi2, [])[1] is None
    assert pl.filter(state2, pi2, NodeInfo(ABC[0])) == UNSCHED_BIND
    pl.unreserve(state, pi, "node-a")
    assert pl.binder.pv_cache.get("pv-a").spec.claim_ref is None
    state3 = CycleState()  # the PVs of a class are listed in PreFilter
    assert pl.pre_filter(state3, pi2, [])[1] is None
    assert pl.filter(state3, pi2, NodeInfo(ABC[0])) is None


def test_reserve_of_a_pod_without_claims_is_all_bound() -> None:
    pl = make_plugin([make_node("n")], [])
    state, pi = CycleState(), PodInfo(pod_with_claims("p"))
    assert pl.pre_filter(state, pi, [])[1] == Status.skip()
    assert pl.reserve(state, pi, "n") is None
    assert asyncio.run(pl.pre_bind(state, pi, "n")) is None  # nothing to bind, no client needed
    fresh = CycleState()
    pl.import_state(fresh, pl.export_state(state))
    assert asyncio.run(pl.pre_bind(fresh, pi, "n")) is None


def test_export_import_round_trip_carries_the_assumed_decisions() -> None:
    sc = make_sc("csi-wffc", mode="WaitForFirstConsumer", provisioner="csi.example.com")
    objects: list[object] = [
        sc,
        make_pvc("pvc-a", storage_class=W, request="1Gi", uid="claim-uid"),
        make_pvc("scratch", storage_class="csi-wffc", request="1Gi"),
        local_pv("pv-a", W, "5Gi", "node-a"),
    ]
    pl, state, pi = scheduled_cycle(objects, ABC[:1], ["pvc-a", "scratch"], "node-a")
    data = pl.export_state(state)
    assert isinstance(data, bytes)
    other = make_plugin(ABC[:1], [])  # as in the binder process: no objects, no assume cache entries
    fresh = CycleState()
    other.import_state(fresh, data)
    st = fresh.read(STATE_KEY)
    assert isinstance(st, VolumeBindingState)
    assert (st.all_bound, st.reserved_node) == (False, "node-a")
    pod_volumes = st.pod_volumes_by_node["node-a"]
    original = state.read(STATE_KEY)
    assert isinstance(original, VolumeBindingState)
    assert pod_volumes == original.pod_volumes_by_node["node-a"]
    (binding,) = pod_volumes.static_bindings or []
    assert binding.pv.spec.claim_ref is not None and binding.pv.spec.claim_ref.name == "pvc-a"
    (provision,) = pod_volumes.dynamic_provisions or []
    assert provision.pvc.metadata.annotations[ANN_SELECTED_NODE] == "node-a"
    # Unreserve on the deciding replica from the imported state reverts its assumptions
    replica = CycleState()
    pl.import_state(replica, data)
    pl.unreserve(replica, pi, "node-a")
    assert pl.binder.pv_cache.assumed_keys() == [] and pl.binder.pvc_cache.assumed_keys() == []


def test_export_before_reserve_and_garbage_import_fail() -> None:
    claim = make_pvc("pvc-a", storage_class=W, request="1Gi")
    pl = make_plugin(ABC[:1], [*CLASSES, claim, local_pv("pv-a", W, "5Gi", "node-a")])
    state, pi = CycleState(), PodInfo(pod_with_claims("p", ["pvc-a"]))
    pl.pre_filter(state, pi, [])
    with pytest.raises(StateExportError, match="after Reserve"):
        pl.export_state(state)
    with pytest.raises(StateExportError, match="not a VolumeBinding state"):
        pl.import_state(CycleState(), b"\x00garbage")
    with pytest.raises(StateExportError, match="not a VolumeBinding state"):  # invalid UTF-8
        pl.import_state(CycleState(), b"\x81\xa9node_name\xa1\xff")


def test_pre_bind_without_api_client_is_an_error() -> None:
    claim = make_pvc("pvc-a", storage_class=W, request="1Gi")
    pl, state, pi = scheduled_cycle(
        [claim, local_pv("pv-a", W, "5Gi", "node-a")], ABC[:1], ["pvc-a"], "node-a"
    )
    status = asyncio.run(pl.pre_bind(state, pi, "node-a"))
    assert status is not None and status.code == Code.ERROR
    assert "needs an API client (ksched.client)" in status.message


def test_new_validates_args() -> None:
    handle = handle_for()
    assert isinstance(new(None, handle), VolumeBinding)
    with pytest.raises(ValueError, match="bindTimeoutSeconds"):
        new(VolumeBindingArgs(bind_timeout_seconds=-1), handle)
    with pytest.raises(TypeError, match="VolumeBindingArgs"):
        new(object(), handle)


# --- events and queueing hints -------------------------------------------------------------------------


def test_events_to_register() -> None:
    pl = make_plugin([], [])
    got = [(e.event.resource, e.event.action, e.hint is not None) for e in pl.events_to_register()]
    assert got == [
        (EventResource.STORAGE_CLASS, ActionType.ADD | ActionType.UPDATE, True),
        (EventResource.PERSISTENT_VOLUME_CLAIM, ActionType.ADD | ActionType.UPDATE, True),
        (EventResource.PERSISTENT_VOLUME, ActionType.ADD | ActionType.UPDATE, False),
        (EventResource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL, False),
        (EventResource.CSI_NODE, ActionType.ADD | ActionType.UPDATE, True),
        (EventResource.CSI_DRIVER, ActionType.UPDATE, True),
        (EventResource.CSI_STORAGE_CAPACITY, ActionType.ADD | ActionType.UPDATE, True),
    ]


Q, SKIP = QueueingHint.QUEUE, QueueingHint.QUEUE_SKIP
POD = pod_with_claims("pod1", ["pvc1"], namespace="ns1", volumes=[{"name": "eph", "ephemeral": {}}])


@pytest.mark.parametrize(
    ("old", "new", "want"),
    [
        (None, make_csi_node("n"), Q),
        (make_csi_node("n", migrated_plugins="a"), make_csi_node("n", migrated_plugins="a,b"), Q),
        (make_csi_node("n", {"d": 1}), make_csi_node("n", {"d": 2}), SKIP),
    ],
    ids=["created", "migrated-plugins-changed", "other-change"],
)
def test_hint_csi_node(old: CSINode | None, new: CSINode, want: QueueingHint) -> None:
    assert VolumeBinding.hint_csi_node_change(POD, old, new) == want


@pytest.mark.parametrize(
    ("claim", "want"),
    [
        (make_pvc("pvc1", namespace="ns2"), SKIP),
        (make_pvc("pvc1", namespace="ns1"), Q),
        (make_pvc("pod1-eph", namespace="ns1"), Q),
        (make_pvc("other", namespace="ns1"), SKIP),
    ],
    ids=["other-namespace", "claim-of-the-pod", "ephemeral-claim-of-the-pod", "unrelated-claim"],
)
def test_hint_pvc(claim: PersistentVolumeClaim, want: QueueingHint) -> None:
    assert VolumeBinding.hint_pvc_change(POD, None, claim) == want


@pytest.mark.parametrize(
    ("old", "new", "want"),
    [
        (None, make_sc("sc"), Q),
        (make_sc("sc"), make_sc("sc", allowed_topologies={"zone": ["a"]}), Q),
        (
            make_sc("sc", allowed_topologies={"zone": ["a"]}),
            make_sc("sc", allowed_topologies={"zone": ["a"]}),
            SKIP,
        ),
    ],
    ids=["created", "allowed-topologies-changed", "unchanged-topologies"],
)
def test_hint_storage_class(old: StorageClass | None, new: StorageClass, want: QueueingHint) -> None:
    assert VolumeBinding.hint_storage_class_change(POD, old, new) == want


@pytest.mark.parametrize(
    ("old", "new", "want"),
    [
        (None, make_capacity("c", "sc", {}, "1Gi"), Q),
        (make_capacity("c", "sc", {}, "1Gi"), make_capacity("c", "sc", {}, "2Gi"), Q),
        (make_capacity("c", "sc", {}, "2Gi"), make_capacity("c", "sc", {}, "1Gi"), SKIP),
        (make_capacity("c", "sc", {}, "10Gi", "1Gi"), make_capacity("c", "sc", {}, "20Gi", "1Gi"), SKIP),
        (make_capacity("c", "sc", {}), make_capacity("c", "sc", {}, "1Gi"), Q),
    ],
    ids=["created", "capacity-up", "capacity-down", "max-volume-size-unchanged", "limit-appeared"],
)
def test_hint_csi_storage_capacity(
    old: CSIStorageCapacity | None, new: CSIStorageCapacity, want: QueueingHint
) -> None:
    assert VolumeBinding.hint_capacity_change(POD, old, new) == want


@pytest.mark.parametrize(
    ("old", "new", "want"),
    [
        (make_csi_driver("drv", True), make_csi_driver("drv", False), Q),
        (make_csi_driver("drv", False), make_csi_driver("drv", True), SKIP),
        (make_csi_driver("other", True), make_csi_driver("other", False), SKIP),
    ],
    ids=["capacity-tracking-disabled", "capacity-tracking-enabled", "other-driver"],
)
def test_hint_csi_driver(old: CSIDriver, new: CSIDriver, want: QueueingHint) -> None:
    pod = pod_with_claims("p", volumes=[{"name": "inline", "csi": {"driver": "drv"}}])
    assert VolumeBinding.hint_csi_driver_change(pod, old, new) == want


def test_hints_reject_wrong_objects() -> None:
    with pytest.raises(TypeError):
        VolumeBinding.hint_pvc_change(POD, None, make_sc("sc"))
    with pytest.raises(TypeError):
        VolumeBinding.hint_storage_class_change(POD, None, "not-a-storage-class")
