"""A minimal PersistentVolume controller (kube-controller-manager's ``persistentvolume-binder``) and
external provisioner, doing what the scheduler's VolumeBinding plugin waits for.

* A PV without a claim, or pre-bound to a claim by name only, becomes ``Available``.
* A claim is bound to the PV pre-bound to it (``spec.claimRef``, set by the user, by VolumeBinding's
  PreBind, or by the provisioner) or, for an Immediate claim, to the smallest ``Available`` PV that
  fits (class, access modes, volume mode, capacity, selector). The writes are upstream ``bind``'s, in
  its order: the PV's ``claimRef`` (+ ``pv.kubernetes.io/bound-by-controller: "yes"`` when the
  controller made the binding), PV status ``Bound``; the claim's ``spec.volumeName`` (+
  ``bound-by-controller`` when the controller set it) and ``pv.kubernetes.io/bind-completed: "yes"``,
  claim status ``Bound`` with the PV's access modes and capacity.
* A WaitForFirstConsumer claim waits for the scheduler: a PV pre-bound to it, or the
  ``volume.kubernetes.io/selected-node`` annotation for dynamic provisioning.
* Dynamic provisioning (a class whose provisioner is not ``kubernetes.io/no-provisioner``): the claim
  is annotated with its provisioner (``volume.kubernetes.io/storage-provisioner`` and the beta key),
  then, as the external provisioner, a CSI PV ``pvc-<claim uid>`` is created pre-bound to the claim,
  annotated ``pv.kubernetes.io/provisioned-by``, shaped by claim and class, and pinned by a required
  node affinity to the selected node's topology (the driver's ``topologyKeys`` in the node's CSINode,
  else ``kubernetes.io/hostname``). A selected node that does not exist makes the provisioner give
  up and drop the annotation, so the scheduler retries the pod.
* A claim without a StorageClass gets the default class (``storageclass.kubernetes.io/is-default-class``),
  as upstream's retroactive default assignment does.
* A bound claim whose PV is gone, or that lost its volume name, turns ``Lost``; a PV whose claim is
  gone turns ``Released`` and, with the ``Delete`` reclaim policy, is deleted.

Each reaction runs ``delay`` seconds after the change that caused it, through the lifecycle's
timers, and writes through the registry like any API client. Not modelled: events, expansion,
recycling, provisioning retries, the provisioner's own finalizer, ``dataSource``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable
from typing import Any, Final, Protocol

from ksched.apimachinery.labels import SelectorError
from ksched.apimachinery.quantity import Quantity, QuantityError, parse_json_quantity

from .errors import ApiError
from .jsonio import JSON
from .managed_fields import CONTROLLER_MANAGER, PROVISIONER_MANAGER
from .registry import NODES, DeleteOptions, Registry
from .resources import BY_KEY
from .selectors import label_selector_of
from .store import Change

PVS = BY_KEY["persistentvolumes"]
PVCS = BY_KEY["persistentvolumeclaims"]
STORAGE_CLASSES = BY_KEY["storageclasses.storage.k8s.io"]
CSI_NODES = BY_KEY["csinodes.storage.k8s.io"]

ANN_BIND_COMPLETED: Final = "pv.kubernetes.io/bind-completed"
ANN_BOUND_BY_CONTROLLER: Final = "pv.kubernetes.io/bound-by-controller"
ANN_PROVISIONED_BY: Final = "pv.kubernetes.io/provisioned-by"
ANN_SELECTED_NODE: Final = "volume.kubernetes.io/selected-node"
ANN_STORAGE_PROVISIONER: Final = "volume.kubernetes.io/storage-provisioner"
ANN_BETA_STORAGE_PROVISIONER: Final = "volume.beta.kubernetes.io/storage-provisioner"
ANN_BETA_STORAGE_CLASS: Final = "volume.beta.kubernetes.io/storage-class"
ANN_DEFAULT_CLASS: Final = "storageclass.kubernetes.io/is-default-class"
NO_PROVISIONER: Final = "kubernetes.io/no-provisioner"
WAIT_FOR_FIRST_CONSUMER: Final = "WaitForFirstConsumer"
HOSTNAME_LABEL: Final = "kubernetes.io/hostname"
FSTYPE_PARAMETER: Final = "csi.storage.k8s.io/fstype"

AVAILABLE, BOUND, RELEASED, FAILED, PENDING, LOST = (
    "Available",
    "Bound",
    "Released",
    "Failed",
    "Pending",
    "Lost",
)


class Later(Protocol):
    """The lifecycle's timer: run ``callback(*args)`` after ``delay`` unless ``key`` is already due."""

    def __call__(
        self, key: tuple[str, str, str, str], delay: float, callback: Callable[..., None], *args: Any
    ) -> None: ...


def _annotations(obj: JSON) -> dict[str, str]:
    annotations: dict[str, str] = obj["metadata"].get("annotations") or {}
    return annotations


def _set_annotation(obj: JSON, key: str, value: str) -> None:
    obj["metadata"]["annotations"] = {**_annotations(obj), key: value}


def _spec(obj: JSON) -> JSON:
    spec: JSON = obj.get("spec") or {}
    return spec


def _phase(obj: JSON) -> str:
    return str((obj.get("status") or {}).get("phase") or "")


def claim_class(claim: JSON) -> str:
    """Upstream ``GetPersistentVolumeClaimClass``: the beta annotation wins over the field."""
    annotations = _annotations(claim)
    if ANN_BETA_STORAGE_CLASS in annotations:
        return annotations[ANN_BETA_STORAGE_CLASS]
    return str(_spec(claim).get("storageClassName") or "")


def volume_class(pv: JSON) -> str:
    annotations = _annotations(pv)
    if ANN_BETA_STORAGE_CLASS in annotations:
        return annotations[ANN_BETA_STORAGE_CLASS]
    return str(_spec(pv).get("storageClassName") or "")


def claim_reference(claim: JSON) -> JSON:
    """``reference.GetReference`` of a claim, in Go's field order."""
    meta = claim["metadata"]
    return {
        "kind": "PersistentVolumeClaim",
        "namespace": meta["namespace"],
        "name": meta["name"],
        "uid": meta["uid"],
        "apiVersion": "v1",
        "resourceVersion": meta.get("resourceVersion", ""),
    }


def bound_to_claim(pv: JSON, claim: JSON) -> bool:
    """Upstream ``IsVolumeBoundToClaim``: pre-bound (name) or bound (name and uid) to ``claim``."""
    ref = _spec(pv).get("claimRef")
    if not ref:
        return False
    meta = claim["metadata"]
    if ref.get("name") != meta["name"] or ref.get("namespace") != meta["namespace"]:
        return False
    return not ref.get("uid") or ref.get("uid") == meta.get("uid")


def _storage(resources: Any) -> Quantity | None:
    try:
        return parse_json_quantity((resources or {}).get("storage", "0"))
    except QuantityError:
        return None


def _requested(claim: JSON) -> Quantity | None:
    return _storage((_spec(claim).get("resources") or {}).get("requests"))


def _mode(spec: JSON) -> str:
    return str(spec.get("volumeMode") or "Filesystem")


def find_matching_volume(claim: JSON, volumes: Iterable[JSON], delay_binding: bool) -> JSON | None:
    """Upstream ``FindMatchingVolume`` in the controller's path (no node): the volume pre-bound to
    ``claim``, else (unless binding is delayed) the smallest Available one that fits."""
    requested = _requested(claim)
    if requested is None:
        return None
    wanted_class = claim_class(claim)
    raw_selector = _spec(claim).get("selector")
    try:
        selector = label_selector_of(raw_selector) if raw_selector is not None else None
    except SelectorError:
        return None  # upstream: "error creating internal label selector for claim"
    smallest: JSON | None = None
    smallest_size = requested
    for pv in volumes:
        spec = _spec(pv)
        if spec.get("claimRef") and not bound_to_claim(pv, claim):
            continue
        size = _storage(spec.get("capacity"))
        if size is None or size < requested or _mode(spec) != _mode(_spec(claim)):
            continue
        if pv["metadata"].get("deletionTimestamp"):
            continue
        if bound_to_claim(pv, claim):
            return pv
        if delay_binding:
            continue
        if _phase(pv) != AVAILABLE:
            continue
        if selector is not None and not selector.matches(pv["metadata"].get("labels") or {}):
            continue
        if volume_class(pv) != wanted_class:
            continue
        if smallest is None or smallest_size > size:
            smallest, smallest_size = pv, size
    return smallest


def find_best_match(claim: JSON, volumes: Iterable[JSON], delay_binding: bool) -> JSON | None:
    """Upstream ``findBestMatchForClaim``: volumes grouped by access-mode set, the groups holding every
    mode the claim asks for tried from the fewest modes up (by name within a group)."""
    wanted = set(_spec(claim).get("accessModes") or [])
    groups: dict[frozenset[str], list[JSON]] = {}
    for pv in volumes:
        modes = frozenset(_spec(pv).get("accessModes") or [])
        if wanted <= modes:
            groups.setdefault(modes, []).append(pv)
    for modes in sorted(groups, key=lambda m: (len(m), sorted(m))):
        members = sorted(groups[modes], key=lambda pv: str(pv["metadata"]["name"]))
        match = find_matching_volume(claim, members, delay_binding)
        if match is not None:
            return match
    return None


class PersistentVolumeController:
    """Reacts to PV, PVC and StorageClass changes in the store; see the module docstring."""

    def __init__(self, registry: Registry, delay: float, later: Later) -> None:
        self.registry = registry
        self.delay = delay
        self.later = later

    # --- wiring ---------------------------------------------------------------------------------

    def on_change(self, key: str, change: Change) -> None:
        new, old = change.new, change.old
        if key == PVS.key:
            if new is not None:
                self._queue_volume(new.name)
            elif old is not None:
                for claim in self._claims(lambda c: _spec(c).get("volumeName") == old.name):
                    self._queue_claim(claim["metadata"]["namespace"], claim["metadata"]["name"])
        elif key == PVCS.key:
            if new is not None:
                self._queue_claim(new.namespace, new.name)
            elif old is not None:
                for pv in self._volumes():
                    ref = _spec(pv).get("claimRef") or {}
                    if (ref.get("namespace"), ref.get("name")) == (old.namespace, old.name):
                        self._queue_volume(pv["metadata"]["name"])
        elif key == STORAGE_CLASSES.key and new is not None:
            for claim in self._claims(lambda c: not _spec(c).get("volumeName")):
                self._queue_claim(claim["metadata"]["namespace"], claim["metadata"]["name"])

    def _queue_volume(self, name: str) -> None:
        self.later((PVS.key, "", name, "sync"), self.delay, self.sync_volume, name)

    def _queue_claim(self, namespace: str, name: str) -> None:
        self.later((PVCS.key, namespace, name, "sync"), self.delay, self.sync_claim, namespace, name)

    def _volumes(self) -> list[JSON]:
        return [e.obj() for e in self.registry.table(PVS).objects.values()]

    def _claims(self, wanted: Callable[[JSON], bool]) -> list[JSON]:
        claims = (e.obj() for e in self.registry.table(PVCS).objects.values())
        return [c for c in claims if wanted(c)]

    def _write(self, rt: Any, obj: JSON, subresource: str | None = None) -> JSON | None:
        """Update ``obj`` (conditionally on its resourceVersion); None when the write was refused."""
        meta = obj["metadata"]
        try:
            entry = self.registry.update(
                rt, meta.get("namespace", ""), meta["name"], obj, subresource, manager=CONTROLLER_MANAGER
            )
        except ApiError:
            return None
        return entry.obj()

    # --- volumes --------------------------------------------------------------------------------

    def sync_volume(self, name: str) -> None:
        """Upstream ``syncVolume``."""
        entry = self.registry.table(PVS).get("", name)
        if entry is None or entry.deleting:
            return
        pv = entry.obj()
        ref = _spec(pv).get("claimRef")
        if not ref or not ref.get("uid"):
            self._volume_phase(pv, AVAILABLE)
            if ref:
                self._queue_claim(ref.get("namespace", ""), ref.get("name", ""))
            return
        claim_entry = self.registry.table(PVCS).get(ref.get("namespace", ""), ref.get("name", ""))
        if claim_entry is None or claim_entry.uid != ref["uid"]:
            self._release(pv)
            return
        claim = claim_entry.obj()
        volume_name = _spec(claim).get("volumeName") or ""
        if not volume_name:
            self._queue_claim(claim_entry.namespace, claim_entry.name)
        elif volume_name == name:
            self._volume_phase(pv, BOUND)
        elif (
            ANN_PROVISIONED_BY in _annotations(pv)
            and _spec(pv).get("persistentVolumeReclaimPolicy") == "Delete"
        ):
            self._release(pv)
        else:
            self._unbind_volume(pv)

    def _volume_phase(self, pv: JSON, phase: str) -> JSON | None:
        if _phase(pv) == phase:
            return pv
        status = {k: v for k, v in (pv.get("status") or {}).items() if k != "message"}
        return self._write(PVS, {**pv, "status": {**status, "phase": phase}}, "status")

    def _release(self, pv: JSON) -> None:
        """The claim is gone: Released, then the reclaim policy (Delete removes the volume)."""
        if _phase(pv) not in (RELEASED, FAILED):
            updated = self._volume_phase(pv, RELEASED)
            if updated is None:
                return
        if _spec(pv).get("persistentVolumeReclaimPolicy") == "Delete":
            with contextlib.suppress(ApiError):
                self.registry.delete(PVS, "", pv["metadata"]["name"], DeleteOptions())

    def _unbind_volume(self, pv: JSON) -> None:
        """Upstream ``unbindVolume``: drop a controller-made binding, or only the uid of a user's."""
        spec = dict(_spec(pv))
        annotations = dict(_annotations(pv))
        if ANN_BOUND_BY_CONTROLLER in annotations:
            spec.pop("claimRef", None)
            del annotations[ANN_BOUND_BY_CONTROLLER]
        else:
            spec["claimRef"] = {**spec["claimRef"], "uid": ""}
        meta = {**pv["metadata"], "annotations": annotations}
        if not annotations:
            del meta["annotations"]
        updated = self._write(PVS, {**pv, "metadata": meta, "spec": spec})
        if updated is not None:
            self._volume_phase(updated, AVAILABLE)

    # --- claims ---------------------------------------------------------------------------------

    def sync_claim(self, namespace: str, name: str) -> None:
        """Upstream ``syncClaim``."""
        entry = self.registry.table(PVCS).get(namespace, name)
        if entry is None or entry.deleting:
            return
        claim = entry.obj()
        if ANN_BIND_COMPLETED in _annotations(claim):
            self._sync_bound_claim(claim)
        else:
            self._sync_unbound_claim(claim)

    def _sync_unbound_claim(self, claim: JSON) -> None:
        volume_name = _spec(claim).get("volumeName")
        if volume_name:  # the user asked for a particular volume
            pv = self.registry.get_obj(PVS.key, "", volume_name)
            if pv is None or (_spec(pv).get("claimRef") and not bound_to_claim(pv, claim)):
                self._claim_status(claim, PENDING, None)
            elif _mode(_spec(pv)) == _mode(_spec(claim)):
                self._bind(pv, claim)
            return
        delay_binding = self._delay_binding(claim)
        pv = find_best_match(claim, self._volumes(), delay_binding)
        if pv is not None:
            self._bind(pv, claim)
            return
        if self._assign_default_class(claim):
            return  # the update queues the claim again
        if claim_class(claim) and (not delay_binding or ANN_SELECTED_NODE in _annotations(claim)):
            self._provision(claim)
            return
        self._claim_status(claim, PENDING, None)

    def _sync_bound_claim(self, claim: JSON) -> None:
        volume_name = _spec(claim).get("volumeName")
        pv = self.registry.get_obj(PVS.key, "", volume_name) if volume_name else None
        if pv is None:
            self._claim_status(claim, LOST, None)
            return
        ref = _spec(pv).get("claimRef")
        if not ref or ref.get("uid") == claim["metadata"]["uid"]:
            self._bind(pv, claim)
        else:
            self._claim_status(claim, LOST, None)

    def _delay_binding(self, claim: JSON) -> bool:
        name = claim_class(claim)
        sc = self.registry.get_obj(STORAGE_CLASSES.key, "", name) if name else None
        return sc is not None and sc.get("volumeBindingMode") == WAIT_FOR_FIRST_CONSUMER

    def _claim_status(self, claim: JSON, phase: str, pv: JSON | None) -> JSON | None:
        """Upstream ``updateClaimStatus``: phase, and the PV's access modes and capacity (or none)."""
        status = dict(claim.get("status") or {})
        status["phase"] = phase
        if pv is None:
            status.pop("accessModes", None)
            status.pop("capacity", None)
        else:
            status["accessModes"] = _spec(pv).get("accessModes")
            status["capacity"] = _spec(pv).get("capacity")
        if status == (claim.get("status") or {}):
            return claim
        return self._write(PVCS, {**claim, "status": status}, "status")

    def _assign_default_class(self, claim: JSON) -> bool:
        if _spec(claim).get("storageClassName") is not None or ANN_BETA_STORAGE_CLASS in _annotations(claim):
            return False
        defaults = [
            sc
            for sc in self.registry.list_objs(STORAGE_CLASSES.key)
            if _annotations(sc).get(ANN_DEFAULT_CLASS) == "true"
        ]
        if not defaults:
            return False
        newest = max(
            defaults, key=lambda sc: (sc["metadata"].get("creationTimestamp", ""), sc["metadata"]["name"])
        )
        spec = {**_spec(claim), "storageClassName": newest["metadata"]["name"]}
        return self._write(PVCS, {**claim, "spec": spec}) is not None

    # --- binding --------------------------------------------------------------------------------

    def _bind(self, pv: JSON, claim: JSON) -> None:
        """Upstream ``bind``: volume, volume status, claim, claim status (stops at the first failure)."""
        updated_pv = self._bind_volume_to_claim(pv, claim)
        if updated_pv is None:
            return
        updated_pv = self._volume_phase(updated_pv, BOUND)
        if updated_pv is None:
            return
        updated_claim = self._bind_claim_to_volume(claim, updated_pv)
        if updated_claim is None:
            return
        self._claim_status(updated_claim, BOUND, updated_pv)

    def _bind_volume_to_claim(self, pv: JSON, claim: JSON) -> JSON | None:
        set_by_controller = not bound_to_claim(pv, claim)
        spec = dict(_spec(pv))
        ref = spec.get("claimRef") or {}
        meta = claim["metadata"]
        dirty = False
        if (ref.get("name"), ref.get("namespace"), ref.get("uid")) != (
            meta["name"],
            meta["namespace"],
            meta["uid"],
        ):
            spec["claimRef"] = claim_reference(claim)
            dirty = True
        pv = {**pv, "metadata": dict(pv["metadata"]), "spec": spec}
        if set_by_controller and ANN_BOUND_BY_CONTROLLER not in _annotations(pv):
            _set_annotation(pv, ANN_BOUND_BY_CONTROLLER, "yes")
            dirty = True
        return self._write(PVS, pv) if dirty else pv

    def _bind_claim_to_volume(self, claim: JSON, pv: JSON) -> JSON | None:
        name = pv["metadata"]["name"]
        spec = dict(_spec(claim))
        set_by_controller = spec.get("volumeName") != name
        claim = {**claim, "metadata": dict(claim["metadata"]), "spec": spec}
        dirty = False
        if spec.get("volumeName") != name:
            spec["volumeName"] = name
            dirty = True
        if set_by_controller and ANN_BOUND_BY_CONTROLLER not in _annotations(claim):
            _set_annotation(claim, ANN_BOUND_BY_CONTROLLER, "yes")
            dirty = True
        if ANN_BIND_COMPLETED not in _annotations(claim):
            _set_annotation(claim, ANN_BIND_COMPLETED, "yes")
            dirty = True
        return self._write(PVCS, claim) if dirty else claim

    # --- provisioning ---------------------------------------------------------------------------

    def _provision(self, claim: JSON) -> None:
        """Upstream ``provisionClaim`` for an external provisioner, then that provisioner's work."""
        class_name = claim_class(claim)
        sc = self.registry.get_obj(STORAGE_CLASSES.key, "", class_name)
        if sc is None or not sc.get("provisioner") or sc["provisioner"] == NO_PROVISIONER:
            self._claim_status(claim, PENDING, None)
            return
        provisioner: str = sc["provisioner"]
        annotations = _annotations(claim)
        if (annotations.get(ANN_STORAGE_PROVISIONER), annotations.get(ANN_BETA_STORAGE_PROVISIONER)) != (
            provisioner,
            provisioner,
        ):
            claim = {**claim, "metadata": dict(claim["metadata"])}
            _set_annotation(claim, ANN_STORAGE_PROVISIONER, provisioner)
            _set_annotation(claim, ANN_BETA_STORAGE_PROVISIONER, provisioner)
            updated = self._write(PVCS, claim)
            if updated is None:
                return
            claim = updated
        self._provision_volume(claim, sc)

    def _provision_volume(self, claim: JSON, sc: JSON) -> None:
        meta = claim["metadata"]
        pv_name = f"pvc-{meta['uid']}"
        if self.registry.table(PVS).get("", pv_name) is not None:
            return  # provisioned already; its sync binds the claim
        provisioner: str = sc["provisioner"]
        affinity: JSON | None = None
        selected = _annotations(claim).get(ANN_SELECTED_NODE)
        if selected:
            node = self.registry.get_obj(NODES.key, "", selected)
            if node is None:  # the provisioner reschedules: the scheduler picks a node again
                annotations = {k: v for k, v in _annotations(claim).items() if k != ANN_SELECTED_NODE}
                self._write(PVCS, {**claim, "metadata": {**meta, "annotations": annotations}})
                return
            affinity = self._node_affinity(node, provisioner)
        claim_spec = _spec(claim)
        storage = ((claim_spec.get("resources") or {}).get("requests") or {}).get("storage")
        if storage is None:
            return
        csi: JSON = {"driver": provisioner, "volumeHandle": pv_name}
        fs_type = (sc.get("parameters") or {}).get(FSTYPE_PARAMETER)
        if fs_type:
            csi["fsType"] = fs_type
        spec: JSON = {
            "capacity": {"storage": storage},
            "accessModes": list(claim_spec.get("accessModes") or []),
            "claimRef": claim_reference(claim),
            "persistentVolumeReclaimPolicy": sc.get("reclaimPolicy") or "Delete",
            "storageClassName": claim_class(claim),
            "volumeMode": _mode(claim_spec),
            "csi": csi,
        }
        if sc.get("mountOptions"):
            spec["mountOptions"] = list(sc["mountOptions"])
        if affinity is not None:
            spec["nodeAffinity"] = affinity
        pv = {"metadata": {"name": pv_name, "annotations": {ANN_PROVISIONED_BY: provisioner}}, "spec": spec}
        with contextlib.suppress(ApiError):
            self.registry.create(PVS, "", pv, manager=PROVISIONER_MANAGER)

    def _node_affinity(self, node: JSON, driver: str) -> JSON | None:
        """The selected node's topology for ``driver``: its CSINode ``topologyKeys``, else the hostname."""
        name = node["metadata"]["name"]
        keys = [HOSTNAME_LABEL]
        csi_node = self.registry.get_obj(CSI_NODES.key, "", name)
        for entry in _spec(csi_node or {}).get("drivers") or []:
            if entry.get("name") == driver and entry.get("topologyKeys"):
                keys = list(entry["topologyKeys"])
        labels = node["metadata"].get("labels") or {}
        expressions = [{"key": k, "operator": "In", "values": [labels[k]]} for k in keys if k in labels]
        if not expressions:
            return None
        return {"required": {"nodeSelectorTerms": [{"matchExpressions": expressions}]}}


__all__ = ["PersistentVolumeController", "claim_reference", "find_best_match", "find_matching_volume"]
