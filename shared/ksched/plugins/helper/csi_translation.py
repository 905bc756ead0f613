"""In-tree volume to CSI translation, as far as the scheduler uses it (upstream ``csi-translation-lib``).

Only the in-tree sources ksched's API structs carry can be recognised: AWS EBS, GCE PD and RBD.
Translations are implemented for AWS EBS and GCE PD (RBD is migratable by name only: the scheduler's
migration switches never turn it on). The other in-tree plugins (Azure Disk/File, Cinder, vSphere,
Portworx) are known by name, which is what StorageClass-based lookups need.
"""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import urlparse

import msgspec

from ksched.api.core import (
    CSIPersistentVolumeSource,
    NodeSelector,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    PersistentVolume,
    PersistentVolumeSpec,
    Volume,
    VolumeNodeAffinity,
)
from ksched.api.meta import ObjectMeta
from ksched.plugins.helper.storage import (
    LABEL_BETA_REGION,
    LABEL_BETA_ZONE,
    LABEL_REGION,
    LABEL_ZONE,
    MULTI_ZONE_DELIMITER,
)

AWS_EBS_PLUGIN = "kubernetes.io/aws-ebs"
AWS_EBS_DRIVER = "ebs.csi.aws.com"
AWS_EBS_TOPOLOGY_KEY = "topology.ebs.csi.aws.com/zone"
GCE_PD_PLUGIN = "kubernetes.io/gce-pd"
GCE_PD_DRIVER = "pd.csi.storage.gke.io"
GCE_PD_TOPOLOGY_KEY = "topology.gke.io/zone"
RBD_PLUGIN = "kubernetes.io/rbd"
RBD_DRIVER = "rbd.csi.ceph.com"
AZURE_DISK_PLUGIN = "kubernetes.io/azure-disk"
CINDER_PLUGIN = "kubernetes.io/cinder"
PORTWORX_PLUGIN = "kubernetes.io/portworx-volume"

UNSPECIFIED = "UNSPECIFIED"

#: in-tree plugin name -> CSI driver name (upstream ``inTreePlugins``)
IN_TREE_TO_CSI: dict[str, str] = {
    GCE_PD_PLUGIN: GCE_PD_DRIVER,
    AWS_EBS_PLUGIN: AWS_EBS_DRIVER,
    CINDER_PLUGIN: "cinder.csi.openstack.org",
    AZURE_DISK_PLUGIN: "disk.csi.azure.com",
    "kubernetes.io/azure-file": "file.csi.azure.com",
    "kubernetes.io/vsphere-volume": "csi.vsphere.vmware.com",
    PORTWORX_PLUGIN: "pxd.portworx.com",
    RBD_PLUGIN: RBD_DRIVER,
}


class TranslationError(ValueError):
    """An in-tree volume that cannot be expressed as a CSI volume."""


def is_migratable_plugin(plugin: str) -> bool:
    """Upstream ``IsMigratableIntreePluginByName``."""
    return plugin in IN_TREE_TO_CSI


def csi_driver_for(plugin: str) -> str:
    """Upstream ``GetCSINameFromInTreeName``."""
    try:
        return IN_TREE_TO_CSI[plugin]
    except KeyError:
        raise TranslationError(f"could not find CSI Driver name for plugin {plugin}") from None


def pv_plugin(pv: PersistentVolume) -> str | None:
    """The in-tree plugin a PV's source belongs to, when it is migratable (``IsPVMigratable``)."""
    spec = pv.spec
    if spec.gce_persistent_disk is not None:
        return GCE_PD_PLUGIN
    if spec.aws_elastic_block_store is not None:
        return AWS_EBS_PLUGIN
    if spec.rbd is not None:
        return RBD_PLUGIN
    return None


def inline_plugin(volume: Volume) -> str | None:
    """The in-tree plugin of a migratable inline volume (``IsInlineMigratable``), else None."""
    if volume.gce_persistent_disk is not None:
        return GCE_PD_PLUGIN
    if volume.aws_elastic_block_store is not None:
        return AWS_EBS_PLUGIN
    if volume.rbd is not None:
        return RBD_PLUGIN
    return None


def ebs_volume_id(kubernetes_id: str) -> str:
    """Upstream ``KubernetesVolumeIDToEBSVolumeID``: ``aws://<zone>/<vol-id>`` or a bare id."""
    if not kubernetes_id.startswith("aws://"):
        return kubernetes_id
    try:
        url = urlparse(kubernetes_id)
    except ValueError as exc:
        raise TranslationError(f"Invalid disk name ({kubernetes_id}): {exc}") from None
    aws_id = url.path.strip("/")
    if not aws_id.startswith("vol-") or "/" in aws_id:
        raise TranslationError(f"Invalid format for AWS volume ({kubernetes_id})")
    return aws_id


def _gce_region(zones: list[str]) -> str:
    regions: set[str] = set()
    if not zones:
        raise TranslationError("no zones specified")
    for zone in zones:
        parts = zone.split("-")
        if len(parts) != 3:
            raise TranslationError(
                f"zone in unexpected format, expected: {{locale}}-{{region}}-{{zone}}, got: {zone}"
            )
        regions.add("-".join(parts[:2]))
    if len(regions) != 1:
        raise TranslationError(f"multiple or no regions gotten from zones, got: {sorted(regions)}")
    return regions.pop()


# --- topology (upstream in_tree_volume.go) -----------------------------------------------------------


def _terms(pv: PersistentVolume) -> list[NodeSelectorTerm]:
    aff = pv.spec.node_affinity
    if aff is None or aff.required is None:
        return []
    return aff.required.node_selector_terms


def _has_key(pv: PersistentVolume, key: str) -> bool:
    return any(r.key == key for term in _terms(pv) for r in term.match_expressions)


def _topology_labels(pv: PersistentVolume) -> tuple[str, str]:
    """Upstream ``getTopologyLabel``: GA or beta zone/region keys, from node affinity then labels."""
    if _has_key(pv, LABEL_ZONE):
        return LABEL_ZONE, LABEL_REGION
    if _has_key(pv, LABEL_BETA_ZONE):
        return LABEL_BETA_ZONE, LABEL_BETA_REGION
    if LABEL_ZONE in pv.metadata.labels:
        return LABEL_ZONE, LABEL_REGION
    if LABEL_BETA_ZONE in pv.metadata.labels:
        return LABEL_BETA_ZONE, LABEL_BETA_REGION
    return LABEL_ZONE, LABEL_REGION


def _with_terms(pv: PersistentVolume, terms: list[NodeSelectorTerm]) -> PersistentVolume:
    affinity = VolumeNodeAffinity(required=NodeSelector(node_selector_terms=terms))
    return msgspec.structs.replace(pv, spec=msgspec.structs.replace(pv.spec, node_affinity=affinity))


def _replace_key(pv: PersistentVolume, old: str, new: str) -> PersistentVolume:
    terms = [
        msgspec.structs.replace(
            term,
            match_expressions=[
                msgspec.structs.replace(r, key=new) if r.key == old else r for r in term.match_expressions
            ],
        )
        for term in _terms(pv)
    ]
    return _with_terms(pv, terms) if terms else pv


def _add_topology(pv: PersistentVolume, key: str, zones: list[str]) -> PersistentVolume:
    values = sorted({z.strip() for z in zones if z.strip()})
    if not values:
        return pv
    terms = _terms(pv) or [NodeSelectorTerm()]
    requirement = NodeSelectorRequirement(key=key, operator="In", values=values)
    return _with_terms(
        pv,
        [
            msgspec.structs.replace(term, match_expressions=[*term.match_expressions, requirement])
            for term in terms
        ],
    )


def translate_topology_to_csi(pv: PersistentVolume, csi_key: str) -> PersistentVolume:
    """Upstream ``translateTopologyFromInTreeToCSI``: zone keys become the driver's key, beta
    region keys the GA one; zones only in labels are added to every term."""
    zone_label, region_label = _topology_labels(pv)
    if _has_key(pv, zone_label):
        pv = _replace_key(pv, zone_label, csi_key)
    elif zone_label in pv.metadata.labels:
        pv = _add_topology(pv, csi_key, pv.metadata.labels[zone_label].split(MULTI_ZONE_DELIMITER))
    if region_label == LABEL_BETA_REGION and _has_key(pv, region_label):
        pv = _replace_key(pv, region_label, LABEL_REGION)
    return pv


# --- PV and inline translation -----------------------------------------------------------------------


def _csi_pv(
    pv: PersistentVolume, source: CSIPersistentVolumeSource, access_modes: list[str] | None = None
) -> PersistentVolume:
    spec = msgspec.structs.replace(
        pv.spec,
        gce_persistent_disk=None,
        aws_elastic_block_store=None,
        csi=source,
        access_modes=pv.spec.access_modes if access_modes is None else access_modes,
    )
    return msgspec.structs.replace(pv, spec=spec)


def _gce_access_modes(modes: list[str]) -> list[str]:
    """Upstream ``backwardCompatibleAccessModes``: RWX counts as RWO; RWO+ROX becomes RWO."""
    seen = {"ReadWriteOnce" if m == "ReadWriteMany" else m for m in modes}
    if "ReadWriteOnce" in seen:
        return ["ReadWriteOnce"]
    if "ReadOnlyMany" in seen:
        return ["ReadOnlyMany"]
    return ["ReadWriteOnce"]


def _translate_ebs(pv: PersistentVolume) -> PersistentVolume:
    ebs = pv.spec.aws_elastic_block_store
    assert ebs is not None
    try:
        handle = ebs_volume_id(ebs.volume_id)
    except TranslationError as exc:
        raise TranslationError(f"failed to translate Kubernetes ID to EBS Volume ID {exc}") from None
    source = CSIPersistentVolumeSource(
        driver=AWS_EBS_DRIVER,
        volume_handle=handle,
        read_only=ebs.read_only,
        fs_type=ebs.fs_type,
        volume_attributes={"partition": str(ebs.partition or 0)},
    )
    return _csi_pv(translate_topology_to_csi(pv, AWS_EBS_TOPOLOGY_KEY), source)


def _translate_gce(pv: PersistentVolume) -> PersistentVolume:
    gce = pv.spec.gce_persistent_disk
    assert gce is not None
    zones_label = pv.metadata.labels.get(LABEL_BETA_ZONE) or pv.metadata.labels.get(LABEL_ZONE, "")
    zones = zones_label.split(MULTI_ZONE_DELIMITER)
    if len(zones) == 1 and zones[0]:
        handle = f"projects/{UNSPECIFIED}/zones/{zones[0]}/disks/{gce.pd_name}"
    elif len(zones) > 1:
        try:
            region = _gce_region(zones)
        except TranslationError as exc:
            raise TranslationError(f"failed to get region from zones: {exc}") from None
        handle = f"projects/{UNSPECIFIED}/regions/{region}/disks/{gce.pd_name}"
    else:
        handle = f"projects/{UNSPECIFIED}/zones/{UNSPECIFIED}/disks/{gce.pd_name}"
    source = CSIPersistentVolumeSource(
        driver=GCE_PD_DRIVER,
        volume_handle=handle,
        read_only=gce.read_only,
        fs_type=gce.fs_type,
        volume_attributes={"partition": str(gce.partition) if gce.partition else ""},
    )
    translated = translate_topology_to_csi(pv, GCE_PD_TOPOLOGY_KEY)
    return _csi_pv(translated, source, _gce_access_modes(pv.spec.access_modes))


_PV_TRANSLATORS: dict[str, Callable[[PersistentVolume], PersistentVolume]] = {
    AWS_EBS_PLUGIN: _translate_ebs,
    GCE_PD_PLUGIN: _translate_gce,
}


def translate_pv_to_csi(pv: PersistentVolume) -> PersistentVolume:
    """Upstream ``TranslateInTreePVToCSI`` (a new PV; the input is not modified)."""
    plugin = pv_plugin(pv)
    translator = _PV_TRANSLATORS.get(plugin or "")
    if translator is None:
        raise TranslationError(f"could not find in-tree plugin translation logic for {pv.metadata.name!r}")
    return translator(pv)


def translate_inline_to_csi(volume: Volume) -> PersistentVolume:
    """Upstream ``TranslateInTreeInlineVolumeToCSI`` for AWS EBS and GCE PD inline volumes."""
    if volume.aws_elastic_block_store is not None:
        ebs = volume.aws_elastic_block_store
        try:
            handle = ebs_volume_id(ebs.volume_id)
        except TranslationError as exc:
            raise TranslationError(f"failed to translate Kubernetes ID to EBS Volume ID {exc}") from None
        source = CSIPersistentVolumeSource(
            driver=AWS_EBS_DRIVER,
            volume_handle=handle,
            read_only=ebs.read_only,
            fs_type=ebs.fs_type,
            volume_attributes={"partition": str(ebs.partition or 0)},
        )
        name = f"{AWS_EBS_DRIVER}-{handle}"
        modes = ["ReadWriteOnce"]
    elif volume.gce_persistent_disk is not None:
        gce = volume.gce_persistent_disk
        source = CSIPersistentVolumeSource(
            driver=GCE_PD_DRIVER,
            volume_handle=f"projects/{UNSPECIFIED}/zones/{UNSPECIFIED}/disks/{gce.pd_name}",
            read_only=gce.read_only,
            fs_type=gce.fs_type,
            volume_attributes={"partition": str(gce.partition) if gce.partition else ""},
        )
        name = f"{GCE_PD_DRIVER}-{gce.pd_name}"
        modes = ["ReadOnlyMany" if gce.read_only else "ReadWriteOnce"]
    else:
        raise TranslationError(f"could not find in-tree plugin translation logic for {volume.name!r}")
    spec = PersistentVolumeSpec(csi=source, access_modes=modes, volume_mode="Filesystem")
    return PersistentVolume(metadata=ObjectMeta(name=name), spec=spec)


def migrated_plugins(annotation: str) -> frozenset[str]:
    """The plugin names of a CSINode's ``migrated-plugins`` annotation (comma separated)."""
    return frozenset(annotation.split(",")) if annotation else frozenset()
