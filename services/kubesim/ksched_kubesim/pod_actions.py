"""Pod subresources with their own rules: ``binding`` (assign a node) and ``eviction`` (delete
unless a PodDisruptionBudget forbids it)."""

from __future__ import annotations

from typing import Any

from ksched.api.timestamps import rfc3339
from ksched.apimachinery.field import aggregate_message

from . import errors
from .errors import ApiError, FieldError, not_supported, required
from .jsonio import JSON
from .pods import POD_SPEC_ORDER, ordered, set_condition
from .registry import NODES, PDBS, PODS, DeleteOptions, Registry
from .selectors import matches_label_selector
from .store import Entry
from .strategies import copy_topology_labels


def bind(registry: Registry, namespace: str, name: str, binding: Any) -> Entry:
    """POST pods/{name}/binding: assign the pod to the target node (not checked to exist)."""
    if not isinstance(binding, dict):
        raise errors.bad_request("the body of the request was in an unknown format")
    meta = binding.get("metadata") or {}
    if (meta.get("name") or "") != name:
        raise errors.bad_request("name in URL does not match name in Binding object")
    if meta.get("namespace") and meta["namespace"] != namespace:
        raise errors.bad_request(
            "the namespace of the provided object does not match the namespace sent on the request"
        )
    target = binding.get("target") or {}
    errs: list[FieldError] = []
    if target.get("kind") and target["kind"] != "Node":
        errs.append(not_supported("target.kind", target["kind"], ["Node", "<empty>"]))
    if not target.get("name"):
        errs.append(required("target.name"))
    if errs:  # the binding REST returns the field errors as they are: a 500 with their text
        raise ApiError(errors.failure(500, "", aggregate_message(errs)))
    old = registry.get(PODS, namespace, name)
    pod = old.obj()
    pod_meta, spec = pod["metadata"], pod.setdefault("spec", {})
    if meta.get("uid") and meta["uid"] != pod_meta.get("uid"):
        raise errors.conflict(
            "pods/binding",
            "",
            name,
            f"Precondition failed: UID in precondition: {meta['uid']}, UID in object meta: "
            f"{pod_meta.get('uid')}",
        )
    if pod_meta.get("deletionTimestamp"):
        raise errors.conflict(
            "pods/binding", "", name, f"pod {name} is being deleted, cannot be assigned to a host"
        )
    if spec.get("nodeName"):
        raise errors.conflict(
            "pods/binding", "", name, f'pod {name} is already assigned to node "{spec["nodeName"]}"'
        )
    if spec.get("schedulingGates"):
        raise errors.conflict("pods/binding", "", name, f"pod {name} has non-empty .spec.schedulingGates")
    spec["nodeName"] = target["name"]
    pod["spec"] = ordered(spec, POD_SPEC_ORDER)  # in Go field order, as the real server writes it
    if meta.get("annotations"):
        pod_meta["annotations"] = {**(pod_meta.get("annotations") or {}), **meta["annotations"]}
    copy_topology_labels(pod_meta, registry.labels_of(NODES.key, "", target["name"]))
    status = pod.setdefault("status", {})
    set_condition(status, {"type": "PodScheduled", "status": "True"})
    registry.strategy(PODS).normalize(pod)
    return registry.put(PODS, pod, old)


def evict(registry: Registry, namespace: str, name: str, eviction: Any) -> None:
    """POST pods/{name}/eviction: delete the pod unless a PodDisruptionBudget forbids it."""
    if not isinstance(eviction, dict):
        raise errors.bad_request("the body of the request was in an unknown format")
    meta = eviction.get("metadata") or {}
    if (meta.get("name") or "") != name:
        raise errors.bad_request("name in URL does not match name in Eviction object")
    opts = DeleteOptions()
    if isinstance(eviction.get("deleteOptions"), dict):
        opts.merge(eviction["deleteOptions"])
    entry = registry.get(PODS, namespace, name)
    pod = entry.obj()
    status = pod.get("status") or {}
    ignorable = status.get("phase") in ("Succeeded", "Failed", "Pending") or bool(
        pod["metadata"].get("deletionTimestamp")
    )
    if not ignorable:
        _check_disruption_budget(registry, namespace, name, pod)
    if opts.dry_run:
        return
    if not pod["metadata"].get("deletionTimestamp"):
        set_condition(
            pod.setdefault("status", {}),
            {
                "type": "DisruptionTarget",
                "status": "True",
                "reason": "EvictionByEvictionAPI",
                "message": "Eviction API: evicting",
            },
        )
        registry.strategy(PODS).normalize(pod)
        entry = registry.put(PODS, pod, entry)
    registry.delete(PODS, namespace, name, opts)


def _check_disruption_budget(registry: Registry, namespace: str, name: str, pod: JSON) -> None:
    labels = pod["metadata"].get("labels") or {}
    table = registry.table(PDBS)
    budgets = [
        e
        for e in table.objects.values()
        if e.namespace == namespace
        and matches_label_selector((e.obj().get("spec") or {}).get("selector"), labels)
    ]
    if not budgets:
        return
    if len(budgets) > 1:
        raise errors.internal(
            "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support."
        )
    entry = budgets[0]
    pdb = entry.obj()
    pdb_status = pdb.setdefault("status", {})
    pdb_name = pdb["metadata"]["name"]
    ready = any(
        c.get("type") == "Ready" and c.get("status") == "True"
        for c in (pod.get("status") or {}).get("conditions") or []
        if isinstance(c, dict)
    )
    policy = (pdb.get("spec") or {}).get("unhealthyPodEvictionPolicy") or "IfHealthyBudget"
    current, desired = (
        int(pdb_status.get("currentHealthy") or 0),
        int(pdb_status.get("desiredHealthy") or 0),
    )
    if not ready and (policy == "AlwaysAllow" or current >= desired > 0):
        return
    refuse = "Cannot evict pod as it would violate the pod's disruption budget."
    if int(pdb_status.get("observedGeneration") or 0) < int(pdb["metadata"].get("generation") or 0):
        raise errors.too_many_requests(
            refuse,
            [
                {
                    "reason": "DisruptionBudget",
                    "message": f"The disruption budget {pdb_name} is still being processed by the server.",
                }
            ],
        )
    allowed = int(pdb_status.get("disruptionsAllowed") or 0)
    if allowed < 0:
        raise errors.forbidden("pods", "", name, "pdb disruptions allowed is negative")
    disrupted = pdb_status.get("disruptedPods") or {}
    if len(disrupted) > 2000:
        raise errors.forbidden(
            "pods",
            "",
            name,
            "DisruptedPods map too big - too many evictions not confirmed by PDB controller",
        )
    if allowed == 0:
        raise errors.too_many_requests(
            refuse,
            [
                {
                    "reason": "DisruptionBudget",
                    "message": f"The disruption budget {pdb_name} needs {desired} healthy pods "
                    f"and has {current} currently",
                }
            ],
        )
    pdb_status["disruptionsAllowed"] = allowed - 1
    pdb_status["disruptedPods"] = {**disrupted, name: rfc3339()}
    registry.strategy(PDBS).normalize(pdb)
    registry.put(PDBS, pdb, entry)
