"""The Deployment controller, after upstream's ``pkg/controller/deployment`` (sync, rolling, recreate,
progress): a ReplicaSet per pod template, ``<deployment>-<pod-template-hash>``, with the hash label
on its selector, template and itself; rollouts that scale the new ReplicaSet up and the old ones down
within ``maxSurge``/``maxUnavailable`` (or all old ones first for ``Recreate``); proportional scaling
of a rollout in progress; the revision annotations; old ReplicaSets beyond ``revisionHistoryLimit``
deleted; and the status with its Available and Progressing conditions.

Not modelled: rollbacks through the deprecated annotation, the ProgressDeadlineExceeded timeout, the
paused/resumed Unknown condition.
"""

from __future__ import annotations

import copy
import math
from typing import Any

from ksched.api.timestamps import rfc3339

from ..apps_strategies import DEPLOYMENT_STATUS_ORDER
from ..errors import ApiError
from ..jsonio import JSON
from ..pods import ordered
from ..registry import PODS, DeleteOptions
from ..workload_hash import pod_template_hash
from .common import DEPLOYMENTS, REPLICA_SETS, Controller, controller_ref, int_or_percent, is_terminal

HASH_LABEL = "pod-template-hash"
REVISION = "deployment.kubernetes.io/revision"
REVISION_HISTORY = "deployment.kubernetes.io/revision-history"
DESIRED_REPLICAS = "deployment.kubernetes.io/desired-replicas"
MAX_REPLICAS = "deployment.kubernetes.io/max-replicas"
#: deployment annotations not copied to its ReplicaSets (upstream ``skipCopyAnnotation``)
NOT_COPIED = (
    "kubectl.kubernetes.io/last-applied-configuration",
    REVISION,
    REVISION_HISTORY,
    DESIRED_REPLICAS,
    MAX_REPLICAS,
    "deprecated.deployment.rollback.to",
)
MAX_REVISION_HISTORY_CHARS = 2000


def _spec(obj: JSON) -> JSON:
    return obj.get("spec") or {}


def _replicas(obj: JSON) -> int:
    return int(_spec(obj).get("replicas", 1))


def _status_int(obj: JSON, key: str) -> int:
    return int((obj.get("status") or {}).get(key) or 0)


def _annotations(obj: JSON) -> dict[str, str]:
    return obj["metadata"].get("annotations") or {}


def _revision(rs: JSON) -> int:
    try:
        return int(_annotations(rs).get(REVISION, "0"))
    except ValueError:
        return 0


def _created(rs: JSON) -> tuple[str, str]:
    return (rs["metadata"].get("creationTimestamp") or "", rs["metadata"]["name"])


def _next_revision(old_rss: list[JSON]) -> str:
    return str(max((_revision(rs) for rs in old_rss), default=0) + 1)


def _rolling(d: JSON) -> bool:
    return bool((_spec(d).get("strategy") or {}).get("type", "RollingUpdate") == "RollingUpdate")


def fenceposts(d: JSON) -> tuple[int, int]:
    """(maxSurge, maxUnavailable) resolved against the replicas (upstream ``ResolveFenceposts``)."""
    rolling = (_spec(d).get("strategy") or {}).get("rollingUpdate") or {}
    desired = _replicas(d)
    surge = int_or_percent(rolling.get("maxSurge", 0), desired, round_up=True)
    unavailable = int_or_percent(rolling.get("maxUnavailable", 0), desired, round_up=False)
    if surge == 0 and unavailable == 0:
        unavailable = 1
    return surge, unavailable


def max_surge(d: JSON) -> int:
    return fenceposts(d)[0] if _rolling(d) else 0


def max_unavailable(d: JSON) -> int:
    if not _rolling(d) or _replicas(d) == 0:
        return 0
    return min(fenceposts(d)[1], _replicas(d))


def _without_hash(template: JSON) -> JSON:
    template = copy.deepcopy(template)
    labels = (template.get("metadata") or {}).get("labels")
    if isinstance(labels, dict):
        labels.pop(HASH_LABEL, None)
        if not labels:
            template["metadata"].pop("labels")
    return template


def condition(kind: str, status: str, reason: str, message: str) -> JSON:
    stamp = rfc3339()
    return {
        "type": kind,
        "status": status,
        "lastUpdateTime": stamp,
        "lastTransitionTime": stamp,
        "reason": reason,
        "message": message,
    }


def set_condition(status: JSON, new: JSON) -> None:
    """Upstream ``SetDeploymentCondition``: unchanged status and reason keep the condition; a changed
    one keeps its transition time if the status is the same, and moves to the end."""
    conditions = status.get("conditions") or []
    current = next((c for c in conditions if c.get("type") == new["type"]), None)
    if (
        current is not None
        and current.get("status") == new["status"]
        and current.get("reason") == new["reason"]
    ):
        return
    if current is not None and current.get("status") == new["status"]:
        new["lastTransitionTime"] = current.get("lastTransitionTime")
    status["conditions"] = [c for c in conditions if c.get("type") != new["type"]] + [new]


def _get_condition(status: JSON, kind: str) -> JSON | None:
    return next((c for c in status.get("conditions") or [] if c.get("type") == kind), None)


class DeploymentController(Controller):
    rt = DEPLOYMENTS

    def sync(self, namespace: str, name: str) -> None:
        entry = self.get(namespace, name)
        if entry is None:
            return
        d = entry.obj()
        rs_list = self.claim(entry, d, REPLICA_SETS, _spec(d).get("selector"))
        new_rs, old_rss, d = self._new_and_old(d, rs_list)
        if entry.deleting:
            self._write_status(d, new_rs, old_rss, progress=False)
            return
        paused = bool(_spec(d).get("paused"))
        if paused or self._scaling_event(d, new_rs, old_rss):
            self._proportional(d, new_rs, old_rss)
            if paused:
                self._cleanup(d, old_rss)
            self._write_status(d, new_rs, old_rss, progress=False)
        elif _rolling(d):
            if new_rs is None:
                new_rs, d = self._create_new(d, old_rss, _next_revision(old_rss))
            self._rollout_rolling(d, new_rs, old_rss)
        else:
            self._rollout_recreate(d, new_rs, old_rss)

    # --- replica sets -------------------------------------------------------------------------

    def _new_and_old(self, d: JSON, rs_list: list[JSON]) -> tuple[JSON | None, list[JSON], JSON]:
        """(new ReplicaSet or None, the old ones, the deployment as stored): upstream
        ``getAllReplicaSetsAndSyncRevision`` without creating: the oldest ReplicaSet whose template is
        the deployment's (but for the hash label) is the new one; its annotations are brought up to date
        and the deployment takes its revision."""
        template = _without_hash(_spec(d).get("template") or {})
        matching = sorted(
            (rs for rs in rs_list if _without_hash(_spec(rs).get("template") or {}) == template), key=_created
        )
        new_rs = matching[0] if matching else None
        old_rss = [rs for rs in rs_list if rs is not new_rs]
        if new_rs is not None:
            new_rs, d = self._sync_new(d, new_rs, _next_revision(old_rss))
        return new_rs, old_rss, d

    def _copy_annotations(self, d: JSON, rs: JSON, revision: str, exists: bool) -> bool:
        """Upstream ``SetNewReplicaSetAnnotations``; whether anything changed."""
        annotations = dict(_annotations(rs))
        for key, value in _annotations(d).items():
            if key not in NOT_COPIED:
                annotations[key] = value
        old = annotations.get(REVISION, "")
        try:
            old_int = int(old) if old else 0
        except ValueError:
            return False
        if old_int < int(revision):
            annotations[REVISION] = revision
            if old:
                history = annotations.get(REVISION_HISTORY, "")
                revisions = [r for r in history.split(",") if r] + [old]
                while len(",".join(revisions)) > MAX_REVISION_HISTORY_CHARS and len(revisions) > 1:
                    revisions.pop(0)
                annotations[REVISION_HISTORY] = ",".join(revisions)
        if not exists:
            annotations[DESIRED_REPLICAS] = str(_replicas(d))
            annotations[MAX_REPLICAS] = str(_replicas(d) + max_surge(d))
        changed = annotations != _annotations(rs)
        rs["metadata"]["annotations"] = annotations
        return changed

    def _sync_new(self, d: JSON, new_rs: JSON, revision: str) -> tuple[JSON, JSON]:
        rs = copy.deepcopy(new_rs)
        changed = self._copy_annotations(d, rs, revision, exists=True)
        min_ready = _spec(d).get("minReadySeconds") or 0
        if changed or (_spec(rs).get("minReadySeconds") or 0) != min_ready:
            self._set_min_ready(rs, min_ready)
            return self.update(REPLICA_SETS, rs), d
        status = dict(d.get("status") or {})
        revision_changed = self._set_revision(d, _annotations(rs).get(REVISION, ""))
        if (
            _get_condition(status, "Progressing") is None
            and _spec(d).get("progressDeadlineSeconds") is not None
        ):
            set_condition(
                status,
                condition(
                    "Progressing",
                    "True",
                    "FoundNewReplicaSet",
                    f'Found new replica set "{rs["metadata"]["name"]}"',
                ),
            )
            d["status"] = status
            revision_changed = True
        if revision_changed:
            d = self.update(self.rt, d, "status")
        return rs, d

    @staticmethod
    def _set_min_ready(rs: JSON, min_ready: int) -> None:
        spec = rs["spec"]
        if min_ready:
            spec["minReadySeconds"] = min_ready
        else:
            spec.pop("minReadySeconds", None)

    @staticmethod
    def _set_revision(d: JSON, revision: str) -> bool:
        annotations = dict(_annotations(d))
        if not revision or annotations.get(REVISION) == revision:
            return False
        annotations[REVISION] = revision
        d["metadata"]["annotations"] = annotations
        return True

    def _create_new(self, d: JSON, old_rss: list[JSON], revision: str) -> tuple[JSON | None, JSON]:
        spec = _spec(d)
        status = dict(d.get("status") or {})
        template = copy.deepcopy(spec.get("template") or {})
        hash_value = pod_template_hash(template, status.get("collisionCount"))
        template.setdefault("metadata", {})["labels"] = {
            **(template["metadata"].get("labels") or {}),
            HASH_LABEL: hash_value,
        }
        selector = copy.deepcopy(spec.get("selector") or {})
        selector["matchLabels"] = {**(selector.get("matchLabels") or {}), HASH_LABEL: hash_value}
        name = f"{d['metadata']['name']}-{hash_value}"
        rs: JSON = {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "metadata": {
                "name": name,
                "namespace": d["metadata"].get("namespace", ""),
                "labels": dict(template["metadata"]["labels"]),
                "ownerReferences": [controller_ref(d, self.rt)],
            },
            "spec": {
                "replicas": 0,
                "selector": ordered(selector, ("matchLabels", "matchExpressions")),
                "template": template,
            },
        }
        self._set_min_ready(rs, spec.get("minReadySeconds") or 0)
        rs["spec"]["replicas"] = self._new_rs_replicas(d, [*old_rss, rs], rs)
        self._copy_annotations(d, rs, revision, exists=False)
        try:
            created = self.create(REPLICA_SETS, rs)
        except ApiError as exc:
            if exc.code != 409:
                if spec.get("progressDeadlineSeconds") is not None:
                    set_condition(
                        status,
                        condition(
                            "Progressing",
                            "False",
                            "ReplicaSetCreateError",
                            f'Failed to create new replica set "{name}": {exc}',
                        ),
                    )
                    d["status"] = status
                    self.update(self.rt, d, "status")
                raise
            existing = self.registry.table(REPLICA_SETS).get(rs["metadata"]["namespace"], name)
            found = existing.obj() if existing is not None else None
            ours = found is not None and any(
                r.get("uid") == d["metadata"]["uid"] and r.get("controller")
                for r in found["metadata"].get("ownerReferences") or []
            )
            if (
                found is not None
                and ours
                and _without_hash(_spec(found).get("template") or {})
                == _without_hash(spec.get("template") or {})
            ):
                return found, d
            status["collisionCount"] = int(status.get("collisionCount") or 0) + 1
            d["status"] = status
            self.update(self.rt, d, "status")
            raise
        self._set_revision(d, revision)
        if spec.get("progressDeadlineSeconds") is not None:
            set_condition(
                status,
                condition("Progressing", "True", "NewReplicaSetCreated", f'Created new replica set "{name}"'),
            )
        d["status"] = status
        return created, self.update(self.rt, d, "status")

    def _new_rs_replicas(self, d: JSON, all_rss: list[JSON], new_rs: JSON) -> int:
        """Upstream ``NewRSNewReplicas``."""
        if not _rolling(d):
            return _replicas(d)
        current = sum(int(_spec(rs).get("replicas", 0)) for rs in all_rss)
        most = _replicas(d) + max_surge(d)
        if current >= most:
            return int(_spec(new_rs).get("replicas", 0))
        up = min(most - current, _replicas(d) - int(_spec(new_rs).get("replicas", 0)))
        return int(_spec(new_rs).get("replicas", 0)) + up

    def _scale(self, d: JSON, rs: JSON, replicas: int) -> bool:
        """Set a ReplicaSet's replicas and replica annotations; whether the size changed."""
        rs_copy = copy.deepcopy(rs)
        annotations = dict(_annotations(rs_copy))
        annotations[DESIRED_REPLICAS] = str(_replicas(d))
        annotations[MAX_REPLICAS] = str(_replicas(d) + max_surge(d))
        resized = int(_spec(rs_copy).get("replicas", 0)) != replicas
        if not resized and annotations == _annotations(rs_copy):
            return False
        rs_copy["metadata"]["annotations"] = annotations
        rs_copy["spec"]["replicas"] = replicas
        stored = self.update(REPLICA_SETS, rs_copy)
        rs.clear()
        rs.update(stored)
        return resized

    def _scaling_event(self, d: JSON, new_rs: JSON | None, old_rss: list[JSON]) -> bool:
        for rs in [*old_rss, *([new_rs] if new_rs else [])]:
            if int(_spec(rs).get("replicas", 0)) <= 0:
                continue
            desired = _annotations(rs).get(DESIRED_REPLICAS)
            if desired is not None and desired.isdigit() and int(desired) != _replicas(d):
                return True
        return False

    # --- sync ---------------------------------------------------------------------------------

    def _rollout_rolling(self, d: JSON, new_rs: JSON | None, old_rss: list[JSON]) -> None:
        if new_rs is None:
            return
        all_rss = [*old_rss, new_rs]
        if self._reconcile_new(d, all_rss, new_rs) or self._reconcile_old(d, all_rss, old_rss, new_rs):
            self._write_status(d, new_rs, old_rss, progress=True)
            return
        if self._complete(d, d.get("status") or {}):
            self._cleanup(d, old_rss)
        self._write_status(d, new_rs, old_rss, progress=True)

    def _rollout_recreate(self, d: JSON, new_rs: JSON | None, old_rss: list[JSON]) -> None:
        scaled = False
        for rs in old_rss:
            if int(_spec(rs).get("replicas", 0)) != 0:
                scaled = self._scale(d, rs, 0) or scaled
        if scaled or self._old_pods_running(old_rss):
            self._write_status(d, new_rs, old_rss, progress=True)
            return
        if new_rs is None:
            new_rs, d = self._create_new(d, old_rss, _next_revision(old_rss))
        if new_rs is not None and int(_spec(new_rs).get("replicas", 0)) != _replicas(d):
            self._scale(d, new_rs, _replicas(d))
        if self._complete(d, d.get("status") or {}):
            self._cleanup(d, old_rss)
        self._write_status(d, new_rs, old_rss, progress=True)

    def _old_pods_running(self, old_rss: list[JSON]) -> bool:
        pods = self.registry.table(PODS)
        for rs in old_rss:
            if _status_int(rs, "replicas") > 0:
                return True
            for _, namespace, name in self.index.of(rs["metadata"]["uid"], PODS.storage_key):
                entry = pods.get(namespace, name)
                if entry is not None and not is_terminal(entry.obj()):
                    return True
        return False

    def _reconcile_new(self, d: JSON, all_rss: list[JSON], new_rs: JSON) -> bool:
        current, wanted = int(_spec(new_rs).get("replicas", 0)), _replicas(d)
        if current == wanted:
            return False
        if current > wanted:
            return self._scale(d, new_rs, wanted)
        return self._scale(d, new_rs, self._new_rs_replicas(d, all_rss, new_rs))

    def _reconcile_old(self, d: JSON, all_rss: list[JSON], old_rss: list[JSON], new_rs: JSON) -> bool:
        active_old = [rs for rs in old_rss if int(_spec(rs).get("replicas", 0)) > 0]
        if not active_old:
            return False
        all_pods = sum(int(_spec(rs).get("replicas", 0)) for rs in all_rss)
        min_available = _replicas(d) - max_unavailable(d)
        new_unavailable = int(_spec(new_rs).get("replicas", 0)) - _status_int(new_rs, "availableReplicas")
        max_scaled_down = all_pods - min_available - new_unavailable
        if max_scaled_down <= 0:
            return False
        cleaned = 0
        for rs in sorted(active_old, key=_created):  # unhealthy replicas first
            if cleaned >= max_scaled_down:
                break
            replicas = int(_spec(rs).get("replicas", 0))
            unhealthy = replicas - _status_int(rs, "availableReplicas")
            if replicas == 0 or unhealthy <= 0:
                continue
            down = min(max_scaled_down - cleaned, unhealthy)
            self._scale(d, rs, replicas - down)
            cleaned += down
        available = sum(_status_int(rs, "availableReplicas") for rs in all_rss)
        scaled = 0
        if available > min_available:
            total = available - min_available
            for rs in sorted(active_old, key=_created):
                replicas = int(_spec(rs).get("replicas", 0))
                if scaled >= total:
                    break
                if replicas == 0:
                    continue
                down = min(replicas, total - scaled)
                self._scale(d, rs, replicas - down)
                scaled += down
        return cleaned + scaled > 0

    def _proportional(self, d: JSON, new_rs: JSON | None, old_rss: list[JSON]) -> None:
        """Upstream ``scale``: one active ReplicaSet takes the replicas; else proportionally."""
        replicas = _replicas(d)
        active = [
            rs for rs in [*old_rss, *([new_rs] if new_rs else [])] if int(_spec(rs).get("replicas", 0)) > 0
        ]
        if len(active) <= 1:
            target = active[0] if active else (new_rs or (max(old_rss, key=_created) if old_rss else None))
            if target is not None and int(_spec(target).get("replicas", 0)) != replicas:
                self._scale(d, target, replicas)
            return
        if new_rs is not None and self._saturated(d, new_rs):
            for rs in active:
                if rs is not new_rs:
                    self._scale(d, rs, 0)
            return
        if not _rolling(d):
            return
        total = sum(int(_spec(rs).get("replicas", 0)) for rs in active)
        allowed = replicas + max_surge(d) if replicas > 0 else 0
        to_add = allowed - total
        # larger first; of the same size, newer first when adding, older first when removing
        active.sort(key=_created, reverse=to_add > 0)
        active.sort(key=lambda rs: -int(_spec(rs).get("replicas", 0)))
        added = 0
        sizes: dict[str, int] = {}
        for rs in active:
            size = int(_spec(rs).get("replicas", 0))
            proportion = self._proportion(d, rs, to_add, added) if to_add else 0
            sizes[rs["metadata"]["name"]] = size + proportion
            added += proportion
        for i, rs in enumerate(active):
            name = rs["metadata"]["name"]
            if i == 0 and to_add:
                sizes[name] = max(0, sizes[name] + to_add - added)
            self._scale(d, rs, sizes[name])

    def _proportion(self, d: JSON, rs: JSON, to_add: int, added: int) -> int:
        """Upstream ``GetReplicaSetProportion``."""
        size = int(_spec(rs).get("replicas", 0))
        if size == 0 or to_add == added:
            return 0
        if _replicas(d) == 0:
            fraction = -size
        else:
            most = _replicas(d) + max_surge(d)
            before: Any = _annotations(rs).get(MAX_REPLICAS)
            before = int(before) if isinstance(before, str) and before.isdigit() else 0
            if before == 0:
                before = _status_int(d, "replicas")
            fraction = 0 if before == 0 else math.floor(size * most / before + 0.5) - size
        allowed = to_add - added
        return min(fraction, allowed) if to_add > 0 else max(fraction, allowed)

    def _saturated(self, d: JSON, rs: JSON) -> bool:
        desired = _annotations(rs).get(DESIRED_REPLICAS)
        return (
            int(_spec(rs).get("replicas", 0)) == _replicas(d)
            and desired == str(_replicas(d))
            and _status_int(rs, "availableReplicas") == _replicas(d)
        )

    def _cleanup(self, d: JSON, old_rss: list[JSON]) -> None:
        """Delete the oldest unused ReplicaSets beyond ``revisionHistoryLimit``."""
        limit = _spec(d).get("revisionHistoryLimit")
        if limit is None:
            return
        cleanable = [
            rs
            for rs in old_rss
            if _status_int(rs, "replicas") == 0
            and int(_spec(rs).get("replicas", 0)) == 0
            and not rs["metadata"].get("deletionTimestamp")
        ]
        for rs in sorted(cleanable, key=_revision)[: max(0, len(cleanable) - int(limit))]:
            if rs["metadata"].get("generation", 1) > _status_int(rs, "observedGeneration"):
                continue
            try:
                self.registry.delete(
                    REPLICA_SETS,
                    rs["metadata"]["namespace"],
                    rs["metadata"]["name"],
                    DeleteOptions(propagation="Background"),
                )
            except ApiError:
                continue

    # --- status -------------------------------------------------------------------------------

    @staticmethod
    def _complete(d: JSON, status: JSON) -> bool:
        """Upstream ``DeploymentComplete``."""
        replicas = _replicas(d)
        return (
            int(status.get("updatedReplicas") or 0) == replicas
            and int(status.get("replicas") or 0) == replicas
            and int(status.get("availableReplicas") or 0) == replicas
            and int(status.get("observedGeneration") or 0) >= int(d["metadata"].get("generation", 1))
        )

    def _calculate(self, d: JSON, new_rs: JSON | None, old_rss: list[JSON]) -> JSON:
        """Upstream ``calculateStatus``."""
        all_rss = [*old_rss, *([new_rs] if new_rs else [])]
        available = sum(_status_int(rs, "availableReplicas") for rs in all_rss)
        total = sum(int(_spec(rs).get("replicas", 0)) for rs in all_rss)
        old_status = d.get("status") or {}
        status: JSON = {
            "observedGeneration": d["metadata"].get("generation", 1),
            "replicas": sum(_status_int(rs, "replicas") for rs in all_rss),
            "updatedReplicas": _status_int(new_rs, "replicas") if new_rs else 0,
            "readyReplicas": sum(_status_int(rs, "readyReplicas") for rs in all_rss),
            "availableReplicas": available,
            "unavailableReplicas": max(total - available, 0),
            "terminatingReplicas": sum(_status_int(rs, "terminatingReplicas") for rs in all_rss),
            "conditions": [dict(c) for c in old_status.get("conditions") or []],
        }
        if old_status.get("collisionCount") is not None:
            status["collisionCount"] = old_status["collisionCount"]
        if available >= _replicas(d) - max_unavailable(d):
            set_condition(
                status,
                condition(
                    "Available", "True", "MinimumReplicasAvailable", "Deployment has minimum availability."
                ),
            )
        else:
            set_condition(
                status,
                condition(
                    "Available",
                    "False",
                    "MinimumReplicasUnavailable",
                    "Deployment does not have minimum availability.",
                ),
            )
        return status

    def _write_status(self, d: JSON, new_rs: JSON | None, old_rss: list[JSON], progress: bool) -> None:
        status = self._calculate(d, new_rs, old_rss)
        if progress and _spec(d).get("progressDeadlineSeconds") is not None:
            self._progress(d, status, new_rs)
        elif progress:
            status["conditions"] = [c for c in status["conditions"] if c.get("type") != "Progressing"]
        for key in (
            "replicas",
            "updatedReplicas",
            "readyReplicas",
            "availableReplicas",
            "unavailableReplicas",
        ):
            if not status[key]:
                del status[key]
        if not status["conditions"]:
            del status["conditions"]
        self.write_status(d, ordered(status, DEPLOYMENT_STATUS_ORDER))

    def _progress(self, d: JSON, status: JSON, new_rs: JSON | None) -> None:
        """Upstream ``syncRolloutStatus``'s Progressing condition."""
        old_status = d.get("status") or {}
        current = _get_condition(old_status, "Progressing")
        if (
            int(status["replicas"]) == int(status["updatedReplicas"])
            and current is not None
            and current.get("reason") == "NewReplicaSetAvailable"
        ):
            return
        subject = (
            f'ReplicaSet "{new_rs["metadata"]["name"]}"'
            if new_rs
            else f'Deployment "{d["metadata"]["name"]}"'
        )
        if self._complete(d, status):
            set_condition(
                status,
                condition(
                    "Progressing", "True", "NewReplicaSetAvailable", f"{subject} has successfully progressed."
                ),
            )
            return
        old_old = int(old_status.get("replicas") or 0) - int(old_status.get("updatedReplicas") or 0)
        new_old = int(status["replicas"]) - int(status["updatedReplicas"])
        progressing = (
            int(status["updatedReplicas"]) > int(old_status.get("updatedReplicas") or 0)
            or new_old < old_old
            or int(status["readyReplicas"]) > int(old_status.get("readyReplicas") or 0)
            or int(status["availableReplicas"]) > int(old_status.get("availableReplicas") or 0)
        )
        if progressing:
            new = condition("Progressing", "True", "ReplicaSetUpdated", f"{subject} is progressing.")
            if current is not None:
                if current.get("status") == "True":
                    new["lastTransitionTime"] = current.get("lastTransitionTime")
                status["conditions"] = [c for c in status["conditions"] if c.get("type") != "Progressing"]
            set_condition(status, new)
