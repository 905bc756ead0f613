"""kube-controller-manager's ``resourceclaim`` controller (upstream
``pkg/controller/resourceclaim``), and the garbage collector's part for generated claims.

* A pod with a claim from a template (``spec.resourceClaims[].resourceClaimTemplateName``) gets a
  ResourceClaim created from the template: named ``<pod>-<podClaimName>-<5 random characters>``
  (both parts shortened proportionally beyond 57 characters), owned by the pod (controller
  reference), annotated ``resource.kubernetes.io/pod-claim-name: <podClaimName>`` plus the template's
  annotations and labels; the pod's ``status.resourceClaimStatuses`` records the name (manager
  ``ResourceClaimController``). A claim the pod already owns for that pod claim is reused.
* A pod that ends (Succeeded/Failed), is deleted before it was scheduled, or is gone loses its
  ``reservedFor`` entries; a claim reserved for nobody then loses its allocation and the
  ``resource.kubernetes.io/delete-protection`` finalizer (allocated by the scheduler); a claim being
  deleted that is reserved for nobody loses both too.
* A generated claim reserved for nobody whose owning pod ended or was replaced is deleted; a gone
  pod's claims are deleted as the garbage collector does for dependents of a deleted owner.
* A scheduled pod whose allocated claim is not reserved for it gets reserved (upstream's syncPod).
* The claim the scheduler created for a pod's extended resources backed by DRA (named in
  ``status.extendedResourceClaimStatus``) is released and deleted with the pod like a generated one;
  any claim a deleted pod owns is collected, whether the pod names it or not.

Unlike upstream, a pod that has ended gets no claim (re)created: upstream's syncPod would create a
new claim for a finished pod whose generated claim it has just deleted.

Reactions run ``delay`` seconds after the change, through the lifecycle's timers. Not modelled: the
FailedResourceClaimCreation event, PodGroup claims (DRAWorkloadResourceClaims, off by default).
"""

from __future__ import annotations

import contextlib
from typing import Final

from .errors import ApiError
from .jsonio import JSON, encode, random_suffix
from .pv_controller import Later
from .registry import PODS, DeleteOptions, Registry
from .resources import BY_KEY
from .store import Change

CLAIMS = BY_KEY["resourceclaims.resource.k8s.io"]
TEMPLATES = BY_KEY["resourceclaimtemplates.resource.k8s.io"]

MANAGER: Final = "ResourceClaimController"
POD_CLAIM_ANNOTATION: Final = "resource.kubernetes.io/pod-claim-name"
FINALIZER: Final = "resource.kubernetes.io/delete-protection"
#: room for a hyphen and five random characters in a 63-character name
MAX_BASE_LENGTH: Final = 57


def generate_name(pod: str, pod_claim: str) -> str:
    """The ``generateName`` of a claim for ``pod``'s claim ``pod_claim`` (upstream's truncation)."""
    base = f"{pod}-{pod_claim}-"
    if len(base) <= MAX_BASE_LENGTH:
        return base
    whole = len(base)
    pod_part = pod[: len(pod) * MAX_BASE_LENGTH // whole]
    return f"{pod_part}-{pod_claim[: len(pod_claim) * MAX_BASE_LENGTH // whole]}"


def owning_pod(claim: JSON) -> tuple[str, str]:
    """(name, uid) of the pod that is the claim's controller owner, or ("", "")."""
    for ref in claim["metadata"].get("ownerReferences") or []:
        if ref.get("controller") and ref.get("apiVersion") == "v1" and ref.get("kind") == "Pod":
            return str(ref.get("name") or ""), str(ref.get("uid") or "")
    return "", ""


def pod_done(pod: JSON) -> bool:
    """Upstream ``isPodDone``: terminal, or deleted before it was scheduled."""
    phase = (pod.get("status") or {}).get("phase")
    if phase in ("Succeeded", "Failed"):
        return True
    return bool(pod["metadata"].get("deletionTimestamp")) and not (pod.get("spec") or {}).get("nodeName")


def claim_name_of(pod: JSON, pod_claim: JSON) -> str | None:
    """The ResourceClaim a pod claim refers to (upstream ``resourceclaim.Name``), None if not known yet."""
    if pod_claim.get("resourceClaimName"):
        return str(pod_claim["resourceClaimName"])
    for status in (pod.get("status") or {}).get("resourceClaimStatuses") or []:
        if status.get("name") == pod_claim.get("name"):
            return status.get("resourceClaimName") or None
    return None


def _uses_claims(pod: JSON) -> bool:
    """Whether the pod has claims of its own or one the scheduler created for its extended resources."""
    return bool((pod.get("spec") or {}).get("resourceClaims")) or bool(
        (pod.get("status") or {}).get("extendedResourceClaimStatus")
    )


def _drop_finalizer(claim: JSON) -> None:
    """Remove the delete-protection finalizer (the list omitted when empty, as Go encodes it)."""
    meta = claim["metadata"]
    rest = [f for f in meta.get("finalizers") or [] if f != FINALIZER]
    if rest:
        meta["finalizers"] = rest
    else:
        meta.pop("finalizers", None)


class ResourceClaimController:
    """Reacts to pod, claim and template changes in the store; see the module docstring."""

    def __init__(self, registry: Registry, delay: float, later: Later) -> None:
        self.registry = registry
        self.delay = delay
        self.later = later
        #: uids of pods seen removed (upstream's ``deletedObjects`` LRU)
        self._deleted: set[str] = set()

    # --- wiring ---------------------------------------------------------------------------------

    def on_change(self, key: str, change: Change) -> None:
        new, old = change.new, change.old
        if key == PODS.key:
            pod = (new or old).obj() if (new or old) is not None else None  # type: ignore[union-attr]
            if pod is None:
                return
            if not _uses_claims(pod):
                if new is None and self.registry.table(CLAIMS).objects:
                    self._collect_owned(pod)  # e.g. a claim created for it before its status named it
                return
            if new is None:
                self._deleted.add(str(pod["metadata"].get("uid") or ""))
                self._pod_removed(pod)
                return
            if pod_done(pod):
                self._queue_claims_of(pod)
            self._queue_pod(new.namespace, new.name)
        elif key == CLAIMS.key and new is not None:
            self._queue_claim(new.namespace, new.name)
        elif key == TEMPLATES.key and new is not None:
            for entry in list(self.registry.table(PODS).objects.values()):
                if entry.namespace == new.namespace:
                    self._queue_pod(entry.namespace, entry.name)

    def catch_up(self) -> None:
        """Queue every existing claim (the lifecycle replays existing pods through :meth:`on_change`)."""
        for entry in list(self.registry.table(CLAIMS).objects.values()):
            self._queue_claim(entry.namespace, entry.name)

    def _queue_pod(self, namespace: str, name: str) -> None:
        self.later((PODS.key, namespace, name, "claims"), self.delay, self.sync_pod, namespace, name)

    def _queue_claim(self, namespace: str, name: str) -> None:
        self.later((CLAIMS.key, namespace, name, "sync"), self.delay, self.sync_claim, namespace, name)

    def _queue_claims_of(self, pod: JSON) -> None:
        namespace = pod["metadata"]["namespace"]
        for pod_claim in (pod.get("spec") or {}).get("resourceClaims") or []:
            name = claim_name_of(pod, pod_claim)
            if name:
                self._queue_claim(namespace, name)
        extended = (pod.get("status") or {}).get("extendedResourceClaimStatus") or {}
        if extended.get("resourceClaimName"):
            self._queue_claim(namespace, str(extended["resourceClaimName"]))

    def _pod_removed(self, pod: JSON) -> None:
        """The pod is gone: release its claims, and delete the ones it owned (garbage collector)."""
        self._queue_claims_of(pod)
        self._collect_owned(pod)

    def _collect_owned(self, pod: JSON) -> None:
        namespace, uid = pod["metadata"]["namespace"], pod["metadata"].get("uid")
        for entry in list(self.registry.table(CLAIMS).objects.values()):
            if entry.namespace == namespace and owning_pod(entry.obj())[1] == uid:
                self.later(
                    (CLAIMS.key, namespace, entry.name, "collect"),
                    self.delay,
                    self._collect,
                    namespace,
                    entry.name,
                    uid,
                )

    def _collect(self, namespace: str, name: str, owner_uid: str) -> None:
        entry = self.registry.table(CLAIMS).get(namespace, name)
        if entry is None or entry.deleting or owning_pod(entry.obj())[1] != owner_uid:
            return
        with contextlib.suppress(ApiError):
            self.registry.delete(CLAIMS, namespace, name, DeleteOptions())

    # --- pods -----------------------------------------------------------------------------------

    def _claims(self, namespace: str) -> list[JSON]:
        return [e.obj() for e in self.registry.table(CLAIMS).objects.values() if e.namespace == namespace]

    def sync_pod(self, namespace: str, name: str) -> None:
        """Upstream ``syncPod``: create the missing claims, record them, reserve allocated ones."""
        entry = self.registry.table(PODS).get(namespace, name)
        if entry is None or entry.deleting:
            return
        pod = entry.obj()
        if pod_done(pod):
            return
        created: dict[str, str] = {}
        for pod_claim in (pod.get("spec") or {}).get("resourceClaims") or []:
            made = self._handle_claim(pod, pod_claim)
            if made:
                created[pod_claim["name"]] = made
        if created:
            statuses = [{"name": k, "resourceClaimName": v} for k, v in created.items()]
            body = {"status": {"resourceClaimStatuses": statuses}}
            try:
                self.registry.patch(
                    PODS,
                    namespace,
                    name,
                    "application/strategic-merge-patch+json",
                    encode(body),
                    subresource="status",
                    field_manager=MANAGER,
                )
            except ApiError:
                self._queue_pod(namespace, name)
                return
            pod = self.registry.get(PODS, namespace, name).obj()
        if not (pod.get("spec") or {}).get("nodeName"):
            return
        for pod_claim in (pod.get("spec") or {}).get("resourceClaims") or []:
            claim_name = claim_name_of(pod, pod_claim)
            claim = self.registry.get_obj(CLAIMS.key, namespace, claim_name) if claim_name else None
            if claim is None:
                continue
            status = claim.get("status") or {}
            reserved = status.get("reservedFor") or []
            uid = pod["metadata"]["uid"]
            if (
                status.get("allocation")
                and all(r.get("uid") != uid for r in reserved)
                and len(reserved) < 256
            ):
                consumer = {"resource": "pods", "name": name, "uid": uid}
                claim["status"] = {**status, "reservedFor": [*reserved, consumer]}
                self._write(claim, "status")

    def _handle_claim(self, pod: JSON, pod_claim: JSON) -> str | None:
        """Upstream ``handleClaim``: the name of a claim created (or found) for a template, else None."""
        namespace, uid = pod["metadata"]["namespace"], pod["metadata"]["uid"]
        known = claim_name_of(pod, pod_claim)
        if known:
            claim = self.registry.get_obj(CLAIMS.key, namespace, known)
            if claim is not None and owning_pod(claim)[1] == uid:
                return None
        template_name = pod_claim.get("resourceClaimTemplateName")
        if not template_name:
            return None
        for claim in self._claims(namespace):
            annotations = claim["metadata"].get("annotations") or {}
            if owning_pod(claim)[1] == uid and annotations.get(POD_CLAIM_ANNOTATION) == pod_claim.get("name"):
                return str(claim["metadata"]["name"])
        template = self.registry.get_obj(TEMPLATES.key, namespace, template_name)
        if template is None:
            return None
        meta = (template.get("spec") or {}).get("metadata") or {}
        pod_name = pod["metadata"]["name"]
        claim_meta: JSON = {
            "name": generate_name(pod_name, pod_claim["name"]) + random_suffix(),
            "annotations": {**(meta.get("annotations") or {}), POD_CLAIM_ANNOTATION: pod_claim["name"]},
            "ownerReferences": [
                {"apiVersion": "v1", "kind": "Pod", "name": pod_name, "uid": uid, "controller": True}
            ],
        }
        if meta.get("labels"):
            claim_meta["labels"] = dict(meta["labels"])
        body = {
            "apiVersion": CLAIMS.api_version,
            "kind": CLAIMS.kind,
            "metadata": claim_meta,
            "spec": (template.get("spec") or {}).get("spec") or {},
        }
        try:
            entry = self.registry.create(CLAIMS, namespace, body, manager=MANAGER)
        except ApiError:
            return None
        return entry.name

    # --- claims ---------------------------------------------------------------------------------

    def _pod_still_needs(self, namespace: str, ref: JSON) -> bool:
        if ref.get("apiGroup") or ref.get("resource") != "pods":
            return True
        if ref.get("uid") in self._deleted:
            return False
        pod = self.registry.get_obj(PODS.key, namespace, str(ref.get("name") or ""))
        return pod is not None and pod["metadata"].get("uid") == ref.get("uid") and not pod_done(pod)

    def sync_claim(self, namespace: str, name: str) -> None:
        """Upstream ``syncClaim``: drop reservations of pods that are done or gone, deallocate and
        unprotect an unused claim, delete a generated claim its pod no longer needs."""
        claim = self.registry.get_obj(CLAIMS.key, namespace, name)
        if claim is None:
            return
        status = claim.get("status") or {}
        reserved = status.get("reservedFor") or []
        remaining = [ref for ref in reserved if self._pod_still_needs(namespace, ref)]
        finalizers = list(claim["metadata"].get("finalizers") or [])
        if len(remaining) < len(reserved):
            new_status = {k: v for k, v in status.items() if k != "reservedFor"}
            if remaining:
                new_status["reservedFor"] = remaining
            elif FINALIZER in finalizers:
                new_status.pop("allocation", None)
            claim["status"] = new_status
            written = self._write(claim, "status")
            if written is None:
                return
            claim = written
            if FINALIZER in finalizers and not new_status.get("allocation"):
                _drop_finalizer(claim)
                written = self._write(claim)
                if written is None:
                    return
                claim = written
        elif FINALIZER in finalizers and claim["metadata"].get("deletionTimestamp") and not remaining:
            if status.get("allocation"):
                claim["status"] = {k: v for k, v in status.items() if k != "allocation"}
                written = self._write(claim, "status")
                if written is None:
                    return
                claim = written
            _drop_finalizer(claim)
            if self._write(claim) is None:
                return
        if remaining or claim["metadata"].get("deletionTimestamp"):
            return
        pod_name, pod_uid = owning_pod(claim)
        if not pod_name:
            return
        pod = self.registry.get_obj(PODS.key, namespace, pod_name)
        if pod is not None and (pod["metadata"].get("uid") != pod_uid or pod_done(pod)):
            with contextlib.suppress(ApiError):
                self.registry.delete(CLAIMS, namespace, name, DeleteOptions())

    def _write(self, claim: JSON, subresource: str | None = None) -> JSON | None:
        """Update the claim (conditionally on its resourceVersion); None (and a retry) when refused."""
        meta = claim["metadata"]
        try:
            entry = self.registry.update(
                CLAIMS, meta["namespace"], meta["name"], claim, subresource, manager=MANAGER
            )
        except ApiError:
            self._queue_claim(meta["namespace"], meta["name"])
            return None
        return entry.obj()
