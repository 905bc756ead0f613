"""VolumeBinder tests ported from upstream ``binder_test.go`` (FindPodVolumes without / with
provisioning, with CSI migration, AssumePodVolumes, RevertAssumedPodVolumes, FindAssumeVolumes,
Capacity). Check against 1.36.2: capacity checking is always on (no CSIStorageCapacity gate any
more), so the "with/without CSIStorageCapacity" dimension collapses to the CSIDriver variants."""

from __future__ import annotations

from dataclasses import dataclass, field

import msgspec
import pytest

from ksched.api.core import Node, PersistentVolume, PersistentVolumeClaim, Pod
from ksched.api.storage import CSIDriver, CSINode, CSIStorageCapacity
from ksched.framework.testing import FakeHandle, make_node
from ksched.plugins.helper.storage import (
    ANN_BOUND_BY_CONTROLLER,
    ANN_SELECTED_NODE,
    StorageError,
    with_annotation,
)
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
from ksched.plugins.volumebinding.binder import (
    ERR_REASON_BIND_CONFLICT,
    ERR_REASON_NODE_CONFLICT,
    ERR_REASON_NOT_ENOUGH_SPACE,
    ERR_REASON_PV_NOT_EXIST,
    BinderError,
    BindingInfo,
    DynamicProvision,
    PodVolumes,
    VolumeBinder,
)

PROVISIONER = "test-provisioner"
WAIT = "waitClass"
IMMEDIATE = "immediateClass"
WAIT_PROV = "waitClassWithProvisioner"
TOPO_MISMATCH = "topoMismatchClass"
NODE_KEY = "nodeKey"
NS = "testns"

CLASSES = [
    make_sc(WAIT_PROV, mode="WaitForFirstConsumer", provisioner=PROVISIONER,
            allowed_topologies={NODE_KEY: ["node1", "reference-value"]}),
    make_sc(IMMEDIATE, mode="Immediate"),
    make_sc(WAIT, mode="WaitForFirstConsumer", provisioner="kubernetes.io/no-provisioner"),
    make_sc(TOPO_MISMATCH, mode="WaitForFirstConsumer", provisioner=PROVISIONER,
            allowed_topologies={NODE_KEY: ["reference-value"]}),
]  # fmt: skip


def tpvc(
    name: str,
    size: str,
    *,
    state: str = "unbound",
    pv: str = "",
    rv: str = "1",
    cls: str = WAIT,
    node: str = "",
) -> PersistentVolumeClaim:
    """upstream ``makeTestPVC``: state unbound / prebound / bound / selected-node."""
    return make_pvc(
        name,
        namespace=NS,
        storage_class=cls,
        request=size,
        volume_name=pv if state in ("prebound", "bound") else "",
        bound=state == "bound",
        selected_node=node if state == "selected" else None,
        resource_version=rv,
        uid="pvc-uid",
        spec={"volumeMode": "Filesystem"},
    )


def tpv(
    name: str, node: str, capacity: str, rv: str, claim: PersistentVolumeClaim | None, cls: str
) -> PersistentVolume:
    """upstream ``makeTestPV``."""
    return make_pv(
        name,
        storage_class=cls,
        capacity=capacity,
        node_affinity={NODE_KEY: [node]} if node else None,
        claim=claim,
        resource_version=rv,
        volume_mode="Filesystem",
    )


unbound_pvc = tpvc("unbound-pvc", "1G")
unbound_pvc2 = tpvc("unbound-pvc2", "5G")
prebound_pvc = tpvc("prebound-pvc", "1G", state="prebound", pv="pv-node1a")
bound_pvc = tpvc("bound-pvc", "1G", state="bound", pv="pv-bound")
immediate_unbound_pvc = tpvc("immediate-unbound-pvc", "1G", cls=IMMEDIATE)
immediate_bound_pvc = tpvc("immediate-bound-pvc", "1G", state="bound", pv="pv-bound-immediate", cls=IMMEDIATE)
provisioned_pvc = tpvc("provisioned-pvc", "1Gi", cls=WAIT_PROV)
provisioned_pvc2 = tpvc("provisioned-pvc2", "1Gi", cls=WAIT_PROV)
provisioned_pvc_higher_version = tpvc("provisioned-pvc2", "1Gi", rv="2", cls=WAIT_PROV)
no_provisioner_pvc = tpvc("no-provisioner-pvc", "1Gi")
topo_mismatch_pvc = tpvc("topo-mismatch-pvc", "1Gi", cls=TOPO_MISMATCH)
selected_node_pvc = tpvc("provisioned-pvc", "1Gi", state="selected", node="node1", cls=WAIT_PROV)
bound_migration_pvc = tpvc("pvc-migration-bound", "1G", state="bound", pv="pv-migration-bound")

pv_node1a = tpv("pv-node1a", "node1", "5G", "1", None, WAIT)
pv_node1b = tpv("pv-node1b", "node1", "10G", "1", None, WAIT)
pv_node1c = tpv("pv-node1b", "node1", "5G", "1", None, WAIT)
pv_node2 = tpv("pv-node2", "node2", "1G", "1", None, WAIT)
pv_bound = tpv("pv-bound", "node1", "1G", "1", bound_pvc, WAIT)
pv_node1a_bound = tpv("pv-node1a", "node1", "5G", "1", unbound_pvc, WAIT)
pv_node1b_bound = tpv("pv-node1b", "node1", "10G", "1", unbound_pvc2, WAIT)
pv_bound_immediate = tpv("pv-bound-immediate", "node1", "1G", "1", immediate_bound_pvc, IMMEDIATE)
pv_bound_immediate_node2 = tpv("pv-bound-immediate", "node2", "1G", "1", immediate_bound_pvc, IMMEDIATE)

ZONE1_LABELS = {
    "failure-domain.beta.kubernetes.io/zone": "us-east-1",
    "failure-domain.beta.kubernetes.io/region": "us-east-1a",
}


def migration_pv(claim: PersistentVolumeClaim) -> PersistentVolume:
    """upstream ``makeTestPVForCSIMigration``: an in-tree GCE PD PV with zone labels only."""
    raw = msgspec.to_builtins(tpv("pv-migration-bound", "", "1G", "1", claim, WAIT))
    raw["metadata"]["labels"] = dict(ZONE1_LABELS)
    raw["spec"]["gcePersistentDisk"] = {"pdName": "test-disk", "fsType": "ext4"}
    return msgspec.convert(raw, PersistentVolume)


node1 = make_node("node1", labels={NODE_KEY: "node1"})
node2 = make_node("node2", labels={NODE_KEY: "node2"})
node1_zone1 = make_node("node1", labels={"topology.gke.io/zone": "us-east-1"})
node1_zone2 = make_node("node1", labels={"topology.gke.io/zone": "us-east-2"})


@dataclass
class Env:
    handle: FakeHandle
    binder: VolumeBinder = field(init=False)

    def __post_init__(self) -> None:
        self.binder = VolumeBinder(lambda: self.handle.snapshot.objects)


def env_with(
    pvs: list[PersistentVolume] = (),  # type: ignore[assignment]
    pvcs: list[PersistentVolumeClaim] = (),  # type: ignore[assignment]
    *,
    csi_driver: CSIDriver | None = None,
    capacities: list[CSIStorageCapacity] = (),  # type: ignore[assignment]
    csi_nodes: list[CSINode] = (),  # type: ignore[assignment]
) -> Env:
    objects: list[object] = [*CLASSES, *pvs, *pvcs, *capacities, *csi_nodes]
    if csi_driver is not None:
        objects.append(csi_driver)
    return Env(handle_for(objects=objects))


def make_test_pod(pvcs: list[PersistentVolumeClaim]) -> Pod:
    return pod_with_claims("test-pod", [p.metadata.name for p in pvcs], namespace=NS, node_name="node1")


def find_pod_volumes(binder: VolumeBinder, pod: Pod, node: Node) -> tuple[PodVolumes, list[str]]:
    """upstream test helper: GetPodVolumeClaims, unbound immediate claims are an error, FindPodVolumes."""
    claims = binder.get_pod_volume_claims(pod)
    if claims.unbound_claims_immediate:
        raise BinderError("pod has unbound immediate PersistentVolumeClaims")
    return binder.find_pod_volumes(pod, claims, node)


def binding(pvc: PersistentVolumeClaim, pv: PersistentVolume) -> BindingInfo:
    return BindingInfo(pvc=pvc, pv=pv)


def check(
    got: tuple[PodVolumes, list[str]] | None,
    err: Exception | None,
    *,
    should_fail: bool,
    reasons: list[str],
    bindings: list[BindingInfo] | None,
    provisions: list[PersistentVolumeClaim] | None,
) -> None:
    if should_fail:
        assert err is not None, "returned success but expected error"
        return
    assert err is None, f"returned error: {err}"
    assert got is not None
    pod_volumes, got_reasons = got
    assert sorted(got_reasons) == sorted(reasons)
    assert pod_volumes.static_bindings == bindings
    got_prov = (
        None if pod_volumes.dynamic_provisions is None else [p.pvc for p in pod_volumes.dynamic_provisions]
    )
    assert got_prov == provisions


def run_find(env: Env, pod: Pod, node: Node) -> tuple[tuple[PodVolumes, list[str]] | None, Exception | None]:
    try:
        return find_pod_volumes(env.binder, pod, node), None
    except (BinderError, StorageError) as exc:
        return None, exc


# --- FindPodVolumes without provisioning ---------------------------------------------------------------


@dataclass
class Scenario:
    pvs: list[PersistentVolume] = field(default_factory=list)
    pod_pvcs: list[PersistentVolumeClaim] = field(default_factory=list)
    cache_pvcs: list[PersistentVolumeClaim] | None = None
    pod: Pod | None = None
    bindings: list[BindingInfo] | None = None
    provisions: list[PersistentVolumeClaim] | None = None
    reasons: list[str] = field(default_factory=list)
    should_fail: bool = False
    needs_capacity: bool = False


EPHEMERAL_POD = pod_with_claims(
    "test-pod",
    namespace=NS,
    node_name="node1",
    uid="test-pod-uid",
    volumes=[{"name": "test-volume", "ephemeral": {}}],
)
correct_generic_pvc = make_pvc(
    "test-pod-test-volume", namespace=NS, storage_class=IMMEDIATE, request="1G", volume_name="pv-bound",
    bound=True, resource_version="1", owner=EPHEMERAL_POD,
)  # fmt: skip
conflicting_generic_pvc = make_pvc(
    "test-pod-test-volume", namespace=NS, storage_class=IMMEDIATE, request="1G", volume_name="pv-bound",
    bound=True, resource_version="1",
)  # fmt: skip
pv_bound_generic = tpv("pv-bound", "node1", "1G", "1", correct_generic_pvc, WAIT)

WITHOUT_PROVISIONING = {
    "no-volumes": Scenario(pod=pod_with_claims("test-pod", namespace=NS, node_name="node1")),
    "no-pvcs": Scenario(
        pod=pod_with_claims(
            "test-pod", namespace=NS, node_name="node1", volumes=[{"name": "e", "emptyDir": {}}]
        )
    ),
    "pvc-not-found": Scenario(cache_pvcs=[], pod_pvcs=[bound_pvc], should_fail=True),
    "bound-pvc": Scenario(pod_pvcs=[bound_pvc], pvs=[pv_bound]),
    "bound-pvc,pv-not-exists": Scenario(pod_pvcs=[bound_pvc], reasons=[ERR_REASON_PV_NOT_EXIST]),
    "prebound-pvc": Scenario(pod_pvcs=[prebound_pvc], pvs=[pv_node1a_bound], should_fail=True),
    "unbound-pvc,pv-same-node": Scenario(
        pod_pvcs=[unbound_pvc],
        pvs=[pv_node2, pv_node1a, pv_node1b],
        bindings=[binding(unbound_pvc, pv_node1a)],
    ),
    "unbound-pvc,pv-different-node": Scenario(
        pod_pvcs=[unbound_pvc], pvs=[pv_node2], reasons=[ERR_REASON_BIND_CONFLICT]
    ),
    "two-unbound-pvcs": Scenario(
        pod_pvcs=[unbound_pvc, unbound_pvc2],
        pvs=[pv_node1a, pv_node1b],
        bindings=[binding(unbound_pvc, pv_node1a), binding(unbound_pvc2, pv_node1b)],
    ),
    "two-unbound-pvcs,order-by-size": Scenario(
        pod_pvcs=[unbound_pvc2, unbound_pvc],
        pvs=[pv_node1a, pv_node1b],
        bindings=[binding(unbound_pvc, pv_node1a), binding(unbound_pvc2, pv_node1b)],
    ),
    "two-unbound-pvcs,partial-match": Scenario(
        pod_pvcs=[unbound_pvc, unbound_pvc2],
        pvs=[pv_node1a],
        bindings=[binding(unbound_pvc, pv_node1a)],
        reasons=[ERR_REASON_BIND_CONFLICT],
    ),
    "one-bound,one-unbound": Scenario(
        pod_pvcs=[unbound_pvc, bound_pvc],
        pvs=[pv_bound, pv_node1a],
        bindings=[binding(unbound_pvc, pv_node1a)],
    ),
    "one-bound,one-unbound,no-match": Scenario(
        pod_pvcs=[unbound_pvc, bound_pvc], pvs=[pv_bound, pv_node2], reasons=[ERR_REASON_BIND_CONFLICT]
    ),
    "one-prebound,one-unbound": Scenario(
        pod_pvcs=[unbound_pvc, prebound_pvc], pvs=[pv_node1a, pv_node1b], should_fail=True
    ),
    "immediate-bound-pvc": Scenario(pod_pvcs=[immediate_bound_pvc], pvs=[pv_bound_immediate]),
    "immediate-bound-pvc-wrong-node": Scenario(
        pod_pvcs=[immediate_bound_pvc], pvs=[pv_bound_immediate_node2], reasons=[ERR_REASON_NODE_CONFLICT]
    ),
    "immediate-unbound-pvc": Scenario(pod_pvcs=[immediate_unbound_pvc], should_fail=True),
    "immediate-unbound-pvc,delayed-mode-bound": Scenario(
        pod_pvcs=[immediate_unbound_pvc, bound_pvc], pvs=[pv_bound], should_fail=True
    ),
    "immediate-unbound-pvc,delayed-mode-unbound": Scenario(
        pod_pvcs=[immediate_unbound_pvc, unbound_pvc], should_fail=True
    ),
    "generic-ephemeral,no-pvc": Scenario(pod=EPHEMERAL_POD, cache_pvcs=[], should_fail=True),
    "generic-ephemeral,with-pvc": Scenario(
        pod=EPHEMERAL_POD, cache_pvcs=[correct_generic_pvc], pvs=[pv_bound_generic]
    ),
    "generic-ephemeral,wrong-pvc": Scenario(
        pod=EPHEMERAL_POD, cache_pvcs=[conflicting_generic_pvc], pvs=[pv_bound_generic], should_fail=True
    ),
}

CSI_DRIVERS = {
    "no CSIDriver": None,
    "CSIDriver with capacity tracking": make_csi_driver(PROVISIONER, True),
    "CSIDriver without capacity tracking": make_csi_driver(PROVISIONER, False),
}


@pytest.mark.parametrize("driver", list(CSI_DRIVERS), ids=list(CSI_DRIVERS))
@pytest.mark.parametrize("name", list(WITHOUT_PROVISIONING), ids=list(WITHOUT_PROVISIONING))
def test_find_pod_volumes_without_provisioning(name: str, driver: str) -> None:
    sc = WITHOUT_PROVISIONING[name]
    cache_pvcs = sc.pod_pvcs if sc.cache_pvcs is None else sc.cache_pvcs
    env = env_with(sc.pvs, cache_pvcs, csi_driver=CSI_DRIVERS[driver])
    pod = sc.pod if sc.pod is not None else make_test_pod(sc.pod_pvcs)
    got, err = run_find(env, pod, node1)
    check(got, err, should_fail=sc.should_fail, reasons=sc.reasons, bindings=sc.bindings, provisions=None)


# --- FindPodVolumes with provisioning -------------------------------------------------------------------

WITH_PROVISIONING = {
    "one-provisioned": Scenario(
        pod_pvcs=[provisioned_pvc], provisions=[provisioned_pvc], needs_capacity=True
    ),
    "two-unbound-pvcs,one-matched,one-provisioned": Scenario(
        pod_pvcs=[unbound_pvc, provisioned_pvc],
        pvs=[pv_node1a],
        bindings=[binding(unbound_pvc, pv_node1a)],
        provisions=[provisioned_pvc],
        needs_capacity=True,
    ),
    "one-bound,one-provisioned": Scenario(
        pod_pvcs=[bound_pvc, provisioned_pvc],
        pvs=[pv_bound],
        provisions=[provisioned_pvc],
        needs_capacity=True,
    ),
    "one-binding,one-selected-node": Scenario(
        pod_pvcs=[bound_pvc, selected_node_pvc],
        pvs=[pv_bound],
        provisions=[selected_node_pvc],
        needs_capacity=True,
    ),
    "immediate-unbound-pvc": Scenario(pod_pvcs=[immediate_unbound_pvc], should_fail=True),
    "one-immediate-bound,one-provisioned": Scenario(
        pod_pvcs=[immediate_bound_pvc, provisioned_pvc],
        pvs=[pv_bound_immediate],
        provisions=[provisioned_pvc],
        needs_capacity=True,
    ),
    "invalid-provisioner": Scenario(pod_pvcs=[no_provisioner_pvc], reasons=[ERR_REASON_BIND_CONFLICT]),
    "volume-topology-unsatisfied": Scenario(pod_pvcs=[topo_mismatch_pvc], reasons=[ERR_REASON_BIND_CONFLICT]),
}


@pytest.mark.parametrize("driver", list(CSI_DRIVERS), ids=list(CSI_DRIVERS))
@pytest.mark.parametrize("name", list(WITH_PROVISIONING), ids=list(WITH_PROVISIONING))
def test_find_pod_volumes_with_provisioning(name: str, driver: str) -> None:
    sc = WITH_PROVISIONING[name]
    csi_driver = CSI_DRIVERS[driver]
    env = env_with(sc.pvs, sc.pod_pvcs, csi_driver=csi_driver)
    got, err = run_find(env, make_test_pod(sc.pod_pvcs), node1)
    reasons, provisions = list(sc.reasons), sc.provisions
    if sc.needs_capacity and csi_driver is not None and csi_driver.spec.storage_capacity:
        # without CSIStorageCapacity objects, provisioning is blocked
        reasons.append(ERR_REASON_NOT_ENOUGH_SPACE)
        provisions = None
    check(got, err, should_fail=sc.should_fail, reasons=reasons, bindings=sc.bindings, provisions=provisions)


# --- FindPodVolumes with CSI migration -------------------------------------------------------------------

CSI_NODE1_MIGRATED = make_csi_node("node1", migrated_plugins="kubernetes.io/gce-pd")
CSI_NODE1_NOT_MIGRATED = make_csi_node("node1", migrated_plugins="")


@pytest.mark.parametrize(
    ("node", "csi_nodes", "reasons"),
    [
        (node1_zone1, [CSI_NODE1_MIGRATED], []),
        (node1_zone1, [CSI_NODE1_NOT_MIGRATED], []),
        (node1_zone1, [], []),
        (node1_zone2, [CSI_NODE1_MIGRATED], [ERR_REASON_NODE_CONFLICT]),
    ],
    ids=[
        "pvc-bound",
        "pvc-bound,csinode-not-migrated",
        "pvc-bound,missing-csinode",
        "pvc-bound,node-different-zone",
    ],
)
def test_find_pod_volumes_with_csi_migration(
    node: Node, csi_nodes: list[CSINode], reasons: list[str]
) -> None:
    env = env_with([migration_pv(bound_migration_pvc)], [bound_migration_pvc], csi_nodes=csi_nodes)
    got, err = run_find(env, make_test_pod([bound_migration_pvc]), node)
    assert err is None
    assert got is not None and got[1] == reasons


# --- AssumePodVolumes ----------------------------------------------------------------------------------


@dataclass
class AssumeScenario:
    pod_pvcs: list[PersistentVolumeClaim]
    pvs: list[PersistentVolume]
    bindings: list[BindingInfo] = field(default_factory=list)
    provisioned: list[PersistentVolumeClaim] = field(default_factory=list)
    should_fail: bool = False
    all_bound: bool = False
    expected_bindings: list[BindingInfo] | None = None
    expected_provisionings: list[PersistentVolumeClaim] | None = None


ASSUME = {
    "all-bound": AssumeScenario(pod_pvcs=[bound_pvc], pvs=[pv_bound], all_bound=True),
    "one-binding": AssumeScenario(
        pod_pvcs=[unbound_pvc],
        bindings=[binding(unbound_pvc, pv_node1a)],
        pvs=[pv_node1a],
        expected_bindings=[binding(unbound_pvc, pv_node1a_bound)],
        expected_provisionings=[],
    ),
    "two-bindings": AssumeScenario(
        pod_pvcs=[unbound_pvc, unbound_pvc2],
        bindings=[binding(unbound_pvc, pv_node1a), binding(unbound_pvc2, pv_node1b)],
        pvs=[pv_node1a, pv_node1b],
        expected_bindings=[binding(unbound_pvc, pv_node1a_bound), binding(unbound_pvc2, pv_node1b_bound)],
        expected_provisionings=[],
    ),
    "pv-already-bound": AssumeScenario(
        pod_pvcs=[unbound_pvc],
        bindings=[binding(unbound_pvc, pv_node1a_bound)],
        pvs=[pv_node1a_bound],
        expected_bindings=[binding(unbound_pvc, pv_node1a_bound)],
        expected_provisionings=[],
    ),
    "tmpupdate-failed": AssumeScenario(
        pod_pvcs=[unbound_pvc],
        bindings=[binding(unbound_pvc, pv_node1a), binding(unbound_pvc2, pv_node1b)],
        pvs=[pv_node1a],
        should_fail=True,
    ),
    "one-binding, one-pvc-provisioned": AssumeScenario(
        pod_pvcs=[unbound_pvc, provisioned_pvc],
        bindings=[binding(unbound_pvc, pv_node1a)],
        pvs=[pv_node1a],
        provisioned=[provisioned_pvc],
        expected_bindings=[binding(unbound_pvc, pv_node1a_bound)],
        expected_provisionings=[selected_node_pvc],
    ),
    "one-binding, one-provision-tmpupdate-failed": AssumeScenario(
        pod_pvcs=[unbound_pvc, provisioned_pvc_higher_version],
        bindings=[binding(unbound_pvc, pv_node1a)],
        pvs=[pv_node1a],
        provisioned=[provisioned_pvc2],
        should_fail=True,
    ),
}


def validate_assume(
    env: Env, bindings: list[BindingInfo], provisionings: list[PersistentVolumeClaim]
) -> None:
    for b in bindings:
        pv = env.binder.pv_cache.get(b.pv.metadata.name)
        ref = pv.spec.claim_ref
        assert ref is not None
        assert (ref.name, ref.namespace) == (b.pvc.metadata.name, b.pvc.metadata.namespace)
    for p in provisionings:
        pvc = env.binder.pvc_cache.get(f"{p.metadata.namespace}/{p.metadata.name}")
        assert pvc.metadata.annotations.get(ANN_SELECTED_NODE) == "node1"


def validate_cache_restored(
    env: Env, bindings: list[BindingInfo], provisionings: list[PersistentVolumeClaim]
) -> None:
    for b in bindings:
        name = b.pv.metadata.name
        if name in env.handle.snapshot.objects.persistent_volumes:
            assert env.binder.pv_cache.get(name) is env.binder.pv_cache.get_api_obj(name)
    for p in provisionings:
        pvc = env.binder.pvc_cache.get(f"{p.metadata.namespace}/{p.metadata.name}")
        assert ANN_SELECTED_NODE not in pvc.metadata.annotations


@pytest.mark.parametrize("name", list(ASSUME), ids=list(ASSUME))
def test_assume_pod_volumes(name: str) -> None:
    sc = ASSUME[name]
    env = env_with(sc.pvs, sc.pod_pvcs)
    pod = make_test_pod(sc.pod_pvcs)
    pod_volumes = PodVolumes(
        static_bindings=list(sc.bindings),
        dynamic_provisions=[DynamicProvision(pvc=p) for p in sc.provisioned],
    )
    try:
        all_bound = env.binder.assume_pod_volumes(pod, "node1", pod_volumes)
        err = None
    except BinderError as exc:
        all_bound, err = False, exc
    assert (err is not None) == sc.should_fail
    assert all_bound == sc.all_bound
    expected_bindings = sc.bindings if sc.expected_bindings is None else sc.expected_bindings
    expected_prov = sc.provisioned if sc.expected_provisionings is None else sc.expected_provisionings
    if sc.should_fail:
        validate_cache_restored(env, sc.bindings, sc.provisioned)
    else:
        validate_assume(env, expected_bindings, expected_prov)
    assert pod_volumes.static_bindings == expected_bindings
    assert [p.pvc for p in pod_volumes.dynamic_provisions or []] == expected_prov


def test_revert_assumed_pod_volumes() -> None:
    env = env_with([pv_node1a], [unbound_pvc, provisioned_pvc])
    pod = make_test_pod([unbound_pvc, provisioned_pvc])
    pod_volumes = PodVolumes(
        static_bindings=[binding(unbound_pvc, pv_node1a)],
        dynamic_provisions=[DynamicProvision(pvc=provisioned_pvc)],
    )
    assert env.binder.assume_pod_volumes(pod, "node1", pod_volumes) is False
    validate_assume(env, [binding(unbound_pvc, pv_node1a_bound)], [selected_node_pvc])
    assert env.binder.pv_cache.get("pv-node1a") == pv_node1a_bound
    env.binder.revert_assumed_pod_volumes(pod_volumes)
    validate_cache_restored(env, [binding(unbound_pvc, pv_node1a)], [provisioned_pvc])
    assert env.binder.pv_cache.get("pv-node1a") is pv_node1a


def test_find_assume_volumes() -> None:
    """Once assumed, FindPodVolumes keeps choosing the same (now pre-bound) PV."""
    env = env_with([pv_node2, pv_node1a, pv_node1c], [unbound_pvc])
    pod = make_test_pod([unbound_pvc])
    pod_volumes, reasons = find_pod_volumes(env.binder, pod, node1)
    assert reasons == []
    assert env.binder.assume_pod_volumes(pod, "node1", pod_volumes) is False
    expected = pod_volumes.static_bindings
    assert expected is not None and expected[0].pv.metadata.annotations[ANN_BOUND_BY_CONTROLLER] == "yes"
    validate_assume(env, expected, [])
    for _ in range(50):
        again, reasons = find_pod_volumes(env.binder, pod, node1)
        assert reasons == []
        assert again.static_bindings == expected


def test_assumed_version_expires_when_the_informer_moves_on() -> None:
    """An assumed PV is served while the informed object keeps its resourceVersion only."""
    env = env_with([pv_node1a], [unbound_pvc])
    pod = make_test_pod([unbound_pvc])
    pod_volumes = PodVolumes(static_bindings=[binding(unbound_pvc, pv_node1a)], dynamic_provisions=[])
    env.binder.assume_pod_volumes(pod, "node1", pod_volumes)
    assert env.binder.pv_cache.get("pv-node1a").spec.claim_ref is not None
    newer = msgspec.structs.replace(
        pv_node1a, metadata=msgspec.structs.replace(pv_node1a.metadata, resource_version="7")
    )
    env.handle.snapshot.objects.put(newer)
    assert env.binder.pv_cache.get("pv-node1a") is newer
    assert env.binder.pv_cache.assumed_keys() == []


# --- Capacity ----------------------------------------------------------------------------------------

CAPACITY = {
    "network-attached": ([make_capacity("net", WAIT_PROV, None, "1Gi")], []),
    "local-storage": ([make_capacity("net", WAIT_PROV, {NODE_KEY: "node1"}, "1Gi")], []),
    "multiple": (
        [
            make_capacity("net", WAIT_PROV, None, "1Gi"),
            make_capacity("net2", WAIT_PROV, {NODE_KEY: "node2"}, "1Gi"),
            make_capacity("net3", WAIT_PROV, {NODE_KEY: "node1"}, "1Gi"),
        ],
        [],
    ),
    "no-storage": ([], [ERR_REASON_NOT_ENOUGH_SPACE]),
    "wrong-node": (
        [make_capacity("net", WAIT_PROV, {NODE_KEY: "node2"}, "1Gi")],
        [ERR_REASON_NOT_ENOUGH_SPACE],
    ),
    "wrong-storage-class": (
        [make_capacity("net", WAIT, {NODE_KEY: "node1"}, "1Gi")],
        [ERR_REASON_NOT_ENOUGH_SPACE],
    ),
    "insufficient-storage": (
        [make_capacity("net", WAIT_PROV, {NODE_KEY: "node1"}, "1Mi")],
        [ERR_REASON_NOT_ENOUGH_SPACE],
    ),
    "insufficient-volume-size": (
        [make_capacity("net", WAIT_PROV, {NODE_KEY: "node1"}, "1Gi", "1Mi")],
        [ERR_REASON_NOT_ENOUGH_SPACE],
    ),
    "zero-storage": (
        [make_capacity("net", WAIT_PROV, {NODE_KEY: "node1"}, "0Mi")],
        [ERR_REASON_NOT_ENOUGH_SPACE],
    ),
    "zero-volume-size": (
        [make_capacity("net", WAIT_PROV, {NODE_KEY: "node1"}, "", "0Mi")],
        [ERR_REASON_NOT_ENOUGH_SPACE],
    ),
    "nil-storage": ([make_capacity("net", WAIT_PROV, {NODE_KEY: "node1"})], [ERR_REASON_NOT_ENOUGH_SPACE]),
}


@pytest.mark.parametrize("opt_in", [True, False], ids=["CSIDriver.StorageCapacity=true", "=false"])
@pytest.mark.parametrize("name", list(CAPACITY), ids=list(CAPACITY))
def test_capacity(name: str, opt_in: bool) -> None:
    capacities, reasons = CAPACITY[name]
    env = env_with(
        [], [provisioned_pvc], csi_driver=make_csi_driver(PROVISIONER, opt_in), capacities=capacities
    )
    pod_volumes, got = find_pod_volumes(env.binder, make_test_pod([provisioned_pvc]), node1)
    expected = reasons if opt_in else []
    assert got == expected
    provisions = [] if got else [provisioned_pvc]
    assert [p.pvc for p in pod_volumes.dynamic_provisions or []] == provisions
    if not got and opt_in:
        capacity = (pod_volumes.dynamic_provisions or [])[0].node_capacity
        assert capacity is not None and capacity.storage_class_name == WAIT_PROV


def test_assume_keeps_selected_node_annotation_on_a_copy() -> None:
    """Reserve must not modify the informer's object (upstream DeepCopies before annotating)."""
    env = env_with([], [provisioned_pvc])
    pod_volumes = PodVolumes(static_bindings=[], dynamic_provisions=[DynamicProvision(pvc=provisioned_pvc)])
    env.binder.assume_pod_volumes(make_test_pod([provisioned_pvc]), "node1", pod_volumes)
    assert ANN_SELECTED_NODE not in provisioned_pvc.metadata.annotations
    assert (pod_volumes.dynamic_provisions or [])[0].pvc == with_annotation(
        provisioned_pvc, ANN_SELECTED_NODE, "node1"
    )
