"""Storage helpers the volume plugins share (upstream ``component-helpers/storage/volume``,
``storage/ephemeral`` and the ``v1helper`` topology matching), over ksched's API structs."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import msgspec

from ksched.api.core import (
    NodeSelector,
    PersistentVolume,
    PersistentVolumeClaim,
    Pod,
    Volume,
)
from ksched.api.meta import LabelSelector, ObjectReference
from ksched.api.storage import StorageClass, TopologySelectorTerm
from ksched.apimachinery import nodeselector
from ksched.apimachinery.labels import Selector, SelectorError, label_selector_as_selector
from ksched.apimachinery.quantity import Quantity, QuantityError, parse_quantity

ANN_BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
ANN_BOUND_BY_CONTROLLER = "pv.kubernetes.io/bound-by-controller"
ANN_SELECTED_NODE = "volume.kubernetes.io/selected-node"
ANN_BETA_STORAGE_CLASS = "volume.beta.kubernetes.io/storage-class"
ANN_MIGRATED_PLUGINS = "storage.alpha.kubernetes.io/migrated-plugins"
NOT_SUPPORTED_PROVISIONER = "kubernetes.io/no-provisioner"

BINDING_WAIT_FOR_FIRST_CONSUMER = "WaitForFirstConsumer"
VOLUME_AVAILABLE = "Available"
CLAIM_LOST = "Lost"
FILESYSTEM = "Filesystem"
READ_WRITE_ONCE_POD = "ReadWriteOncePod"
RESOURCE_STORAGE = "storage"

LABEL_ZONE = "topology.kubernetes.io/zone"
LABEL_REGION = "topology.kubernetes.io/region"
LABEL_BETA_ZONE = "failure-domain.beta.kubernetes.io/zone"
LABEL_BETA_REGION = "failure-domain.beta.kubernetes.io/region"
MULTI_ZONE_DELIMITER = "__"

_ZERO = parse_quantity("0")


class StorageError(ValueError):
    """An object the storage helpers cannot interpret (the message names it)."""


class NotFoundError(LookupError):
    """An object missing from the cluster state, worded as the API's NotFound (``str()`` is the message)."""

    def __init__(self, resource: str, name: str) -> None:
        super().__init__(f'{resource} "{name}" not found')
        self.resource = resource
        self.name = name

    def __str__(self) -> str:
        return str(self.args[0])


# --- names and classes ------------------------------------------------------------------------------


def pvc_key(namespace: str, name: str) -> str:
    return f"{namespace}/{name}"


def claim_key(pvc: PersistentVolumeClaim) -> str:
    return pvc_key(pvc.metadata.namespace, pvc.metadata.name)


def claim_class(pvc: PersistentVolumeClaim) -> str:
    """The PVC's storage class: the beta annotation first, then ``spec.storageClassName``."""
    beta = pvc.metadata.annotations.get(ANN_BETA_STORAGE_CLASS)
    if beta is not None:
        return beta
    return pvc.spec.storage_class_name or ""


def volume_class(pv: PersistentVolume) -> str:
    beta = pv.metadata.annotations.get(ANN_BETA_STORAGE_CLASS)
    if beta is not None:
        return beta
    return pv.spec.storage_class_name


def ephemeral_claim_name(pod: Pod, volume: Volume) -> str:
    """The PVC name of a generic ephemeral volume: ``<pod>-<volume>``."""
    return f"{pod.metadata.name}-{volume.name}"


def claim_name_of(pod: Pod, volume: Volume) -> tuple[str, bool] | None:
    """(PVC name, is ephemeral) for a PVC-backed volume, None for other volume types."""
    if volume.persistent_volume_claim is not None:
        return volume.persistent_volume_claim.claim_name, False
    if volume.ephemeral is not None:
        return ephemeral_claim_name(pod, volume), True
    return None


def check_ephemeral_owner(pod: Pod, pvc: PersistentVolumeClaim) -> str | None:
    """Upstream ``ephemeral.VolumeIsForPod``: an error text unless the pod controls the PVC."""
    owned = pvc.metadata.namespace == pod.metadata.namespace and any(
        ref.controller and ref.uid == pod.metadata.uid for ref in pvc.metadata.owner_references
    )
    if owned:
        return None
    meta, pmeta = pvc.metadata, pod.metadata
    return (
        f"PVC {meta.namespace}/{meta.name} was not created for pod "
        f"{pmeta.namespace}/{pmeta.name} (pod is not owner)"
    )


def is_delay_binding_mode(pvc: PersistentVolumeClaim, classes: Mapping[str, StorageClass]) -> bool:
    """Upstream ``IsDelayBindingMode``: the claim's class exists and waits for the first consumer."""
    name = claim_class(pvc)
    if not name:
        return False
    sc = classes.get(name)
    if sc is None:
        return False
    if sc.volume_binding_mode is None:
        raise StorageError(f'VolumeBindingMode not set for StorageClass "{name}"')
    return sc.volume_binding_mode == BINDING_WAIT_FOR_FIRST_CONSUMER


def is_pvc_fully_bound(pvc: PersistentVolumeClaim) -> bool:
    """Bound for the scheduler: a volume name and the ``bind-completed`` annotation (any value)."""
    return bool(pvc.spec.volume_name) and ANN_BIND_COMPLETED in pvc.metadata.annotations


def is_volume_bound_to_claim(pv: PersistentVolume, pvc: PersistentVolumeClaim) -> bool:
    ref = pv.spec.claim_ref
    if ref is None:
        return False
    if ref.name != pvc.metadata.name or ref.namespace != pvc.metadata.namespace:
        return False
    return not ref.uid or ref.uid == pvc.metadata.uid


def claim_reference(pvc: PersistentVolumeClaim) -> ObjectReference:
    """``reference.GetReference`` of a claim (kind, apiVersion, namespace, name, uid, resourceVersion)."""
    meta = pvc.metadata
    return ObjectReference(
        kind="PersistentVolumeClaim",
        api_version="v1",
        namespace=meta.namespace,
        name=meta.name,
        uid=meta.uid,
        resource_version=meta.resource_version,
    )


def bind_volume_to_claim(pv: PersistentVolume, pvc: PersistentVolumeClaim) -> tuple[PersistentVolume, bool]:
    """Upstream ``GetBindVolumeToClaim``: a copy of ``pv`` bound to ``pvc``, and whether it changed."""
    set_bound_by_controller = not is_volume_bound_to_claim(pv, pvc)
    spec = pv.spec
    meta = pv.metadata
    dirty = False
    ref = spec.claim_ref
    if (
        ref is None
        or ref.name != pvc.metadata.name
        or ref.namespace != pvc.metadata.namespace
        or ref.uid != pvc.metadata.uid
    ):
        spec = msgspec.structs.replace(spec, claim_ref=claim_reference(pvc))
        dirty = True
    if set_bound_by_controller and ANN_BOUND_BY_CONTROLLER not in meta.annotations:
        meta = msgspec.structs.replace(meta, annotations={**meta.annotations, ANN_BOUND_BY_CONTROLLER: "yes"})
        dirty = True
    return msgspec.structs.replace(pv, metadata=meta, spec=spec), dirty


def with_annotation(pvc: PersistentVolumeClaim, key: str, value: str) -> PersistentVolumeClaim:
    meta = msgspec.structs.replace(pvc.metadata, annotations={**pvc.metadata.annotations, key: value})
    return msgspec.structs.replace(pvc, metadata=meta)


# --- quantities --------------------------------------------------------------------------------------


def storage_quantity(resources: Mapping[str, str] | None, owner: str) -> Quantity:
    """The ``storage`` quantity of a resource list (zero when absent); ``owner`` names the object."""
    text = resources.get(RESOURCE_STORAGE) if resources else None
    if text is None:
        return _ZERO
    try:
        return parse_quantity(text)
    except QuantityError as exc:
        raise StorageError(f"{owner}: invalid storage quantity {text!r}: {exc}") from None


def requested_storage(pvc: PersistentVolumeClaim) -> Quantity:
    requests = pvc.spec.resources.requests if pvc.spec.resources is not None else None
    return storage_quantity(requests, f"PersistentVolumeClaim {claim_key(pvc)} spec.resources.requests")


def volume_capacity(pv: PersistentVolume) -> Quantity:
    return storage_quantity(pv.spec.capacity, f"PersistentVolume {pv.metadata.name} spec.capacity")


def has_storage_request(pvc: PersistentVolumeClaim) -> bool:
    return pvc.spec.resources is not None and RESOURCE_STORAGE in pvc.spec.resources.requests


# --- matching ---------------------------------------------------------------------------------------

_affinity_cache: dict[int, tuple[NodeSelector, nodeselector.NodeSelector]] = {}
_AFFINITY_CACHE_LIMIT = 4096


def _affinity_matcher(selector: NodeSelector) -> nodeselector.NodeSelector:
    key = id(selector)
    hit = _affinity_cache.get(key)
    if hit is not None and hit[0] is selector:
        return hit[1]
    if len(_affinity_cache) >= _AFFINITY_CACHE_LIMIT:
        _affinity_cache.clear()
    matcher = nodeselector.NodeSelector(selector)
    _affinity_cache[key] = (selector, matcher)
    return matcher


def check_node_affinity(pv: PersistentVolume, node_labels: Mapping[str, str]) -> bool:
    """Upstream ``CheckNodeAffinity``: the PV's required node affinity matches the labels.

    Field selectors are ignored (the node has no name here), terms that fail to parse never match.
    """
    affinity = pv.spec.node_affinity
    if affinity is None or affinity.required is None:
        return True
    return _affinity_matcher(affinity.required).matches(node_labels, "")


def volume_mode_mismatch(pvc: PersistentVolumeClaim, pv: PersistentVolume) -> bool:
    """Upstream ``CheckVolumeModeMismatches`` (unset means Filesystem on both sides)."""
    return (pvc.spec.volume_mode or FILESYSTEM) != (pv.spec.volume_mode or FILESYSTEM)


def access_modes_satisfied(pvc: PersistentVolumeClaim, pv: PersistentVolume) -> bool:
    """Upstream ``CheckAccessModes``: the PV offers every mode the claim asks for."""
    offered = set(pv.spec.access_modes)
    return all(mode in offered for mode in pvc.spec.access_modes)


def claim_selector(pvc: PersistentVolumeClaim) -> Selector | None:
    selector: LabelSelector | None = pvc.spec.selector
    if selector is None:
        return None
    try:
        return label_selector_as_selector(selector)
    except SelectorError as exc:
        raise StorageError(
            f"error creating internal label selector for claim: {claim_key(pvc)}: {exc}"
        ) from None


def find_matching_volume(
    pvc: PersistentVolumeClaim,
    volumes: Iterable[PersistentVolume],
    node_labels: Mapping[str, str] | None,
    excluded: Mapping[str, object] | set[str],
    delay_binding: bool,
) -> PersistentVolume | None:
    """Upstream ``FindMatchingVolume``: a volume pre-bound to the claim, else the smallest fit.

    ``node_labels`` is given on the scheduler path (PV node affinity is checked, access modes too).
    VolumeAttributesClass matching is not done: ksched's API structs do not carry the field yet.
    """
    requested = requested_storage(pvc)
    requested_class = claim_class(pvc)
    selector = claim_selector(pvc)
    smallest: PersistentVolume | None = None
    smallest_qty = _ZERO
    for pv in volumes:
        if pv.metadata.name in excluded:
            continue
        bound_to_claim = is_volume_bound_to_claim(pv, pvc)
        if pv.spec.claim_ref is not None and not bound_to_claim:
            continue
        qty = volume_capacity(pv)
        if qty < requested:
            continue
        if volume_mode_mismatch(pvc, pv):
            continue
        if pv.metadata.deletion_timestamp is not None:
            continue
        affinity_ok = node_labels is None or check_node_affinity(pv, node_labels)
        if bound_to_claim:
            return pv if affinity_ok else None
        if node_labels is None and delay_binding:
            continue
        if pv.status.phase != VOLUME_AVAILABLE:
            continue
        if selector is not None and not selector.matches(pv.metadata.labels):
            continue
        if volume_class(pv) != requested_class:
            continue
        if not affinity_ok:
            continue
        if node_labels is not None and not access_modes_satisfied(pvc, pv):
            continue
        if smallest is None or smallest_qty > qty:
            smallest, smallest_qty = pv, qty
    return smallest


def match_topology_selector_terms(terms: Sequence[TopologySelectorTerm], labels: Mapping[str, str]) -> bool:
    """Upstream ``MatchTopologySelectorTerms``: no terms match everything; terms are ORed, an empty
    term matches nothing, requirements within a term are ANDed (``key in values``)."""
    if not terms:
        return True
    for term in terms:
        exprs = term.match_label_expressions
        if not exprs:
            continue
        if all(expr.values and labels.get(expr.key) in expr.values for expr in exprs):
            return True
    return False


def label_zones(value: str) -> frozenset[str] | None:
    """Upstream ``LabelZonesToSet``: zones joined by ``__``; None when one of them is empty."""
    zones = [zone.strip() for zone in value.split(MULTI_ZONE_DELIMITER)]
    if any(not zone for zone in zones):
        return None
    return frozenset(zones)
