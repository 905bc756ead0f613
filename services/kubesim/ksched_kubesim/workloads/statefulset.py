"""The StatefulSet controller, after upstream's ``pkg/controller/statefulset``: a ControllerRevision
``<set>-<hash>`` per template (``workload_hash.revision_hash``), pods ``<set>-<ordinal>`` labelled
with their revision (``controller-revision-hash``), name and index, with ``hostname``/``subdomain``
and a PersistentVolumeClaim ``<claim>-<set>-<ordinal>`` per volume claim template. ``OrderedReady``
creates one pod at a time once the lower ones are Running and Ready, and removes the highest first;
``Parallel`` does all at once. A RollingUpdate replaces pods at or above the partition, highest
first, one at a time. Old revisions beyond ``revisionHistoryLimit`` are deleted.

Not modelled: ``maxUnavailable`` above 1, PVC retention policies (claims are kept), ``minReadySeconds``
for the update order (availableReplicas does count it).
"""

from __future__ import annotations

import copy
import re

from ..apps_strategies import STATEFUL_SET_STATUS_ORDER
from ..errors import ApiError
from ..jsonio import JSON, now
from ..pods import ordered
from ..registry import PODS, DeleteOptions
from ..store import Entry
from ..workload_hash import revision_data, revision_hash
from .common import (
    PVCS,
    REVISIONS,
    STATEFUL_SETS,
    Controller,
    available_after,
    controller_ref,
    is_available,
    is_deleting,
    is_ready,
    labels_of,
    phase,
    pod_from_template,
)

REVISION_LABEL = "controller-revision-hash"
HASH_LABEL = "controller.kubernetes.io/hash"
POD_NAME_LABEL = "statefulset.kubernetes.io/pod-name"
POD_INDEX_LABEL = "apps.kubernetes.io/pod-index"
_ORDINAL = re.compile(r"^(.*)-([0-9]+)$")


def _spec(obj: JSON) -> JSON:
    return obj.get("spec") or {}


def ordinal_of(set_name: str, pod: JSON) -> int | None:
    match = _ORDINAL.match(pod["metadata"]["name"])
    if match is None or match.group(1) != set_name:
        return None
    return int(match.group(2))


def running_and_ready(pod: JSON) -> bool:
    return phase(pod) == "Running" and is_ready(pod)


def _healthy(pod: JSON) -> bool:
    return running_and_ready(pod) and not is_deleting(pod)


class StatefulSetController(Controller):
    rt = STATEFUL_SETS

    def sync(self, namespace: str, name: str) -> None:
        entry = self.get(namespace, name)
        if entry is None:
            return
        sts = entry.obj()
        spec = _spec(sts)
        pods = self.claim(entry, sts, PODS, spec.get("selector"))
        if entry.deleting:
            return
        revisions = sorted(self.owned(entry, REVISIONS), key=lambda r: int(r.get("revision") or 0))
        status = dict(sts.get("status") or {})
        update, collisions = self._update_revision(sts, revisions, int(status.get("collisionCount") or 0))
        revisions = sorted(self.owned(entry, REVISIONS), key=lambda r: int(r.get("revision") or 0))
        current = next(
            (r for r in revisions if r["metadata"]["name"] == status.get("currentRevision")), update
        )
        self._manage_pods(sts, pods, current, update)
        pods = self.owned(entry, PODS)
        self._write_status(entry, sts, pods, current, update, collisions)
        self._truncate_history(sts, revisions, pods, current, update)

    # --- revisions ----------------------------------------------------------------------------

    def _update_revision(self, sts: JSON, revisions: list[JSON], collisions: int) -> tuple[JSON, int]:
        """The revision of the current template (created, or an equal older one renumbered), and the
        collision count after any name collision."""
        data = revision_data(_spec(sts).get("template") or {})
        next_number = int(revisions[-1].get("revision") or 0) + 1 if revisions else 1
        equal = [r for r in revisions if r.get("data") == data]
        if equal:
            found = equal[-1]
            if found is revisions[-1]:
                return found, collisions
            found["revision"] = next_number
            return self.update(REVISIONS, found), collisions
        template_labels = dict(((_spec(sts).get("template") or {}).get("metadata") or {}).get("labels") or {})
        while True:
            hash_value = revision_hash(_spec(sts).get("template") or {}, collisions)
            revision: JSON = {
                "apiVersion": "apps/v1",
                "kind": "ControllerRevision",
                "metadata": {
                    "name": f"{sts['metadata']['name'][:223]}-{hash_value}",
                    "namespace": sts["metadata"].get("namespace", ""),
                    "labels": {**template_labels, HASH_LABEL: hash_value},
                    "ownerReferences": [controller_ref(sts, self.rt)],
                },
                "data": data,
                "revision": next_number,
            }
            if sts["metadata"].get("annotations"):
                revision["metadata"]["annotations"] = dict(sts["metadata"]["annotations"])
            try:
                return self.create(REVISIONS, revision), collisions
            except ApiError as exc:
                if exc.code != 409:
                    raise
                existing = self.registry.table(REVISIONS).get(
                    revision["metadata"]["namespace"], revision["metadata"]["name"]
                )
                if existing is not None and existing.obj().get("data") == data:
                    return existing.obj(), collisions
                collisions += 1

    def _template_of(self, revision: JSON) -> JSON:
        template = copy.deepcopy(((revision.get("data") or {}).get("spec") or {}).get("template") or {})
        template.pop("$patch", None)
        return template

    def _truncate_history(
        self, sts: JSON, revisions: list[JSON], pods: list[JSON], current: JSON, update: JSON
    ) -> None:
        live = {current["metadata"]["name"], update["metadata"]["name"]}
        live |= {labels_of(p).get(REVISION_LABEL, "") for p in pods}
        history = [r for r in revisions if r["metadata"]["name"] not in live]
        limit = int(_spec(sts).get("revisionHistoryLimit", 10))
        for revision in history[: max(0, len(history) - limit)]:
            try:
                self.registry.delete(
                    REVISIONS,
                    revision["metadata"]["namespace"],
                    revision["metadata"]["name"],
                    DeleteOptions(),
                )
            except ApiError:
                continue

    # --- pods ---------------------------------------------------------------------------------

    def _new_pod(self, sts: JSON, ordinal: int, revision: JSON) -> JSON:
        """Upstream ``newVersionedStatefulSetPod``: identity, storage and the revision label."""
        set_name = sts["metadata"]["name"]
        name = f"{set_name}-{ordinal}"
        pod = pod_from_template(self._template_of(revision), sts, self.rt)
        meta, spec = pod["metadata"], pod["spec"]
        meta["name"] = name
        meta["labels"] = {
            **(meta.get("labels") or {}),
            POD_NAME_LABEL: name,
            POD_INDEX_LABEL: str(ordinal),
            REVISION_LABEL: revision["metadata"]["name"],
        }
        spec["hostname"] = name
        if _spec(sts).get("serviceName"):
            spec["subdomain"] = _spec(sts)["serviceName"]
        claims = self._claims(sts, ordinal)
        if claims:
            volumes = [
                {"name": volume, "persistentVolumeClaim": {"claimName": claim["metadata"]["name"]}}
                for volume, claim in claims.items()
            ]
            volumes += [v for v in spec.get("volumes") or [] if v.get("name") not in claims]
            spec["volumes"] = volumes
        return pod

    def _claims(self, sts: JSON, ordinal: int) -> dict[str, JSON]:
        """The PersistentVolumeClaims of a pod (upstream ``getPersistentVolumeClaims``)."""
        out: dict[str, JSON] = {}
        match_labels = (_spec(sts).get("selector") or {}).get("matchLabels") or {}
        for template in _spec(sts).get("volumeClaimTemplates") or []:
            if not isinstance(template, dict):
                continue
            claim = copy.deepcopy(template)
            claim.pop("status", None)
            claim.pop("apiVersion", None)
            claim.pop("kind", None)
            meta = claim.setdefault("metadata", {})
            volume = str(meta.get("name") or "")
            meta["name"] = f"{volume}-{sts['metadata']['name']}-{ordinal}"
            meta["namespace"] = sts["metadata"].get("namespace", "")
            meta["labels"] = {**(meta.get("labels") or {}), **match_labels}
            out[volume] = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", **claim}
        return out

    def _create_pod(self, sts: JSON, ordinal: int, revision: JSON) -> None:
        pod = self._new_pod(sts, ordinal, revision)
        claims = self.registry.table(PVCS)
        for claim in self._claims(sts, ordinal).values():
            if claims.get(claim["metadata"]["namespace"], claim["metadata"]["name"]) is None:
                self.create(PVCS, claim)
        self.create(PODS, pod)

    def _manage_pods(self, sts: JSON, pods: list[JSON], current: JSON, update: JSON) -> None:
        spec = _spec(sts)
        set_name = sts["metadata"]["name"]
        start = int((spec.get("ordinals") or {}).get("start") or 0)
        end = start + int(spec.get("replicas", 1))
        ordered_ready = spec.get("podManagementPolicy", "OrderedReady") == "OrderedReady"
        rolling = (spec.get("updateStrategy") or {}).get("type", "RollingUpdate") == "RollingUpdate"
        partition = int(((spec.get("updateStrategy") or {}).get("rollingUpdate") or {}).get("partition") or 0)
        by_ordinal: dict[int, JSON] = {}
        condemned: list[tuple[int, JSON]] = []
        for pod in pods:
            ordinal = ordinal_of(set_name, pod)
            if ordinal is None:
                continue
            if start <= ordinal < end:
                by_ordinal[ordinal] = pod
            else:
                condemned.append((ordinal, pod))
        for ordinal in range(start, end):
            found = by_ordinal.get(ordinal)
            if found is None:
                revision = current if rolling and ordinal < start + partition else update
                self._create_pod(sts, ordinal, revision)
                if ordered_ready:
                    return
            elif phase(found) in ("Failed", "Succeeded") and not is_deleting(found):
                self.delete_pod(found)
                if ordered_ready:
                    return
            elif ordered_ready and not _healthy(found):
                return
        for _, pod in sorted(condemned, key=lambda item: -item[0]):
            if is_deleting(pod):
                if ordered_ready:
                    return
                continue
            if ordered_ready and not all(_healthy(p) for p in by_ordinal.values()):
                return
            self.delete_pod(pod)
            if ordered_ready:
                return
        if not rolling or condemned:
            return
        for ordinal in range(end - 1, start + partition - 1, -1):
            target = by_ordinal.get(ordinal)
            if target is None:
                return
            if labels_of(target).get(REVISION_LABEL) != update["metadata"]["name"] and not is_deleting(
                target
            ):
                self.delete_pod(target)
                return
            if not _healthy(target):
                return

    # --- status -------------------------------------------------------------------------------

    def _write_status(
        self, entry: Entry, sts: JSON, pods: list[JSON], current: JSON, update: JSON, collisions: int
    ) -> None:
        min_ready = int(_spec(sts).get("minReadySeconds") or 0)
        at = now()
        current_name, update_name = current["metadata"]["name"], update["metadata"]["name"]
        created = [p for p in pods if phase(p)]
        live = [p for p in created if not is_deleting(p)]
        ready = [p for p in created if running_and_ready(p)]
        status: JSON = {
            "observedGeneration": sts["metadata"].get("generation", 1),
            "replicas": len(created),
            "readyReplicas": len(ready),
            "currentReplicas": sum(1 for p in live if labels_of(p).get(REVISION_LABEL) == current_name),
            "updatedReplicas": sum(1 for p in live if labels_of(p).get(REVISION_LABEL) == update_name),
            "currentRevision": current_name,
            "updateRevision": update_name,
            "collisionCount": collisions,
            "availableReplicas": sum(1 for p in ready if is_available(p, min_ready, at)),
        }
        rolling = (_spec(sts).get("updateStrategy") or {}).get("type", "RollingUpdate") == "RollingUpdate"
        if rolling and status["updatedReplicas"] == status["replicas"] == status["readyReplicas"]:
            status["currentReplicas"] = status["updatedReplicas"]
            status["currentRevision"] = update_name
        conditions = (sts.get("status") or {}).get("conditions")
        if conditions:
            status["conditions"] = conditions
        for key in ("readyReplicas", "currentReplicas", "updatedReplicas"):
            if not status[key]:
                del status[key]
        self.write_status(sts, ordered(status, STATEFUL_SET_STATUS_ORDER))
        wait = available_after(ready, min_ready, at)
        if wait is not None:
            self.queue(entry.namespace, entry.name, wait)
