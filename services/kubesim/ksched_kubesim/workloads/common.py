"""What the workload controllers share: pod predicates, controller references, owned objects through
the :class:`~ksched_kubesim.garbage_collector.OwnerIndex` (adoption and release as upstream's
``ControllerRefManager``), pods from templates, status writes, and the per-object work queue."""

from __future__ import annotations

import contextlib
import copy
import datetime as dt
import logging
import math
from collections.abc import Callable
from typing import Any

from ..errors import ApiError
from ..garbage_collector import OwnerIndex, owner_references
from ..jsonio import JSON, parse_time
from ..managed_fields import CONTROLLER_MANAGER
from ..registry import PODS, DeleteOptions, Registry
from ..resources import BY_KEY, ResourceType
from ..selectors import matches_label_selector
from ..store import Entry

log = logging.getLogger("ksched_kubesim")

DEPLOYMENTS = BY_KEY["deployments.apps"]
REPLICA_SETS = BY_KEY["replicasets.apps"]
STATEFUL_SETS = BY_KEY["statefulsets.apps"]
REVISIONS = BY_KEY["controllerrevisions.apps"]
JOBS = BY_KEY["jobs.batch"]
PVCS = BY_KEY["persistentvolumeclaims"]

#: seconds before a sync that failed (a conflict, a refused create) is tried again
RETRY_DELAY = 1.0
#: upstream's ``BurstReplicas``: at most this many pods created or deleted per sync
BURST = 500

Later = Callable[..., None]


# --- pods ------------------------------------------------------------------------------------


def phase(pod: JSON) -> str:
    return str((pod.get("status") or {}).get("phase") or "")


def is_terminal(pod: JSON) -> bool:
    return phase(pod) in ("Succeeded", "Failed")


def is_deleting(obj: JSON) -> bool:
    return bool(obj["metadata"].get("deletionTimestamp"))


def is_active(pod: JSON) -> bool:
    """Upstream ``IsPodActive``: not finished and not being deleted."""
    return not is_terminal(pod) and not is_deleting(pod)


def is_terminating(pod: JSON) -> bool:
    return is_deleting(pod) and not is_terminal(pod)


def ready_since(pod: JSON) -> dt.datetime | None:
    """When the pod's Ready condition turned True (None: not ready)."""
    for condition in (pod.get("status") or {}).get("conditions") or []:
        if isinstance(condition, dict) and condition.get("type") == "Ready":
            if condition.get("status") != "True":
                return None
            stamp = condition.get("lastTransitionTime")
            return parse_time(stamp) if isinstance(stamp, str) else dt.datetime.min.replace(tzinfo=dt.UTC)
    return None


def is_ready(pod: JSON) -> bool:
    return ready_since(pod) is not None


def is_available(pod: JSON, min_ready_seconds: int, at: dt.datetime) -> bool:
    """Ready for at least ``min_ready_seconds`` (upstream ``IsPodAvailable``)."""
    since = ready_since(pod)
    if since is None:
        return False
    return min_ready_seconds <= 0 or since + dt.timedelta(seconds=min_ready_seconds) <= at


def available_after(pods: list[JSON], min_ready_seconds: int, at: dt.datetime) -> float | None:
    """Seconds until the next ready pod becomes available (None: none is waiting)."""
    waits = []
    for pod in pods:
        since = ready_since(pod)
        if since is not None and min_ready_seconds > 0:
            left = (since + dt.timedelta(seconds=min_ready_seconds) - at).total_seconds()
            if left > 0:
                waits.append(left)
    return min(waits) if waits else None


def int_or_percent(value: Any, total: int, round_up: bool) -> int:
    """Upstream ``GetScaledValueFromIntOrPercent``."""
    if isinstance(value, str) and value.endswith("%"):
        scaled = int(value[:-1]) * total / 100
        return math.ceil(scaled) if round_up else math.floor(scaled)
    return int(value or 0)


def labels_of(obj: JSON) -> dict[str, str]:
    return dict(obj["metadata"].get("labels") or {})


# --- ownership -------------------------------------------------------------------------------


def controller_ref(owner: JSON, rt: ResourceType) -> JSON:
    """``metav1.NewControllerRef``."""
    meta = owner["metadata"]
    return {
        "apiVersion": rt.api_version,
        "kind": rt.kind,
        "name": meta["name"],
        "uid": meta["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }


def controller_uid_of(entry: Entry) -> str | None:
    for ref in owner_references(entry):
        if ref.get("controller"):
            return str(ref.get("uid") or "")
    return None


def pod_from_template(template: JSON, owner: JSON, rt: ResourceType, generate_name: str = "") -> JSON:
    """Upstream ``GetPodFromTemplate``: the template's labels, annotations and finalizers, the owner's
    controller reference, ``generateName`` ``<owner>-`` (or ``generate_name``), the template's spec."""
    template_meta = template.get("metadata") or {}
    meta: JSON = {"generateName": generate_name or f"{owner['metadata']['name']}-"}
    meta["namespace"] = owner["metadata"].get("namespace", "")
    for key in ("labels", "annotations", "finalizers"):
        if template_meta.get(key):
            meta[key] = copy.deepcopy(template_meta[key])
    meta["ownerReferences"] = [controller_ref(owner, rt)]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": copy.deepcopy(template.get("spec") or {}),
    }


class Controller:
    """One kind's controller: a work queue of (namespace, name) over the lifecycle's timers, and the
    objects it owns through the owner index."""

    rt: ResourceType

    def __init__(self, registry: Registry, index: OwnerIndex, later: Later) -> None:
        self.registry = registry
        self.index = index
        self.later = later
        #: uids of owners that look for orphans to adopt at their next sync (created or changed)
        self._adopting: set[str] = set()

    def queue(self, namespace: str, name: str, delay: float = 0.0) -> None:
        self.later((self.rt.key, namespace, name, "sync"), delay, self._sync, namespace, name)

    def queue_adopting(self, entry: Entry) -> None:
        self._adopting.add(entry.uid)
        self.queue(entry.namespace, entry.name)

    def _sync(self, namespace: str, name: str) -> None:
        try:
            self.sync(namespace, name)
        except ApiError as exc:  # a conflict with a concurrent write, a refused create ...
            log.debug("%s %s/%s: %s; retrying", self.rt.kind, namespace, name, exc)
            self.queue(namespace, name, RETRY_DELAY)
        except Exception:  # a kubesim bug: logged, and the object is looked at again later
            log.exception("%s controller failed on %s/%s", self.rt.kind, namespace, name)
            self.queue(namespace, name, RETRY_DELAY * 10)

    def sync(self, namespace: str, name: str) -> None:
        raise NotImplementedError

    def get(self, namespace: str, name: str) -> Entry | None:
        return self.registry.table(self.rt).get(namespace, name)

    # --- owned objects ------------------------------------------------------------------------

    def owned(self, owner: Entry, rt: ResourceType) -> list[JSON]:
        """Objects of ``rt`` whose controller reference is ``owner``."""
        table = self.registry.table(rt)
        out = []
        for _, namespace, name in self.index.of(owner.uid, rt.storage_key):
            entry = table.get(namespace, name)
            if entry is not None and controller_uid_of(entry) == owner.uid:
                out.append(entry.obj())
        return out

    def claim(self, owner: Entry, obj: JSON, rt: ResourceType, selector: Any) -> list[JSON]:
        """Upstream ``ClaimObjects``: the owned objects that still match ``selector`` (the others are
        released), plus orphans that match (adopted) when the owner was just created or changed."""
        claimed = []
        for dependent in self.owned(owner, rt):
            if matches_label_selector(selector, labels_of(dependent)) or is_deleting(obj):
                claimed.append(dependent)
            elif not is_deleting(dependent):
                self._set_owner(rt, dependent, owner.uid, None)
        if owner.uid in self._adopting:
            self._adopting.discard(owner.uid)
            if not is_deleting(obj):
                for entry in list(self.registry.table(rt).objects.values()):
                    if entry.namespace != owner.namespace or controller_uid_of(entry) is not None:
                        continue
                    if entry.deleting or not matches_label_selector(selector, entry.labels):
                        continue
                    adopted = self._set_owner(rt, entry.obj(), None, controller_ref(obj, self.rt))
                    if adopted is not None:
                        claimed.append(adopted)
        return claimed

    def _set_owner(self, rt: ResourceType, obj: JSON, release: str | None, adopt: JSON | None) -> JSON | None:
        meta = obj["metadata"]
        refs = [r for r in meta.get("ownerReferences") or [] if r.get("uid") != release]
        if adopt is not None:
            refs.append(adopt)
        if refs:
            meta["ownerReferences"] = refs
        else:
            meta.pop("ownerReferences", None)
        try:
            entry = self.registry.update(
                rt, meta.get("namespace", ""), meta["name"], obj, manager=CONTROLLER_MANAGER
            )
        except ApiError:
            return None
        return entry.obj()

    # --- writes -------------------------------------------------------------------------------

    def create(self, rt: ResourceType, obj: JSON) -> JSON:
        namespace = obj["metadata"].get("namespace", "")
        return self.registry.create(rt, namespace, obj, manager=CONTROLLER_MANAGER).obj()

    def update(self, rt: ResourceType, obj: JSON, subresource: str | None = None) -> JSON:
        meta = obj["metadata"]
        entry = self.registry.update(
            rt, meta.get("namespace", ""), meta["name"], obj, subresource, manager=CONTROLLER_MANAGER
        )
        return entry.obj()

    def delete_pod(self, pod: JSON) -> None:
        with contextlib.suppress(ApiError):
            self.registry.delete(PODS, pod["metadata"]["namespace"], pod["metadata"]["name"], DeleteOptions())

    def write_status(self, obj: JSON, status: JSON) -> JSON:
        """``status`` through ``/status`` if it changed (returns the object as stored)."""
        if obj.get("status") == status:
            return obj
        return self.update(self.rt, {**obj, "status": status}, "status")


def deletion_rank(pod: JSON, pods_on_node: dict[str, int]) -> tuple[Any, ...]:
    """Upstream ``ActivePodsWithRanks``: which pods a scale-down deletes first (smallest first):
    unscheduled, then pending, not ready, lower ``pod-deletion-cost``, more related pods on its node,
    ready for less time, more restarts, newer."""
    spec, status = pod.get("spec") or {}, pod.get("status") or {}
    node = spec.get("nodeName") or ""
    phase_rank = {"Pending": 0, "Unknown": 1, "Running": 2}.get(phase(pod), 0)
    since = ready_since(pod)
    try:
        cost = int(
            (pod["metadata"].get("annotations") or {}).get("controller.kubernetes.io/pod-deletion-cost", 0)
        )
    except ValueError:
        cost = 0
    restarts = sum(int(c.get("restartCount") or 0) for c in status.get("containerStatuses") or [])
    created = pod["metadata"].get("creationTimestamp")
    return (
        1 if node else 0,
        phase_rank,
        0 if since is None else 1,
        cost,
        -pods_on_node.get(node, 0) if node else 0,
        -(since.timestamp() if since else 0.0),
        -restarts,
        -parse_time(created).timestamp() if isinstance(created, str) else float("-inf"),
    )
