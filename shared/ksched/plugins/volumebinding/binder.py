"""The scheduler's volume binder (upstream ``binder.go``): sorts a pod's claims, finds PVs or
dynamic provisioning for a node, and assumes / reverts the chosen bindings in the assume cache.

The API half (PreBind: updating PVs and PVCs, waiting for the PV controller) is in ``prebind.py``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import msgspec

from ksched.api.core import Node, PersistentVolume, PersistentVolumeClaim, Pod, Volume
from ksched.api.meta import LabelSelector
from ksched.api.storage import CSINode, CSIStorageCapacity, StorageClass
from ksched.apimachinery.labels import Selector, SelectorError, label_selector_as_selector
from ksched.apimachinery.quantity import QuantityError, parse_quantity
from ksched.framework.objects import ClusterObjects
from ksched.plugins.helper import csi_translation as csi
from ksched.plugins.helper.storage import (
    ANN_MIGRATED_PLUGINS,
    ANN_SELECTED_NODE,
    NOT_SUPPORTED_PROVISIONER,
    NotFoundError,
    StorageError,
    bind_volume_to_claim,
    check_ephemeral_owner,
    check_node_affinity,
    claim_class,
    claim_key,
    claim_name_of,
    find_matching_volume,
    has_storage_request,
    is_delay_binding_mode,
    is_pvc_fully_bound,
    match_topology_selector_terms,
    pvc_key,
    requested_storage,
    volume_capacity,
    volume_class,
    with_annotation,
)
from ksched.plugins.volumebinding.assume_cache import AssumeCache

ERR_REASON_BIND_CONFLICT = "node(s) didn't find available persistent volumes to bind"
ERR_REASON_NODE_CONFLICT = "node(s) didn't match PersistentVolume's node affinity"
ERR_REASON_NOT_ENOUGH_SPACE = "node(s) did not have enough free storage"
ERR_REASON_PV_NOT_EXIST = "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"

#: in-tree plugins whose CSI migration is on in 1.36 (upstream ``isCSIMigrationOnForPlugin``)
MIGRATION_ON_PLUGINS = frozenset(
    {csi.AWS_EBS_PLUGIN, csi.GCE_PD_PLUGIN, csi.AZURE_DISK_PLUGIN, csi.CINDER_PLUGIN, csi.PORTWORX_PLUGIN}
)


class BinderError(RuntimeError):
    """Something went wrong (not a reason the node does not fit); becomes an Error status."""


class StorageResource(msgspec.Struct):
    requested: int
    capacity: int


class BindingInfo(msgspec.Struct, kw_only=True):
    """A PV chosen for a PVC (after Reserve: the PV as pre-bound to the claim)."""

    pvc: PersistentVolumeClaim
    pv: PersistentVolume

    def storage_class_name(self) -> str:
        return self.pv.spec.storage_class_name

    def storage_resource(self) -> StorageResource:
        return StorageResource(requested_storage(self.pvc).value(), volume_capacity(self.pv).value())


class DynamicProvision(msgspec.Struct, kw_only=True):
    """A PVC to provision on the node, with the CSIStorageCapacity that allowed it (if checked)."""

    pvc: PersistentVolumeClaim
    node_capacity: CSIStorageCapacity | None = None


class PodVolumes(msgspec.Struct, kw_only=True):
    """A pod's volume decisions for one node. ``None`` lists mean "none" before Reserve; after
    Reserve both are lists (upstream tells the two apart in PreBind)."""

    static_bindings: list[BindingInfo] | None = None
    dynamic_provisions: list[DynamicProvision] | None = None


@dataclass
class PodVolumeClaims:
    """A pod's claims by binding state, and the PVs of the delayed-binding claims' classes."""

    bound_claims: list[PersistentVolumeClaim] = field(default_factory=list)
    unbound_claims_delay_binding: list[PersistentVolumeClaim] = field(default_factory=list)
    unbound_claims_immediate: list[PersistentVolumeClaim] = field(default_factory=list)
    unbound_volumes_delay_binding: dict[str, list[PersistentVolume]] = field(default_factory=dict)


def is_plugin_migrated_on_node(plugin: str, csi_node: CSINode | None) -> bool:
    """Upstream ``isPluginMigratedToCSIOnNode``: the CSINode's migrated-plugins annotation lists it."""
    if csi_node is None:
        return False
    return plugin in csi.migrated_plugins(csi_node.metadata.annotations.get(ANN_MIGRATED_PLUGINS, ""))


def try_translate_pv_to_csi(pv: PersistentVolume, csi_node: CSINode | None) -> PersistentVolume:
    """Upstream ``tryTranslatePVToCSI``: the CSI form of a migrated in-tree PV, else ``pv``."""
    plugin = csi.pv_plugin(pv)
    if (
        plugin is None
        or plugin not in MIGRATION_ON_PLUGINS
        or not is_plugin_migrated_on_node(plugin, csi_node)
    ):
        return pv
    try:
        return csi.translate_pv_to_csi(pv)
    except csi.TranslationError as exc:
        raise BinderError(f"could not translate pv: {exc}") from None


def volume_limit(capacity: CSIStorageCapacity) -> int | None:
    """Upstream ``volumeLimit`` as a value: maximumVolumeSize if set, else capacity."""
    text = capacity.maximum_volume_size if capacity.maximum_volume_size is not None else capacity.capacity
    if text is None:
        return None
    try:
        return parse_quantity(text).value()
    except QuantityError as exc:
        raise BinderError(
            f"CSIStorageCapacity {capacity.metadata.name}: invalid quantity {text!r}: {exc}"
        ) from None


def capacity_selector(capacity: CSIStorageCapacity) -> Selector | None:
    """The nodeTopology label selector of a CSIStorageCapacity (None when unset or invalid)."""
    if capacity.node_topology is None:
        return None
    try:
        selector = msgspec.convert(capacity.node_topology, LabelSelector)
        return label_selector_as_selector(selector)
    except (msgspec.ValidationError, SelectorError):
        return None


class VolumeBinder:
    """Upstream ``volumeBinder`` over the snapshot's object tables (read through ``objects``)."""

    def __init__(self, objects: Callable[[], ClusterObjects]) -> None:
        self._objects = objects
        self.pv_cache: AssumeCache[PersistentVolume] = AssumeCache(
            "persistentvolumes", lambda: objects().persistent_volumes
        )
        self.pvc_cache: AssumeCache[PersistentVolumeClaim] = AssumeCache(
            "persistentvolumeclaims", lambda: objects().persistent_volume_claims
        )

    @property
    def objects(self) -> ClusterObjects:
        return self._objects()

    # --- claims ------------------------------------------------------------------------------------
    def _is_pvc_bound(self, namespace: str, name: str) -> tuple[bool, PersistentVolumeClaim]:
        key = pvc_key(namespace, name)
        try:
            pvc = self.pvc_cache.get(key)
        except NotFoundError as exc:
            raise BinderError(f'error getting PVC "{key}": {exc}') from None
        return is_pvc_fully_bound(pvc), pvc

    def is_volume_bound(self, pod: Pod, volume: Volume) -> tuple[bool, PersistentVolumeClaim | None]:
        """Upstream ``isVolumeBound``: volumes without a claim count as bound."""
        ref = claim_name_of(pod, volume)
        if ref is None:
            return True, None
        name, ephemeral = ref
        bound, pvc = self._is_pvc_bound(pod.metadata.namespace, name)
        if ephemeral:
            problem = check_ephemeral_owner(pod, pvc)
            if problem is not None:
                raise BinderError(problem)
        return bound, pvc

    def are_pod_volumes_bound(self, pod: Pod) -> bool:
        for volume in pod.spec.volumes:
            try:
                bound, _ = self.is_volume_bound(pod, volume)
            except BinderError:
                return False
            if not bound:
                return False
        return True

    def get_pod_volume_claims(self, pod: Pod) -> PodVolumeClaims:
        """Upstream ``GetPodVolumeClaims``; raises BinderError / StorageError on lookup problems."""
        claims = PodVolumeClaims()
        classes = self.objects.storage_classes
        for volume in pod.spec.volumes:
            bound, pvc = self.is_volume_bound(pod, volume)
            if pvc is None:
                continue
            if bound:
                claims.bound_claims.append(pvc)
            elif is_delay_binding_mode(pvc, classes) and not pvc.spec.volume_name:
                claims.unbound_claims_delay_binding.append(pvc)
            else:
                claims.unbound_claims_immediate.append(pvc)
        for pvc in claims.unbound_claims_delay_binding:
            name = claim_class(pvc)
            claims.unbound_volumes_delay_binding[name] = [
                pv for pv in self.pv_cache.values() if volume_class(pv) == name
            ]
        return claims

    # --- Filter ------------------------------------------------------------------------------------
    def find_pod_volumes(self, pod: Pod, claims: PodVolumeClaims, node: Node) -> tuple[PodVolumes, list[str]]:
        """Upstream ``FindPodVolumes``: the node's volume decisions and the reasons it does not fit."""
        unbound_satisfied = bound_satisfied = sufficient_storage = bound_pvs_found = True
        static: list[BindingInfo] = []
        dynamic: list[DynamicProvision] = []
        if claims.bound_claims:
            bound_satisfied, bound_pvs_found = self._check_bound_claims(claims.bound_claims, node)
        if claims.unbound_claims_delay_binding:
            to_match: list[PersistentVolumeClaim] = []
            to_provision: list[PersistentVolumeClaim] = []
            fast_fail = False
            for pvc in claims.unbound_claims_delay_binding:
                selected = pvc.metadata.annotations.get(ANN_SELECTED_NODE)
                if selected is None:
                    to_match.append(pvc)
                elif selected != node.metadata.name:
                    unbound_satisfied = False  # fast path: provisioning chose another node
                    fast_fail = True
                    break
                else:
                    to_provision.append(pvc)
            if not fast_fail:
                if to_match:
                    unbound_satisfied, static, unmatched = self._find_matching_volumes(
                        to_match, claims.unbound_volumes_delay_binding, node
                    )
                    to_provision.extend(unmatched)
                if to_provision:
                    unbound_satisfied, sufficient_storage, dynamic = self._check_volume_provisions(
                        to_provision, node
                    )
        reasons: list[str] = []
        if not bound_satisfied:
            reasons.append(ERR_REASON_NODE_CONFLICT)
        if not unbound_satisfied:
            reasons.append(ERR_REASON_BIND_CONFLICT)
        if not sufficient_storage:
            reasons.append(ERR_REASON_NOT_ENOUGH_SPACE)
        if not bound_pvs_found:
            reasons.append(ERR_REASON_PV_NOT_EXIST)
        return PodVolumes(static_bindings=static or None, dynamic_provisions=dynamic or None), reasons

    def _check_bound_claims(self, claims: Sequence[PersistentVolumeClaim], node: Node) -> tuple[bool, bool]:
        """(node affinity satisfied, every PV found) for the bound claims."""
        csi_node = self.objects.csi_nodes.get(node.metadata.name)
        labels = node.metadata.labels
        for pvc in claims:
            try:
                pv = self.pv_cache.get(pvc.spec.volume_name)
            except NotFoundError:
                return True, False
            pv = try_translate_pv_to_csi(pv, csi_node)
            if not check_node_affinity(pv, labels):
                return False, True
        return True, True

    def _find_matching_volumes(
        self,
        claims: list[PersistentVolumeClaim],
        volumes_by_class: dict[str, list[PersistentVolume]],
        node: Node,
    ) -> tuple[bool, list[BindingInfo], list[PersistentVolumeClaim]]:
        """Upstream ``findMatchingVolumes``: smallest claims first, each PV chosen at most once."""
        ordered = sorted(claims, key=requested_storage)
        chosen: set[str] = set()
        bindings: list[BindingInfo] = []
        unmatched: list[PersistentVolumeClaim] = []
        labels = node.metadata.labels
        for pvc in ordered:
            pvs = volumes_by_class.get(claim_class(pvc), [])
            pv = find_matching_volume(pvc, pvs, labels, chosen, True)
            if pv is None:
                unmatched.append(pvc)
                continue
            chosen.add(pv.metadata.name)
            bindings.append(BindingInfo(pvc=pvc, pv=pv))
        return not unmatched, bindings, unmatched

    def _check_volume_provisions(
        self, claims: list[PersistentVolumeClaim], node: Node
    ) -> tuple[bool, bool, list[DynamicProvision]]:
        """Upstream ``checkVolumeProvisions``: (provisioning possible, enough storage, provisions)."""
        provisions: list[DynamicProvision] = []
        classes = self.objects.storage_classes
        for pvc in claims:
            class_name = claim_class(pvc)
            if not class_name:
                raise BinderError(f'no class for claim "{claim_key(pvc)}"')
            sc = classes.get(class_name)
            if sc is None:
                raise BinderError(f'failed to find storage class "{class_name}"')
            provisioner = sc.provisioner
            if not provisioner or provisioner == NOT_SUPPORTED_PROVISIONER:
                return False, True, []
            if not match_topology_selector_terms(sc.allowed_topologies, node.metadata.labels):
                return False, True, []
            sufficient, capacity = self._has_enough_capacity(provisioner, pvc, sc, node)
            if not sufficient:
                return True, False, []
            provisions.append(DynamicProvision(pvc=pvc, node_capacity=capacity))
        return True, True, provisions

    def _has_enough_capacity(
        self, provisioner: str, pvc: PersistentVolumeClaim, sc: StorageClass, node: Node
    ) -> tuple[bool, CSIStorageCapacity | None]:
        """Upstream ``hasEnoughCapacity``: only for CSI drivers that opted into capacity tracking."""
        if not has_storage_request(pvc):
            return True, None
        objects = self.objects
        driver = objects.csi_drivers.get(provisioner)
        if driver is None or not driver.spec.storage_capacity:
            return True, None
        size = requested_storage(pvc).value()
        for capacity in objects.csi_storage_capacities.values():
            if capacity.storage_class_name != sc.metadata.name:
                continue
            limit = volume_limit(capacity)
            if limit is None or limit < size:
                continue
            selector = capacity_selector(capacity)
            if selector is not None and selector.matches(node.metadata.labels):
                return True, capacity
        return False, None

    # --- Reserve / Unreserve -----------------------------------------------------------------------
    def assume_pod_volumes(self, pod: Pod, node_name: str, pod_volumes: PodVolumes) -> bool:
        """Upstream ``AssumePodVolumes``: True when everything is bound already; otherwise the
        chosen PVs (pre-bound) and PVCs (selected node) are assumed and ``pod_volumes`` updated."""
        if self.are_pod_volumes_bound(pod):
            return True
        new_bindings: list[BindingInfo] = []
        for binding in pod_volumes.static_bindings or []:
            new_pv, dirty = bind_volume_to_claim(binding.pv, binding.pvc)
            if dirty:
                try:
                    self.pv_cache.assume(new_pv)
                except (NotFoundError, RuntimeError) as exc:
                    self._revert_pvs(new_bindings)
                    raise BinderError(str(exc)) from None
            new_bindings.append(BindingInfo(pvc=binding.pvc, pv=new_pv))
        new_provisions: list[DynamicProvision] = []
        for provision in pod_volumes.dynamic_provisions or []:
            claim = with_annotation(provision.pvc, ANN_SELECTED_NODE, node_name)
            try:
                self.pvc_cache.assume(claim)
            except (NotFoundError, RuntimeError) as exc:
                self._revert_pvs(new_bindings)
                self._revert_pvcs([p.pvc for p in new_provisions])
                raise BinderError(str(exc)) from None
            new_provisions.append(DynamicProvision(pvc=claim))
        pod_volumes.static_bindings = new_bindings
        pod_volumes.dynamic_provisions = new_provisions
        return False

    def revert_assumed_pod_volumes(self, pod_volumes: PodVolumes) -> None:
        self._revert_pvs(pod_volumes.static_bindings or [])
        self._revert_pvcs([p.pvc for p in pod_volumes.dynamic_provisions or []])

    def _revert_pvs(self, bindings: Sequence[BindingInfo]) -> None:
        for binding in bindings:
            self.pv_cache.restore(binding.pv)

    def _revert_pvcs(self, claims: Sequence[PersistentVolumeClaim]) -> None:
        for pvc in claims:
            self.pvc_cache.restore(pvc)


__all__ = [
    "ERR_REASON_BIND_CONFLICT",
    "ERR_REASON_NODE_CONFLICT",
    "ERR_REASON_NOT_ENOUGH_SPACE",
    "ERR_REASON_PV_NOT_EXIST",
    "BinderError",
    "BindingInfo",
    "DynamicProvision",
    "PodVolumeClaims",
    "PodVolumes",
    "StorageError",
    "StorageResource",
    "VolumeBinder",
]
