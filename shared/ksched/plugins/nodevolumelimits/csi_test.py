"""NodeVolumeLimits tests ported from upstream ``csi_test.go`` (TestCSILimits and the queueing-hint
tables). NotFound texts are the informer listers' (``persistentvolumeclaim "x" not found``), not the
fake listers' (``persistentvolumeclaims``). In 1.36 CSI migration of AWS EBS / GCE PD / Azure Disk /
Cinder / Portworx counts whenever the node has a CSINode (the migrated-plugins annotation is not read
here), so ``migrationEnabled`` needs no setup. VolumeAttachments are given through an object table
named ``volume_attachments`` (ksched's ClusterObjects has none yet)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import msgspec
import pytest

from ksched.api.core import Pod
from ksched.api.storage import CSINode
from ksched.framework.cycle_state import CycleState
from ksched.framework.events import ActionType, EventResource, QueueingHint
from ksched.framework.nodeinfo import NodeInfo
from ksched.framework.podinfo import PodInfo
from ksched.framework.status import Code, Status
from ksched.framework.testing import make_node, make_pod
from ksched.plugins.helper.testing import (
    handle_for,
    make_csi_node,
    make_pv,
    make_pvc,
    make_sc,
    pod_with_claims,
)
from ksched.plugins.nodevolumelimits import ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED, CSILimits, new
from ksched.plugins.nodevolumelimits.csi import NodeVolumeLimitsFeatures

EBS = "ebs.csi.aws.com"
GCE = "pd.csi.storage.gke.io"
EBS_IN_TREE = "kubernetes.io/aws-ebs"
HOSTPATH_IN_TREE = "kubernetes.io/hostpath"
SC_NAME = "csi-sc"
NODE = "node-for-max-pd-test-1"
EXCEEDED = Status.unschedulable(ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED)


class VolumeAttachmentSource(msgspec.Struct):
    persistent_volume_name: str | None = None


class VolumeAttachmentSpec(msgspec.Struct):
    attacher: str
    node_name: str
    source: VolumeAttachmentSource


class VolumeAttachment(msgspec.Struct):
    """A stand-in for storage.k8s.io/v1 VolumeAttachment (not in ksched's object model yet)."""

    name: str
    spec: VolumeAttachmentSpec


def pvc_pod(*claims: str) -> Pod:
    return pod_with_claims("p", claims)


def inline_pod(volume: dict[str, Any], *extra: dict[str, Any]) -> Pod:
    return make_pod("inline", spec={"volumes": [{"name": "v0", **volume}, *extra]})


running_pod = pvc_pod(f"csi-{EBS}-3")
pending_volume_pod = pvc_pod("csi-4")
unbound_pvc_pod2 = pvc_pod("csi-4")
missing_pv_pod = pvc_pod("csi-6")
no_sc_pvc_pod = pvc_pod("csi-5")
gce_two_vol_pod = pvc_pod(f"csi-{GCE}-1", f"csi-{GCE}-2")
in_tree_one_vol_pod = pvc_pod(f"csi-{EBS_IN_TREE}-0")
in_tree_two_vol_pod = pvc_pod(f"csi-{EBS_IN_TREE}-1", f"csi-{EBS_IN_TREE}-2")
csi_ebs_one_vol_pod = pvc_pod(f"csi-{EBS}-0")
csi_ebs_two_vol_pod = pvc_pod(f"csi-{EBS}-1", f"csi-{EBS}-2")
in_tree_non_migratable_one_vol_pod = pvc_pod(f"csi-{HOSTPATH_IN_TREE}-0")
ephemeral_volume_pod = make_pod(
    "abc", "test", uid="12345", spec={"volumes": [{"name": "xyz", "ephemeral": {}}]}
)
ephemeral_claim = make_pvc("abc-xyz", namespace="test", storage_class=SC_NAME, owner=ephemeral_volume_pod)
conflicting_claim = make_pvc("abc-xyz", namespace="test", storage_class=SC_NAME)
ephemeral_two_volume_pod = make_pod(
    "abc",
    "test",
    uid="12345II",
    spec={"volumes": [{"name": "x", "ephemeral": {}}, {"name": "y", "ephemeral": {}}]},
)
ephemeral_claim_x = make_pvc("abc-x", namespace="test", storage_class=SC_NAME, owner=ephemeral_two_volume_pod)
ephemeral_claim_y = make_pvc("abc-y", namespace="test", storage_class=SC_NAME, owner=ephemeral_two_volume_pod)
in_tree_inline_vol_pod = inline_pod({"awsElasticBlockStore": {"volumeID": "aws-inline1"}})
in_tree_inline_vol_pod_same_csi_volume_id = inline_pod({"awsElasticBlockStore": {"volumeID": f"csi-{EBS}-1"}})
CONFIGMAP_SECRET = [{"name": "cm", "configMap": {}}, {"name": "s", "secret": {}}]
only_configmap_and_secret_vol_pod = make_pod("cms", spec={"volumes": CONFIGMAP_SECRET})
pvc_pod_with_configmap_and_secret = make_pod(
    "cms",
    spec={
        "volumes": [
            *CONFIGMAP_SECRET,
            {"name": "pvc", "persistentVolumeClaim": {"claimName": f"csi-{EBS}-0"}},
        ]
    },
)
ephemeral_pod_with_configmap_and_secret = make_pod(
    "abc", "test", spec={"volumes": [*CONFIGMAP_SECRET, {"name": "xyz", "ephemeral": {}}]}
)
inline_migratable_pod_with_configmap_and_secret = make_pod(
    "cms",
    spec={
        "volumes": [*CONFIGMAP_SECRET, {"name": "ebs", "awsElasticBlockStore": {"volumeID": "aws-inline1"}}]
    },
)


def fake_pvs(drivers: list[str]) -> list[Any]:
    out = []
    for driver in drivers:
        for j in range(4):
            handle = f"csi-{driver}-{j}"
            if driver == EBS_IN_TREE:
                spec: dict[str, Any] = {"awsElasticBlockStore": {"volumeID": handle}}
            elif driver == HOSTPATH_IN_TREE:
                spec = {"hostPath": {"path": "/tmp"}}
            else:
                spec = {"csi": {"driver": driver, "volumeHandle": handle}}
            out.append(make_pv(handle, phase=None, spec=spec))
    return out


def fake_pvcs(drivers: list[str]) -> list[Any]:
    out = [make_pvc(f"csi-{d}-{j}", volume_name=f"csi-{d}-{j}") for d in drivers for j in range(4)]
    out.append(make_pvc("csi-4", storage_class=SC_NAME))
    out.append(make_pvc("csi-5"))
    out.append(make_pvc("csi-6", storage_class=SC_NAME, volume_name="missing-in-action"))
    return out


def attachments(count: int, drivers: list[str]) -> dict[str, VolumeAttachment]:
    out = {}
    for driver in drivers:
        for j in range(count):
            name = f"va-{driver}-{j}"
            source = VolumeAttachmentSource(persistent_volume_name=f"csi-{driver}-{j}")
            out[name] = VolumeAttachment(name, VolumeAttachmentSpec(driver, NODE, source))
    return out


def csi_node_for(limit_source: str, limit: int, drivers: list[str]) -> CSINode | None:
    if limit_source == "csinode":
        return make_csi_node(NODE, dict.fromkeys(drivers, limit))
    if limit_source == "csinode-with-no-limit":
        return make_csi_node(NODE, dict.fromkeys(drivers, None))
    if limit_source == "no-csi-driver":
        return make_csi_node(NODE)
    return None


@dataclass
class Case:
    new_pod: Pod
    drivers: list[str]
    existing: list[Pod] = field(default_factory=list)
    extra_claims: list[Any] = field(default_factory=list)
    max_vols: int = 0
    va_count: int = 0
    limit_source: str = ""
    want: Status | None = None
    want_pre_filter: Status | None = None


CASES: dict[str, Case] = {
    "should count VolumeAttachments towards volume limit when no pods exist": Case(
        csi_ebs_one_vol_pod, [EBS], max_vols=2, va_count=2, limit_source="csinode", want=EXCEEDED
    ),
    "should schedule pod when VolumeAttachments count does not exceed limit": Case(
        csi_ebs_one_vol_pod, [EBS], max_vols=2, va_count=1, limit_source="csinode"
    ),
    "fits when node volume limit >= new pods CSI volume": Case(
        csi_ebs_one_vol_pod, [EBS], [running_pod, csi_ebs_two_vol_pod], max_vols=4, limit_source="csinode"
    ),
    "doesn't when node volume limit <= pods CSI volume": Case(
        csi_ebs_one_vol_pod,
        [EBS],
        [running_pod, csi_ebs_two_vol_pod],
        max_vols=2,
        limit_source="csinode",
        want=EXCEEDED,
    ),
    "should when driver does not support volume limits": Case(
        csi_ebs_one_vol_pod,
        [EBS],
        [running_pod, csi_ebs_two_vol_pod],
        max_vols=2,
        limit_source="csinode-with-no-limit",
    ),
    "count pending PVCs towards volume limit <= pods CSI volume": Case(
        csi_ebs_one_vol_pod,
        [EBS],
        [pending_volume_pod, csi_ebs_two_vol_pod],
        max_vols=2,
        limit_source="csinode",
        want=EXCEEDED,
    ),
    "count multiple pending pvcs towards volume limit >= pods CSI volume": Case(
        csi_ebs_one_vol_pod,
        [EBS],
        [pending_volume_pod, unbound_pvc_pod2, csi_ebs_two_vol_pod],
        max_vols=4,
        limit_source="csinode",
    ),
    "should count PVCs with invalid PV name but valid SC": Case(
        csi_ebs_one_vol_pod,
        [EBS],
        [missing_pv_pod, csi_ebs_two_vol_pod],
        max_vols=2,
        limit_source="csinode",
        want=EXCEEDED,
    ),
    "don't count pvcs with missing SC towards volume limit": Case(
        csi_ebs_one_vol_pod, [EBS], [running_pod, no_sc_pvc_pod], max_vols=2, limit_source="csinode"
    ),
    "count pvcs with the same type towards volume limit": Case(
        csi_ebs_one_vol_pod,
        [EBS, GCE],
        [gce_two_vol_pod, csi_ebs_two_vol_pod],
        max_vols=2,
        limit_source="csinode",
        want=EXCEEDED,
    ),
    "don't count pvcs with different type towards volume limit": Case(
        gce_two_vol_pod, [EBS, GCE], [csi_ebs_two_vol_pod, running_pod], max_vols=2, limit_source="csinode"
    ),
    "should count in-tree volumes if migration is enabled": Case(
        in_tree_one_vol_pod,
        [EBS_IN_TREE, EBS],
        [in_tree_two_vol_pod],
        max_vols=2,
        limit_source="csinode",
        want=EXCEEDED,
    ),
    "nil csi node": Case(in_tree_inline_vol_pod, [EBS_IN_TREE, EBS], [in_tree_two_vol_pod]),
    "should count unbound in-tree volumes if migration is enabled": Case(
        pending_volume_pod,
        [EBS_IN_TREE, EBS],
        [in_tree_two_vol_pod],
        max_vols=2,
        limit_source="csinode",
        want=EXCEEDED,
    ),
    "should not limit pod if volume used does not report limits": Case(
        in_tree_one_vol_pod,
        [EBS_IN_TREE, EBS],
        [in_tree_two_vol_pod],
        max_vols=2,
        limit_source="csinode-with-no-limit",
    ),
    "should not count non-migratable in-tree volumes": Case(
        in_tree_non_migratable_one_vol_pod,
        [HOSTPATH_IN_TREE, EBS],
        [csi_ebs_two_vol_pod],
        max_vols=2,
        limit_source="csinode",
    ),
    "should count in-tree inline volumes if migration is enabled": Case(
        in_tree_inline_vol_pod,
        [EBS_IN_TREE, EBS],
        [in_tree_two_vol_pod],
        max_vols=2,
        limit_source="csinode",
        want=EXCEEDED,
    ),
    "should count in-tree and csi volumes if migration is enabled (when scheduling in-tree volumes)": Case(
        in_tree_one_vol_pod,
        [EBS_IN_TREE, EBS],
        [csi_ebs_two_vol_pod],
        max_vols=2,
        limit_source="csinode",
        want=EXCEEDED,
    ),
    "should count in-tree, inline and csi volumes if migration is enabled "
    "(when scheduling in-tree volumes)": Case(
        in_tree_inline_vol_pod,
        [EBS_IN_TREE, EBS],
        [csi_ebs_two_vol_pod, in_tree_one_vol_pod],
        max_vols=3,
        limit_source="csinode",
        want=EXCEEDED,
    ),
    "should not count in-tree, inline and csi volumes if migration is enabled "
    "(when scheduling in-tree volumes)": Case(
        in_tree_inline_vol_pod_same_csi_volume_id,
        [EBS_IN_TREE, EBS],
        [csi_ebs_two_vol_pod, in_tree_one_vol_pod],
        max_vols=3,
        limit_source="csinode",
    ),
    "should count in-tree and csi volumes if migration is enabled (when scheduling csi volumes)": Case(
        csi_ebs_one_vol_pod,
        [EBS_IN_TREE, EBS],
        [in_tree_two_vol_pod],
        max_vols=2,
        limit_source="csinode",
        want=EXCEEDED,
    ),
    "ephemeral volume missing": Case(
        ephemeral_volume_pod,
        [EBS],
        limit_source="csinode-with-no-limit",
        want=Status.unresolvable('looking up PVC test/abc-xyz: persistentvolumeclaim "abc-xyz" not found'),
    ),
    "ephemeral volume not owned": Case(
        ephemeral_volume_pod,
        [EBS],
        extra_claims=[conflicting_claim],
        limit_source="csinode-with-no-limit",
        want=Status.as_error("PVC test/abc-xyz was not created for pod test/abc (pod is not owner)"),
    ),
    "ephemeral volume unbound": Case(
        ephemeral_volume_pod, [EBS], extra_claims=[ephemeral_claim], limit_source="csinode-with-no-limit"
    ),
    "ephemeral doesn't when node volume limit <= pods CSI volume": Case(
        ephemeral_volume_pod,
        [EBS],
        [running_pod, csi_ebs_two_vol_pod],
        extra_claims=[ephemeral_claim],
        max_vols=2,
        limit_source="csinode",
        want=EXCEEDED,
    ),
    "ephemeral doesn't when node volume limit <= pods ephemeral CSI volume": Case(
        csi_ebs_one_vol_pod,
        [EBS],
        [running_pod, ephemeral_two_volume_pod],
        extra_claims=[ephemeral_claim_x, ephemeral_claim_y],
        max_vols=2,
        limit_source="csinode",
        want=EXCEEDED,
    ),
    "persistent doesn't when node volume limit <= pods ephemeral CSI volume + persistent volume": Case(
        csi_ebs_one_vol_pod,
        [EBS],
        [running_pod, ephemeral_volume_pod, csi_ebs_two_vol_pod],
        extra_claims=[ephemeral_claim],
        max_vols=3,
        limit_source="csinode",
        want=EXCEEDED,
    ),
    "persistent okay when node volume limit > pods ephemeral CSI volume + persistent volume": Case(
        csi_ebs_one_vol_pod,
        [EBS],
        [running_pod, ephemeral_volume_pod, csi_ebs_two_vol_pod],
        extra_claims=[ephemeral_claim],
        max_vols=5,
        limit_source="csinode",
    ),
    "skip Filter when the pod only uses secrets and configmaps": Case(
        only_configmap_and_secret_vol_pod,
        [EBS],
        max_vols=2,
        limit_source="csinode",
        want_pre_filter=Status.skip(),
    ),
    "don't skip Filter when the pod has pvcs": Case(
        pvc_pod_with_configmap_and_secret, [EBS], max_vols=2, limit_source="csinode"
    ),
    "don't skip Filter when the pod has ephemeral volumes": Case(
        ephemeral_pod_with_configmap_and_secret,
        [EBS],
        limit_source="csinode-with-no-limit",
        want=Status.unresolvable('looking up PVC test/abc-xyz: persistentvolumeclaim "abc-xyz" not found'),
    ),
    "don't skip Filter when the pod has inline migratable volumes": Case(
        inline_migratable_pod_with_configmap_and_secret,
        [EBS_IN_TREE, EBS],
        [in_tree_two_vol_pod],
        max_vols=2,
        limit_source="csinode",
        want=EXCEEDED,
    ),
}


def plugin_for(case: Case) -> tuple[CSILimits, NodeInfo]:
    node = make_node(NODE)
    csi_node = csi_node_for(case.limit_source, case.max_vols, case.drivers)
    objects: list[Any] = [
        *fake_pvs(case.drivers),
        *fake_pvcs(case.drivers),
        *case.extra_claims,
        make_sc(SC_NAME, provisioner=case.drivers[0]),
    ]
    if csi_node is not None:
        objects.append(csi_node)
    handle = handle_for([node], objects=objects)
    handle.snapshot.objects.volume_attachments = attachments(case.va_count, case.drivers)  # type: ignore[attr-defined]
    ni = NodeInfo(node)
    for p in case.existing:
        ni.add_pod(PodInfo(p))
    return CSILimits(handle), ni


def same(got: Status | None, want: Status | None) -> bool:
    if got is None or want is None:
        return got is want
    if want.code == Code.ERROR:
        return got.code == Code.ERROR and got.message == want.message
    return got == want


@pytest.mark.parametrize("name", list(CASES), ids=list(CASES))
def test_csi_limits(name: str) -> None:
    case = CASES[name]
    pl, node = plugin_for(case)
    state, pi = CycleState(), PodInfo(case.new_pod)
    _, pre = pl.pre_filter(state, pi, [node])
    assert pre == case.want_pre_filter
    if pre is None:
        assert same(pl.filter(state, pi, node), case.want), pl.filter(state, pi, node)


def test_fidelity_shape_unique_volumes_count_once() -> None:
    """Two pods sharing one PV count it once; the limit is per driver."""
    claim = make_pvc("shared", volume_name="pv-shared")
    pv = make_pv("pv-shared", spec={"csi": {"driver": "drv", "volumeHandle": "h"}})
    other_pv = make_pv("pv-new", spec={"csi": {"driver": "drv", "volumeHandle": "h2"}})
    node = make_node("n")
    pods = [pod_with_claims(f"p{i}", ["shared"], node_name="n") for i in range(3)]
    handle = handle_for(
        [node],
        pods,
        [claim, pv, other_pv, make_pvc("new", volume_name="pv-new"), make_csi_node("n", {"drv": 2})],
    )
    pl = CSILimits(handle)
    ni = handle.snapshot.get("n")
    state = CycleState()
    assert pl.filter(state, PodInfo(pod_with_claims("q", ["new"])), ni) is None
    assert pl.filter(state, PodInfo(pod_with_claims("q", ["new", "shared"])), ni) is None
    handle.snapshot.objects.put(make_csi_node("n", {"drv": 1}))
    assert pl.filter(state, PodInfo(pod_with_claims("q", ["new"])), ni) == EXCEEDED


class _DriverSpec(msgspec.Struct):
    prevent_pod_scheduling_if_missing: bool = True


class _Driver(msgspec.Struct):
    """A CSIDriver carrying ``spec.preventPodSchedulingIfMissing`` (not in ksched's CSIDriver yet)."""

    spec: _DriverSpec


def test_volume_limit_scaling_rejects_a_missing_driver_when_the_driver_asks() -> None:
    case = CASES["fits when node volume limit >= new pods CSI volume"]
    pl, node = plugin_for(case)
    gated = CSILimits(pl._handle, NodeVolumeLimitsFeatures(volume_limit_scaling=True))
    assert gated.filter(CycleState(), PodInfo(case.new_pod), node) is None  # driver listed on the CSINode
    gated.objects.csi_drivers[GCE] = _Driver(_DriverSpec())  # type: ignore[assignment]
    gce_pod = pvc_pod(f"csi-{GCE}-0")
    gated.objects.put(make_pv(f"csi-{GCE}-0", spec={"csi": {"driver": GCE, "volumeHandle": "h"}}))
    gated.objects.put(make_pvc(f"csi-{GCE}-0", volume_name=f"csi-{GCE}-0"))
    want = Status.unschedulable(f"{GCE} CSI driver is not installed on the node")
    assert gated.filter(CycleState(), PodInfo(gce_pod), node) == want
    assert pl.filter(CycleState(), PodInfo(gce_pod), node) is None  # gate off (1.36 default)


def test_events_to_register() -> None:
    got = [
        (e.event.resource, e.event.action, e.hint is not None)
        for e in new(None, handle_for()).events_to_register()
    ]
    assert got == [
        (EventResource.CSI_NODE, ActionType.ADD, False),
        (EventResource.CSI_NODE, ActionType.UPDATE, True),
        (EventResource.POD, ActionType.DELETE, True),
        (EventResource.PERSISTENT_VOLUME_CLAIM, ActionType.ADD, True),
        (EventResource.VOLUME_ATTACHMENT, ActionType.DELETE, True),
    ]


Q, SKIP = QueueingHint.QUEUE, QueueingHint.QUEUE_SKIP
POD_EBS = pvc_pod(f"csi-{EBS}-2")


@pytest.mark.parametrize(
    ("deleted", "scheduled", "want"),
    [
        (pvc_pod("placeholder"), True, Q),
        (inline_pod({"awsElasticBlockStore": {"volumeID": ""}}), True, Q),
        (make_pod("novol"), True, SKIP),
        (pvc_pod(f"csi-{EBS}-0"), False, SKIP),
    ],
    ids=[
        "return a Queue when a deleted pod has a PVC",
        "return a Queue when a deleted pod has a inline migratable volume",
        "return a QueueSkip when a deleted pod doesn't have any volume",
        "return a QueueSkip when a deleted pod is not scheduled.",
    ],
)
def test_hint_pod_deleted(deleted: Pod, scheduled: bool, want: QueueingHint) -> None:
    deleted = msgspec.structs.replace(
        deleted, spec=msgspec.structs.replace(deleted.spec, node_name=NODE if scheduled else "")
    )
    assert CSILimits.hint_pod_deleted(POD_EBS, deleted, None) == want


@pytest.mark.parametrize(
    ("pod", "claim", "want"),
    [
        (make_pod("p", "ns1"), make_pvc("x", namespace="ns2"), SKIP),
        (pod_with_claims("p", ["pvc1"], namespace="ns1"), make_pvc("pvc1", namespace="ns1"), Q),
        (
            make_pod("pod1", "ns1", spec={"volumes": [{"name": "ephemeral", "ephemeral": {}}]}),
            make_pvc("pod1-ephemeral", namespace="ns1"),
            Q,
        ),
        (pod_with_claims("p", ["pvc1"], namespace="ns1"), make_pvc("pvc2", namespace="ns1"), SKIP),
        (make_pod("p", "ns1"), make_pvc("pvc2", namespace="ns1"), SKIP),
    ],
    ids=[
        "a pod isn't in the same namespace as an added PVC",
        "a pod is in the same namespace as an added PVC",
        "a pod has an ephemeral volume related to an added PVC",
        "a pod doesn't have the same PVC as an added PVC",
        "a pod doesn't have any PVC attached",
    ],
)
def test_hint_pvc_added(pod: Pod, claim: Any, want: QueueingHint) -> None:
    assert CSILimits.hint_pvc_added(pod, None, claim) == want


def va(attacher: str) -> VolumeAttachment:
    return VolumeAttachment("va1", VolumeAttachmentSpec(attacher, "fake-node", VolumeAttachmentSource("pv1")))


EBS_INLINE = {"awsElasticBlockStore": {"volumeID": "test"}}


@pytest.mark.parametrize(
    ("pod", "attachment", "want"),
    [
        (pod_with_claims("p", ["pvc1"], namespace="ns1"), va("test.storage.gke.io"), Q),
        (inline_pod(EBS_INLINE), va(EBS), Q),
        (inline_pod({"gcePersistentDisk": {"pdName": "test"}}), va(EBS), SKIP),
        (inline_pod(EBS_INLINE, {"name": "c", "persistentVolumeClaim": {"claimName": "pvc1"}}), va(EBS), Q),
        (
            inline_pod(EBS_INLINE, {"name": "c", "persistentVolumeClaim": {"claimName": "pvc1"}}),
            va("test.storage.gke.io"),
            Q,
        ),
        (make_pod("p", "ns1"), va("test.storage.gke.io"), SKIP),
    ],
    ids=[
        "a pod has PVC when VolumeAttachment is deleting",
        "a pod has an Inline Migratable volume (AWSEBSDriver) when VolumeAttachment (AWSEBSDriver) "
        "is deleting (match)",
        "a pod has an Inline Migratable volume (GCEPDDriver) when VolumeAttachment (AWSEBSDriver) "
        "is deleting (no match)",
        "a pod has an Inline Migratable volume (AWSEBSDriver) and PVC when VolumeAttachment (AWSEBSDriver)",
        "a pod has an Inline Migratable volume and PVC when VolumeAttachment (other driver) is deleting",
        "a pod has no PVC when VolumeAttachment is deleting",
    ],
)
def test_hint_volume_attachment_deleted(pod: Pod, attachment: VolumeAttachment, want: QueueingHint) -> None:
    assert CSILimits.hint_volume_attachment_deleted(pod, attachment, None) == want


@pytest.mark.parametrize(
    ("old", "new_limit", "want"),
    [(1, 2, Q), (2, 1, SKIP), (1, 1, SKIP)],
    ids=["limit raised, queue", "limit decreased, skip queueing", "limit unchanged, skip queueing"],
)
def test_hint_csi_node_updated(old: int, new_limit: int, want: QueueingHint) -> None:
    got = CSILimits.hint_csi_node_updated(
        POD_EBS, make_csi_node("test-node", {EBS: old}), make_csi_node("test-node", {EBS: new_limit})
    )
    assert got == want


def test_fidelity_reason_is_unschedulable_so_preemption_may_help() -> None:
    case = CASES["doesn't when node volume limit <= pods CSI volume"]
    pl, node = plugin_for(case)
    status = pl.filter(CycleState(), PodInfo(case.new_pod), node)
    assert status is not None and status.code == Code.UNSCHEDULABLE
