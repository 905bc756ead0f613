"""NodeVolumeLimits (upstream ``nodevolumelimits/csi.go``): a node takes at most CSINode
``spec.drivers[].allocatable.count`` volumes per CSI driver. Counted: unique volumes of the pods
on the node (PVC-backed, generic ephemeral, and migrated in-tree inline volumes) and the node's
VolumeAttachments, plus the incoming pod's new ones.

VolumeAttachments are read from ``snapshot.objects.volume_attachments`` when the object tables
have one (ksched's tables do not keep that kind yet, so none are counted until they do).
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ksched.api.core import PersistentVolumeClaim, Pod, Volume
from ksched.api.storage import CSINode
from ksched.apimachinery.typed import as_typed
from ksched.framework.cycle_state import CycleState
from ksched.framework.events import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    EventResource,
    QueueingHint,
)
from ksched.framework.handle import Handle
from ksched.framework.interfaces import EnqueueExtensions, FilterPlugin, PreFilterPlugin
from ksched.framework.nodeinfo import NodeInfo
from ksched.framework.objects import ClusterObjects
from ksched.framework.podinfo import PodInfo
from ksched.framework.results import PreFilterResult
from ksched.framework.status import Status
from ksched.plugins.helper import csi_translation as csi
from ksched.plugins.helper.storage import check_ephemeral_owner, claim_class, claim_name_of, pvc_key

NAME = "NodeVolumeLimits"
ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED = "node(s) exceed max volume count"

#: in-tree plugins whose CSI migration is on (upstream ``isCSIMigrationOn``; RBD is not)
MIGRATION_ON_PLUGINS = frozenset(
    {csi.AWS_EBS_PLUGIN, csi.PORTWORX_PLUGIN, csi.GCE_PD_PLUGIN, csi.AZURE_DISK_PLUGIN, csi.CINDER_PLUGIN}
)


STATE_KEY = "PreFilter" + NAME


class NewVolumes:
    """Cycle memo of the incoming pod's volumes, by whether the node has a CSINode."""

    __slots__ = ("by_csi_node",)

    def __init__(self) -> None:
        self.by_csi_node: dict[bool, dict[str, str]] = {}

    def clone(self) -> NewVolumes:
        return self


class FilterError(RuntimeError):
    """A lookup failed for the incoming pod; ``unresolvable`` when the PVC does not exist."""

    def __init__(self, message: str, *, unresolvable: bool = False) -> None:
        super().__init__(message)
        self.unresolvable = unresolvable


@dataclass(frozen=True)
class NodeVolumeLimitsFeatures:
    """Feature gates with their kube-scheduler 1.36 defaults."""

    #: VolumeLimitScaling (alpha): a missing driver on the node rejects the pod if the CSIDriver asks
    volume_limit_scaling: bool = False


def migration_on(csi_node: CSINode | None, plugin: str) -> bool:
    return csi_node is not None and plugin in MIGRATION_ON_PLUGINS


def volume_limits(csi_node: CSINode | None) -> dict[str, int]:
    """Upstream ``getVolumeLimits``: driver -> allocatable count, for drivers that report one."""
    if csi_node is None:
        return {}
    return {
        d.name: d.allocatable.count
        for d in csi_node.spec.drivers
        if d.allocatable is not None and d.allocatable.count is not None
    }


def unique_name(driver: str, handle: str) -> str:
    return f"{driver}/{handle}"


class CSILimits:
    name = NAME

    def __init__(self, handle: Handle, features: NodeVolumeLimitsFeatures | None = None) -> None:
        self._handle = handle
        self.features = features if features is not None else NodeVolumeLimitsFeatures()
        #: prefix of the made-up handles of unbound claims (upstream: 32 random characters)
        self.random_volume_id_prefix = secrets.token_hex(16)

    @property
    def objects(self) -> ClusterObjects:
        return self._handle.snapshot.objects

    # --- events ----------------------------------------------------------------------------------
    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(ClusterEvent(EventResource.CSI_NODE, ActionType.ADD)),
            ClusterEventWithHint(
                ClusterEvent(EventResource.CSI_NODE, ActionType.UPDATE), self.hint_csi_node_updated
            ),
            ClusterEventWithHint(ClusterEvent(EventResource.POD, ActionType.DELETE), self.hint_pod_deleted),
            ClusterEventWithHint(
                ClusterEvent(EventResource.PERSISTENT_VOLUME_CLAIM, ActionType.ADD), self.hint_pvc_added
            ),
            ClusterEventWithHint(
                ClusterEvent(EventResource.VOLUME_ATTACHMENT, ActionType.DELETE),
                self.hint_volume_attachment_deleted,
            ),
        ]

    @staticmethod
    def hint_pod_deleted(pod: Pod, old: object, new: object) -> QueueingHint:
        """Queue when a scheduled (or nominated) pod with countable volumes went away."""
        deleted, _ = as_typed(old, new, Pod)
        if deleted is None:
            raise TypeError("unexpected objects in isSchedulableAfterPodDeleted: None")
        if not deleted.spec.volumes:
            return QueueingHint.QUEUE_SKIP
        if not deleted.spec.node_name and not deleted.status.nominated_node_name:
            return QueueingHint.QUEUE_SKIP
        for v in deleted.spec.volumes:
            if v.persistent_volume_claim is not None or v.ephemeral is not None or csi.inline_plugin(v):
                return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    @staticmethod
    def hint_pvc_added(pod: Pod, old: object, new: object) -> QueueingHint:
        _, pvc = as_typed(old, new, PersistentVolumeClaim)
        if pvc is None:
            raise TypeError("unexpected objects in isSchedulableAfterPVCAdded: None")
        if pvc.metadata.namespace != pod.metadata.namespace:
            return QueueingHint.QUEUE_SKIP
        for v in pod.spec.volumes:
            ref = claim_name_of(pod, v)
            if ref is not None and ref[0] == pvc.metadata.name:
                return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    @staticmethod
    def hint_volume_attachment_deleted(pod: Pod, old: object, new: object) -> QueueingHint:
        """Queue when the pod has a PVC, or a migrated inline volume of the attachment's driver."""
        attachment = old if old is not None else new
        spec = getattr(attachment, "spec", None)
        if spec is None:
            raise TypeError(f"expected VolumeAttachment, but got {type(attachment).__name__}")
        attacher = getattr(spec, "attacher", "")
        for v in pod.spec.volumes:
            if v.persistent_volume_claim is not None:
                return QueueingHint.QUEUE
            if csi.inline_plugin(v) is None:
                continue
            try:
                translated = csi.translate_inline_to_csi(v)
            except csi.TranslationError as exc:
                raise TypeError(f"converting volume({v.name}) from inline to csi: {exc}") from None
            if translated.spec.csi is not None and translated.spec.csi.driver == attacher:
                return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    @staticmethod
    def hint_csi_node_updated(pod: Pod, old: object, new: object) -> QueueingHint:
        """Queue when some driver's attach limit went up."""
        old_node, new_node = as_typed(old, new, CSINode)
        if old_node is None or new_node is None:
            raise TypeError("unexpected objects in isSchedulableAfterCSINodeUpdated: None")
        before = {
            d.name: (d.allocatable.count or 0) if d.allocatable is not None else 0
            for d in old_node.spec.drivers
        }
        for d in new_node.spec.drivers:
            after = (d.allocatable.count or 0) if d.allocatable is not None else 0
            if after > before.get(d.name, 0):
                return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    # --- PreFilter -------------------------------------------------------------------------------
    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        for v in pod.pod.spec.volumes:
            if v.persistent_volume_claim is not None or v.ephemeral is not None or csi.inline_plugin(v):
                state.write(STATE_KEY, NewVolumes())
                return None, None
        return None, Status.skip()

    # --- Filter ----------------------------------------------------------------------------------
    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        if not pod.pod.spec.volumes:
            return None
        csi_node = self.objects.csi_nodes.get(node.name)
        try:
            new_volumes = self._new_volumes(state, pod.pod, csi_node)
        except FilterError as exc:
            if exc.unresolvable:
                return Status.unresolvable(str(exc))
            return Status.as_error(exc)
        if not new_volumes:
            return None
        if self.features.volume_limit_scaling:
            for driver in new_volumes.values():
                if not self._driver_on_node(driver, csi_node):
                    return Status.unschedulable(f"{driver} CSI driver is not installed on the node")
        limits = volume_limits(csi_node)
        if not limits:
            return None
        attached: dict[str, str] = {}
        for existing in node.pods:
            try:
                self.attachable_volumes(existing.pod, csi_node, False, attached)
            except FilterError as exc:
                return Status.as_error(exc)
        attached_count: dict[str, int] = {}
        for volume, driver in attached.items():
            new_volumes.pop(volume, None)  # a volume used by several pods counts once
            attached_count[driver] = attached_count.get(driver, 0) + 1
        for volume, driver in self._node_attachments(node.name).items():
            if volume not in attached:
                attached_count[driver] = attached_count.get(driver, 0) + 1
        new_count: dict[str, int] = {}
        for driver in new_volumes.values():
            new_count[driver] = new_count.get(driver, 0) + 1
        for driver, count in new_count.items():
            limit = limits.get(driver)
            if limit is not None and attached_count.get(driver, 0) + count > limit:
                return Status.unschedulable(ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED)
        return None

    def _new_volumes(self, state: CycleState, pod: Pod, csi_node: CSINode | None) -> dict[str, str]:
        """The incoming pod's volumes; they depend on the node only through having a CSINode, so
        both answers are kept for the cycle (a copy is returned: Filter removes shared ones)."""
        memo = state.get(STATE_KEY, NewVolumes)
        key = csi_node is not None
        if memo is not None and key in memo.by_csi_node:
            return dict(memo.by_csi_node[key])
        result: dict[str, str] = {}
        self.attachable_volumes(pod, csi_node, True, result)
        if memo is not None:
            memo.by_csi_node[key] = result
        return dict(result)

    def _driver_on_node(self, driver: str, csi_node: CSINode | None) -> bool:
        """Upstream ``checkCSIDriverOnNode`` (VolumeLimitScaling)."""
        csi_driver = self.objects.csi_drivers.get(driver)
        if csi_driver is None:
            return True
        if not getattr(csi_driver.spec, "prevent_pod_scheduling_if_missing", False):
            return True
        if csi_node is None:
            return False
        return any(d.name == driver for d in csi_node.spec.drivers)

    def attachable_volumes(
        self, pod: Pod, csi_node: CSINode | None, new_pod: bool, result: dict[str, str]
    ) -> None:
        """Upstream ``filterAttachableVolumes``: add the pod's CSI volumes as unique name -> driver."""
        claims = self.objects.persistent_volume_claims
        for v in pod.spec.volumes:
            ref = claim_name_of(pod, v)
            if ref is None:
                self._inline_volume(v, csi_node, result)
                continue
            name, ephemeral = ref
            if not name:
                raise FilterError("PersistentVolumeClaim had no name")
            pvc = claims.get(pvc_key(pod.metadata.namespace, name))
            if pvc is None:
                if new_pod:
                    key = pvc_key(pod.metadata.namespace, name)
                    raise FilterError(
                        f'looking up PVC {key}: persistentvolumeclaim "{name}" not found', unresolvable=True
                    )
                continue  # an existing pod's missing claim is not counted
            if ephemeral:
                problem = check_ephemeral_owner(pod, pvc)
                if problem is not None:
                    raise FilterError(problem)
            driver, handle = self._driver_info(csi_node, pvc)
            if driver and handle:
                result[unique_name(driver, handle)] = driver

    def _inline_volume(self, volume: Volume, csi_node: CSINode | None, result: dict[str, str]) -> None:
        """Upstream ``checkAttachableInlineVolume``: migrated in-tree inline volumes count."""
        plugin = csi.inline_plugin(volume)
        if plugin is None or not migration_on(csi_node, plugin):
            return
        try:
            translated = csi.translate_inline_to_csi(volume)
            driver = csi.csi_driver_for(plugin)
        except csi.TranslationError as exc:
            raise FilterError(f"converting volume({volume.name}) from inline to csi: {exc}") from None
        if translated.spec.csi is None:
            return
        result[unique_name(driver, translated.spec.csi.volume_handle)] = driver

    def _driver_info(self, csi_node: CSINode | None, pvc: PersistentVolumeClaim) -> tuple[str, str]:
        """Upstream ``getCSIDriverInfo``: (driver, volume handle) of the claim's PV, or from its class."""
        pv_name = pvc.spec.volume_name
        if not pv_name:
            return self._driver_info_from_class(csi_node, pvc)
        pv = self.objects.persistent_volumes.get(pv_name)
        if pv is None:
            return self._driver_info_from_class(csi_node, pvc)
        source = pv.spec.csi
        if source is None:
            plugin = csi.pv_plugin(pv)
            if plugin is None or not migration_on(csi_node, plugin):
                return "", ""
            try:
                source = csi.translate_pv_to_csi(pv).spec.csi
            except csi.TranslationError:
                return "", ""
            if source is None:
                return "", ""
        return source.driver, source.volume_handle

    def _driver_info_from_class(
        self, csi_node: CSINode | None, pvc: PersistentVolumeClaim
    ) -> tuple[str, str]:
        """Upstream ``getCSIDriverInfoFromSC``: the class's provisioner and a made-up handle."""
        class_name = claim_class(pvc)
        if not class_name:
            return "", ""
        sc = self.objects.storage_classes.get(class_name)
        if sc is None:
            return "", ""
        handle = f"{self.random_volume_id_prefix}-{pvc.metadata.namespace}/{pvc.metadata.name}"
        provisioner = sc.provisioner
        if csi.is_migratable_plugin(provisioner):
            if not migration_on(csi_node, provisioner):
                return "", ""
            return csi.csi_driver_for(provisioner), handle
        return provisioner, handle

    def _node_attachments(self, node_name: str) -> dict[str, str]:
        """Upstream ``getNodeVolumeAttachmentInfo``: CSI volumes attached to the node, by unique name."""
        table: Mapping[str, Any] | None = getattr(self.objects, "volume_attachments", None)
        if not table:
            return {}
        out: dict[str, str] = {}
        pvs = self.objects.persistent_volumes
        for attachment in table.values():
            spec = getattr(attachment, "spec", None)
            if spec is None or getattr(spec, "node_name", "") != node_name:
                continue
            attacher = getattr(spec, "attacher", "")
            pv_name = getattr(getattr(spec, "source", None), "persistent_volume_name", None)
            if not attacher or not pv_name:
                continue
            pv = pvs.get(pv_name)
            if pv is None or pv.spec.csi is None:
                continue
            out[unique_name(attacher, pv.spec.csi.volume_handle)] = attacher
        return out


# The extension points CSILimits implements, checked by mypy against ksched.framework.interfaces
# (upstream's ``var _ fwk.<Point>Plugin = &CSILimits{}`` lines).
_ENQUEUE_EXTENSIONS: type[EnqueueExtensions] = CSILimits
_PRE_FILTER: type[PreFilterPlugin] = CSILimits
_FILTER: type[FilterPlugin] = CSILimits


def new(args: Any, handle: Handle) -> CSILimits:
    return CSILimits(handle)
