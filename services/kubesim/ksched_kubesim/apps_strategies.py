"""apps/v1 Deployments, ReplicaSets, StatefulSets and ControllerRevisions and batch/v1 Jobs as the 1.36.2
API server defaults, validates and stores them (their controllers are ``workload_controllers``).

* Scheme defaults (``SetDefaults_Deployment``, ``_ReplicaSet``, ``_StatefulSet``, ``_Job``), the pod
  template's ``SetDefaults_PodSpec`` (not the pod-level defaults: a template has no
  ``enableServiceLinks``), fields in Go order; a created object's status is the zero status.
* A Job's selector and template labels are generated from its uid and name (``generateSelector``),
  and an unlabelled Job takes its template's labels.
* Validation: a selector that is present, not empty and matches the template's labels, the template's
  restart policy (``Always``; ``OnFailure``/``Never`` for Jobs), replicas >= 0, an immutable selector,
  a Job's immutable template.
* Updates to the main resource bump ``generation`` on a spec change (a Deployment's annotations too);
  ``/status`` writes keep the spec but take metadata (a Deployment's revision annotation is written
  there), except a Deployment's labels.
"""

from __future__ import annotations

from typing import Any

from ksched.apimachinery.labels import SelectorError

from . import pods
from .errors import FieldError, forbidden_field, invalid_value, not_supported, required
from .jsonio import JSON
from .pods import ordered
from .selectors import label_selector_of
from .strategies import Lookup, Strategy, _keep_all_but_status, _keep_meta

DEPLOYMENT_SPEC_ORDER = (
    "replicas",
    "selector",
    "template",
    "strategy",
    "minReadySeconds",
    "revisionHistoryLimit",
    "paused",
    "progressDeadlineSeconds",
)
DEPLOYMENT_STATUS_ORDER = (
    "observedGeneration",
    "replicas",
    "updatedReplicas",
    "readyReplicas",
    "availableReplicas",
    "unavailableReplicas",
    "terminatingReplicas",
    "conditions",
    "collisionCount",
)
DEPLOYMENT_CONDITION_ORDER = ("type", "status", "lastUpdateTime", "lastTransitionTime", "reason", "message")
REPLICA_SET_SPEC_ORDER = ("replicas", "minReadySeconds", "selector", "template")
REPLICA_SET_STATUS_ORDER = (
    "replicas",
    "fullyLabeledReplicas",
    "readyReplicas",
    "availableReplicas",
    "terminatingReplicas",
    "observedGeneration",
    "conditions",
)
STATEFUL_SET_SPEC_ORDER = (
    "replicas",
    "selector",
    "template",
    "volumeClaimTemplates",
    "serviceName",
    "podManagementPolicy",
    "updateStrategy",
    "revisionHistoryLimit",
    "minReadySeconds",
    "persistentVolumeClaimRetentionPolicy",
    "ordinals",
)
STATEFUL_SET_STATUS_ORDER = (
    "observedGeneration",
    "replicas",
    "readyReplicas",
    "currentReplicas",
    "updatedReplicas",
    "currentRevision",
    "updateRevision",
    "collisionCount",
    "conditions",
    "availableReplicas",
)
JOB_SPEC_ORDER = (
    "parallelism",
    "completions",
    "activeDeadlineSeconds",
    "podFailurePolicy",
    "successPolicy",
    "backoffLimit",
    "backoffLimitPerIndex",
    "maxFailedIndexes",
    "selector",
    "manualSelector",
    "template",
    "ttlSecondsAfterFinished",
    "completionMode",
    "suspend",
    "podReplacementPolicy",
    "managedBy",
)
JOB_STATUS_ORDER = (
    "conditions",
    "startTime",
    "completionTime",
    "active",
    "succeeded",
    "failed",
    "terminating",
    "completedIndexes",
    "failedIndexes",
    "uncountedTerminatedPods",
    "ready",
)
JOB_CONDITION_ORDER = ("type", "status", "lastProbeTime", "lastTransitionTime", "reason", "message")

JOB_NAME_LABEL = "batch.kubernetes.io/job-name"
LEGACY_JOB_NAME_LABEL = "job-name"
CONTROLLER_UID_LABEL = "batch.kubernetes.io/controller-uid"
LEGACY_CONTROLLER_UID_LABEL = "controller-uid"
IMMUTABLE = "field is immutable"
STATEFUL_SET_MUTABLE = (
    "replicas",
    "ordinals",
    "template",
    "updateStrategy",
    "revisionHistoryLimit",
    "persistentVolumeClaimRetentionPolicy",
    "minReadySeconds",
)


def _dict(value: Any) -> JSON:
    return value if isinstance(value, dict) else {}


def default_template(template: Any) -> JSON:
    """A pod template with ``SetDefaults_PodSpec`` applied, ``metadata`` first (always present)."""
    template = dict(_dict(template))
    meta = dict(_dict(template.get("metadata")))
    if meta.get("creationTimestamp") is None:
        meta.pop("creationTimestamp", None)  # omitzero: the zero time is not written
    template["metadata"] = meta
    template["spec"] = pods.default_pod_spec(dict(_dict(template.get("spec"))), pod=False)
    return ordered(template, ("metadata", "spec"))


def selector_matches(selector: Any, labels: dict[str, str]) -> bool | None:
    """Whether a LabelSelector selects ``labels``; None when it is empty or invalid."""
    selector = _dict(selector)
    if not selector.get("matchLabels") and not selector.get("matchExpressions"):
        return None
    try:
        return label_selector_of(selector).matches(labels)
    except SelectorError:
        return None


def _template_errors(spec: JSON, restart_policies: tuple[str, ...], kind: str) -> list[FieldError]:
    """ValidatePodTemplateSpecForReplicaSet (and the Job's equivalent) over ``spec``."""
    errs: list[FieldError] = []
    template = _dict(spec.get("template"))
    labels = _dict(template.get("metadata")).get("labels") or {}
    selector = spec.get("selector")
    if selector is None:
        errs.append(required("spec.selector"))
    elif not _dict(selector).get("matchLabels") and not _dict(selector).get("matchExpressions"):
        errs.append(invalid_value("spec.selector", selector, f"empty selector is invalid for {kind}"))
    elif selector_matches(selector, labels) is False:
        detail = "`selector` does not match template `labels`"
        errs.append(invalid_value("spec.template.metadata.labels", labels, detail))
    errs.extend(pods.validate_pod_spec(template.get("spec"), "spec.template.spec"))
    policy = _dict(template.get("spec")).get("restartPolicy")
    if policy not in restart_policies:
        errs.append(not_supported("spec.template.spec.restartPolicy", policy, list(restart_policies)))
    return errs


def _replica_errors(spec: JSON, *names: str) -> list[FieldError]:
    errs: list[FieldError] = []
    for name in names:
        value = spec.get(name)
        if isinstance(value, int) and value < 0:
            errs.append(invalid_value(f"spec.{name}", value, "must be greater than or equal to 0"))
    return errs


def _immutable(new: JSON, old: JSON, *names: str) -> list[FieldError]:
    new_spec, old_spec = _dict(new.get("spec")), _dict(old.get("spec"))
    return [
        invalid_value(f"spec.{name}", new_spec.get(name), IMMUTABLE)
        for name in names
        if new_spec.get(name) != old_spec.get(name)
    ]


def _default_claim_template(claim: JSON) -> JSON:
    """A StatefulSet's volume claim template as stored: typed (``v1``/``PersistentVolumeClaim``), with
    the claim defaults (``volumeMode: Filesystem``, ``status.phase: Pending``)."""
    claim = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", **claim}
    claim["metadata"] = dict(_dict(claim.get("metadata")))
    spec = dict(_dict(claim.get("spec")))
    spec.setdefault("volumeMode", "Filesystem")
    claim["spec"] = spec
    status = dict(_dict(claim.get("status")))
    status.setdefault("phase", "Pending")
    claim["status"] = status
    return ordered(claim, ("apiVersion", "kind", "metadata", "spec", "status"))


class _WorkloadStrategy(Strategy):
    """What the apps/v1 and batch/v1 kinds share: spec defaults in Go order, the zero status on create,
    ``/status`` writes that keep the spec and take metadata."""

    spec_order: tuple[str, ...] = ()
    status_order: tuple[str, ...] = ()
    zero_status: JSON = {}
    restart_policies: tuple[str, ...] = ("Always",)

    def default(self, obj: JSON) -> None:
        spec = dict(_dict(obj.get("spec")))
        self.default_spec(spec)
        spec["template"] = default_template(spec.get("template"))
        obj["spec"] = ordered(spec, self.spec_order)

    def default_spec(self, spec: JSON) -> None:
        spec.setdefault("replicas", 1)

    def prepare_create(self, obj: JSON, lookup: Lookup) -> None:
        obj["status"] = dict(self.zero_status)

    def prepare_update(self, new: JSON, old: JSON) -> None:
        super().prepare_update(new, old)
        if isinstance(new.get("spec"), dict):
            self.default(new)

    def prepare_status_update(self, new: JSON, old: JSON) -> None:
        _keep_all_but_status(new, old)

    def normalize(self, obj: JSON) -> None:
        status = obj.get("status")
        if isinstance(status, dict) and self.status_order:
            obj["status"] = ordered(status, self.status_order)

    def validate(self, obj: JSON, lookup: Lookup) -> list[FieldError]:
        spec = _dict(obj.get("spec"))
        return _replica_errors(spec, "replicas", "minReadySeconds") + _template_errors(
            spec, self.restart_policies, self.rt.kind.lower()
        )

    def validate_update(self, new: JSON, old: JSON, lookup: Lookup) -> list[FieldError]:
        return self.validate(new, lookup) + _immutable(new, old, "selector")


class DeploymentStrategy(_WorkloadStrategy):
    spec_order = DEPLOYMENT_SPEC_ORDER
    status_order = DEPLOYMENT_STATUS_ORDER

    def default_spec(self, spec: JSON) -> None:
        spec.setdefault("replicas", 1)
        strategy = dict(_dict(spec.get("strategy")))
        strategy.setdefault("type", "RollingUpdate")
        if strategy["type"] == "RollingUpdate":
            rolling = dict(_dict(strategy.get("rollingUpdate")))
            rolling.setdefault("maxUnavailable", "25%")
            rolling.setdefault("maxSurge", "25%")
            strategy["rollingUpdate"] = ordered(rolling, ("maxUnavailable", "maxSurge"))
        spec["strategy"] = ordered(strategy, ("type", "rollingUpdate"))
        spec.setdefault("revisionHistoryLimit", 10)
        spec.setdefault("progressDeadlineSeconds", 600)

    def spec_changed(self, new: JSON, old: JSON) -> bool:
        """Annotations too: the controller copies them to the ReplicaSets."""
        annotations = (new["metadata"].get("annotations") or {}, old["metadata"].get("annotations") or {})
        return new.get("spec") != old.get("spec") or annotations[0] != annotations[1]

    def prepare_status_update(self, new: JSON, old: JSON) -> None:
        super().prepare_status_update(new, old)
        _keep_meta(new, old, ("labels",))

    def normalize(self, obj: JSON) -> None:
        super().normalize(obj)
        conditions = _dict(obj.get("status")).get("conditions")
        if isinstance(conditions, list):
            obj["status"]["conditions"] = [
                ordered(c, DEPLOYMENT_CONDITION_ORDER) if isinstance(c, dict) else c for c in conditions
            ]


class ReplicaSetStrategy(_WorkloadStrategy):
    spec_order = REPLICA_SET_SPEC_ORDER
    status_order = REPLICA_SET_STATUS_ORDER
    zero_status = {"replicas": 0}


class StatefulSetStrategy(_WorkloadStrategy):
    spec_order = STATEFUL_SET_SPEC_ORDER
    status_order = STATEFUL_SET_STATUS_ORDER
    zero_status = {"replicas": 0, "availableReplicas": 0}

    def default_spec(self, spec: JSON) -> None:
        spec.setdefault("replicas", 1)
        spec.setdefault("podManagementPolicy", "OrderedReady")
        update = dict(_dict(spec.get("updateStrategy")))
        if not update.get("type"):
            update["type"] = "RollingUpdate"
            update.setdefault("rollingUpdate", {})
        if update["type"] == "RollingUpdate" and isinstance(update.get("rollingUpdate"), dict):
            update["rollingUpdate"] = {"partition": 0, **update["rollingUpdate"]}
        spec["updateStrategy"] = ordered(update, ("type", "rollingUpdate"))
        spec.setdefault("revisionHistoryLimit", 10)
        retention = dict(_dict(spec.get("persistentVolumeClaimRetentionPolicy")))
        retention.setdefault("whenDeleted", "Retain")
        retention.setdefault("whenScaled", "Retain")
        spec["persistentVolumeClaimRetentionPolicy"] = ordered(retention, ("whenDeleted", "whenScaled"))
        claims = spec.get("volumeClaimTemplates")
        if isinstance(claims, list):
            spec["volumeClaimTemplates"] = [
                _default_claim_template(c) if isinstance(c, dict) else c for c in claims
            ]

    def validate_update(self, new: JSON, old: JSON, lookup: Lookup) -> list[FieldError]:
        errs = super().validate_update(new, old, lookup)
        new_spec, old_spec = _dict(new.get("spec")), _dict(old.get("spec"))
        rest = [k for k in set(new_spec) | set(old_spec) if k not in (*STATEFUL_SET_MUTABLE, "selector")]
        if any(new_spec.get(k) != old_spec.get(k) for k in rest):
            fields = ", ".join(f"'{name}'" for name in STATEFUL_SET_MUTABLE[:-1])
            errs.append(
                forbidden_field(
                    "spec",
                    f"updates to statefulset spec for fields other than {fields} and "
                    f"'{STATEFUL_SET_MUTABLE[-1]}' are forbidden",
                )
            )
        return errs


class JobStrategy(_WorkloadStrategy):
    spec_order = JOB_SPEC_ORDER
    status_order = JOB_STATUS_ORDER
    restart_policies = ("OnFailure", "Never")

    def default_spec(self, spec: JSON) -> None:
        if spec.get("completions") is None and spec.get("parallelism") is None:
            spec["completions"] = 1
        spec.setdefault("parallelism", 1)
        spec.setdefault("backoffLimit", 2147483647 if spec.get("backoffLimitPerIndex") is not None else 6)
        spec.setdefault("completionMode", "NonIndexed")
        spec.setdefault("suspend", False)
        replacement = "Failed" if spec.get("podFailurePolicy") else "TerminatingOrFailed"
        spec.setdefault("podReplacementPolicy", replacement)
        spec.setdefault("manualSelector", False)

    def prepare_create(self, obj: JSON, lookup: Lookup) -> None:
        super().prepare_create(obj, lookup)
        meta, spec = obj["metadata"], obj["spec"]
        if not spec.get("manualSelector"):
            template = spec["template"]
            labels = dict(template["metadata"].get("labels") or {})
            for key in (LEGACY_JOB_NAME_LABEL, JOB_NAME_LABEL):
                labels.setdefault(key, meta.get("name", ""))
            for key in (LEGACY_CONTROLLER_UID_LABEL, CONTROLLER_UID_LABEL):
                labels.setdefault(key, meta.get("uid", ""))
            template["metadata"]["labels"] = labels
            selector = dict(_dict(spec.get("selector")))
            match = dict(selector.get("matchLabels") or {})
            match.setdefault(CONTROLLER_UID_LABEL, meta.get("uid", ""))
            selector["matchLabels"] = match
            spec["selector"] = ordered(selector, ("matchLabels", "matchExpressions"))
        labels = spec["template"]["metadata"].get("labels")
        if labels and not meta.get("labels"):
            meta["labels"] = dict(labels)

    def validate(self, obj: JSON, lookup: Lookup) -> list[FieldError]:
        spec = _dict(obj.get("spec"))
        names = ("parallelism", "completions", "backoffLimit")
        return _replica_errors(spec, *names) + _template_errors(spec, self.restart_policies, "job")

    def validate_update(self, new: JSON, old: JSON, lookup: Lookup) -> list[FieldError]:
        return self.validate(new, lookup) + _immutable(new, old, "selector", "template", "completionMode")

    def normalize(self, obj: JSON) -> None:
        super().normalize(obj)
        conditions = _dict(obj.get("status")).get("conditions")
        if isinstance(conditions, list):
            obj["status"]["conditions"] = [
                ordered(c, JOB_CONDITION_ORDER) if isinstance(c, dict) else c for c in conditions
            ]


class ControllerRevisionStrategy(Strategy):
    """``controllerrevisions``: ``data`` and ``revision`` as given; ``data`` cannot change."""

    def validate_update(self, new: JSON, old: JSON, lookup: Lookup) -> list[FieldError]:
        if new.get("data") != old.get("data"):
            return [invalid_value("data", None, IMMUTABLE)]
        return []


STRATEGIES: dict[str, type[Strategy]] = {
    "deployments.apps": DeploymentStrategy,
    "replicasets.apps": ReplicaSetStrategy,
    "statefulsets.apps": StatefulSetStrategy,
    "jobs.batch": JobStrategy,
    "controllerrevisions.apps": ControllerRevisionStrategy,
}
