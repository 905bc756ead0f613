"""``ksched simulate --output simulator``: each pending pod as kube-scheduler-simulator's debuggable
scheduler leaves it: its manifest with the result annotations, ``spec.nodeName`` set when it was
placed, and for a pod placed nowhere the PodScheduled=False condition (and ``nominatedNodeName``).
A YAML stream, one Pod per document, that ``kubectl create -f`` takes (``resourceVersion`` and
``managedFields`` are left out) and the simulator's scripts read (docs/simulate.md)."""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

import yaml

from ksched.reporting.simulator_results import result_annotations, with_history
from ksched.simulate.runner import PodOutcome


def pod_document(outcome: PodOutcome, manifest: Mapping[str, Any] | None) -> dict[str, Any]:
    """The pod of ``outcome`` (from its ``manifest`` as read) as the simulator leaves it."""
    namespace, _, name = outcome.pod.partition("/")
    pod: dict[str, Any] = copy.deepcopy(dict(manifest)) if manifest else {}
    pod["apiVersion"], pod["kind"] = "v1", "Pod"
    meta = pod.setdefault("metadata", {})
    meta.setdefault("name", name)
    meta.setdefault("namespace", namespace)
    for server_set in ("resourceVersion", "managedFields"):
        meta.pop(server_set, None)
    if outcome.record is not None:
        current = dict(meta.get("annotations") or {})
        meta["annotations"] = {**current, **with_history(result_annotations(outcome.record), current)}
    spec = pod.setdefault("spec", {})
    status = pod.setdefault("status", {})
    if outcome.node:
        spec["nodeName"] = outcome.node
        return pod
    if outcome.gated_by:
        return pod
    condition = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}
    if outcome.error is not None:
        condition["reason"] = "SchedulerError"
    if outcome.message:
        condition["message"] = outcome.message
    others = [c for c in status.get("conditions") or [] if c.get("type") != "PodScheduled"]
    status["conditions"] = [*others, condition]
    if outcome.nominated:
        status["nominatedNodeName"] = outcome.nominated
    return pod


def to_simulator_yaml(outcomes: Sequence[PodOutcome], manifests: Mapping[str, Mapping[str, Any]]) -> str:
    """Every outcome's pod, in queue order, as a YAML stream (``manifests``: ``namespace/name`` ->
    the pod as read)."""
    docs = [pod_document(o, manifests.get(o.pod)) for o in outcomes]
    return yaml.safe_dump_all(docs, sort_keys=False, default_flow_style=False, width=1 << 20)
