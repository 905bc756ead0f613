"""scheduling.k8s.io/v1alpha2 Workload and PodGroup as the 1.36.2 API server stores and validates them
(declarative validation of ``zz_generated.validations.go``; captures 15b-15e), and scheduler-plugins'
Coscheduling PodGroup CRD (``scheduling.x-k8s.io/v1alpha1``, schema checks only)."""

from __future__ import annotations

from typing import Any

from ksched.api.scheduling import POD_GROUP_PROTECTION_FINALIZER
from ksched.apimachinery.field import too_many
from ksched.apimachinery.validation import dns1123_label_errors

from .errors import FieldError, duplicate, invalid_value, not_supported, required
from .jsonio import JSON
from .pods import ordered
from .strategies import Lookup, Strategy

MAX_POD_GROUP_TEMPLATES = 8
DISRUPTION_MODES = ("Pod", "PodGroup")
CONDITION_STATUSES = ("False", "True", "Unknown")

POD_GROUP_SPEC_ORDER = (
    "podGroupTemplateRef",
    "schedulingPolicy",
    "schedulingConstraints",
    "resourceClaims",
    "disruptionMode",
    "priorityClassName",
    "priority",
)
TEMPLATE_ORDER = ("name", *POD_GROUP_SPEC_ORDER[1:])


def _dict(value: Any) -> JSON:
    return value if isinstance(value, dict) else {}


def policy_errors(path: str, policy: Any) -> list[FieldError]:
    """``PodGroupSchedulingPolicy``: exactly one of ``basic`` and ``gang``; a gang's ``minCount`` >= 1."""
    policy = _dict(policy)
    chosen = [name for name in ("basic", "gang") if policy.get(name) is not None]
    if not chosen:
        return [invalid_value(path, "", "must specify one of: `basic`, `gang`")]
    if len(chosen) > 1:
        return [
            invalid_value(path, "{" + ", ".join(chosen) + "}", "must specify exactly one of: `basic`, `gang`")
        ]
    gang = policy.get("gang")
    if gang is None:
        return []
    min_count = _dict(gang).get("minCount")
    where = f"{path}.gang.minCount"
    if not min_count:
        return [required(where)]
    if not isinstance(min_count, int) or min_count < 1:
        return [invalid_value(where, min_count, "must be greater than or equal to 1")]
    return []


def _disruption_mode_errors(path: str, mode: Any) -> list[FieldError]:
    if mode is None or mode in DISRUPTION_MODES:
        return []
    return [not_supported(path, mode, DISRUPTION_MODES)]


def _immutable(new: JSON, old: JSON, fields: tuple[str, ...], path: str) -> list[FieldError]:
    """``validate.Immutable`` on each of ``fields``."""
    return [
        invalid_value(f"{path}.{name}", None, "field is immutable")
        for name in fields
        if new.get(name) != old.get(name)
    ]


def condition_errors(path: str, conditions: Any) -> list[FieldError]:
    """metav1 ``ValidateConditions`` (type unique and set, status, reason, lastTransitionTime)."""
    errs: list[FieldError] = []
    seen: set[str] = set()
    for i, condition in enumerate(conditions if isinstance(conditions, list) else []):
        where = f"{path}[{i}]"
        condition = _dict(condition)
        kind = condition.get("type") or ""
        if kind in seen:
            errs.append(duplicate(f"{where}.type", kind))
        seen.add(kind)
        if not kind:
            errs.append(required(f"{where}.type", "name part must be non-empty"))
        status = condition.get("status")
        if status not in CONDITION_STATUSES:
            errs.append(not_supported(f"{where}.status", status or "", CONDITION_STATUSES))
        if not condition.get("lastTransitionTime"):
            errs.append(required(f"{where}.lastTransitionTime"))
        if not condition.get("reason"):
            errs.append(required(f"{where}.reason"))
    return errs


class PodGroupStrategy(Strategy):
    """``podgroups``: the spec defaulted and validated, then immutable; the protection finalizer."""

    def prepare_create(self, obj: JSON, lookup: Lookup) -> None:
        super().prepare_create(obj, lookup)
        spec = dict(_dict(obj.get("spec")))
        spec.setdefault("podGroupTemplateRef", None)
        spec.setdefault("disruptionMode", "Pod")
        obj["spec"] = ordered(spec, POD_GROUP_SPEC_ORDER)
        obj["status"] = {}
        meta = obj["metadata"]
        finalizers = list(meta.get("finalizers") or [])
        if POD_GROUP_PROTECTION_FINALIZER not in finalizers:
            finalizers.append(POD_GROUP_PROTECTION_FINALIZER)
        meta["finalizers"] = finalizers

    def validate(self, obj: JSON, lookup: Lookup) -> list[FieldError]:
        spec = _dict(obj.get("spec"))
        errs = policy_errors("spec.schedulingPolicy", spec.get("schedulingPolicy"))
        ref = spec.get("podGroupTemplateRef")
        if ref is not None:
            workload = _dict(ref).get("workload")
            if workload is None:
                errs.append(invalid_value("spec.podGroupTemplateRef", "", "must specify one of: `workload`"))
            else:
                for name in ("workloadName", "podGroupTemplateName"):
                    if not _dict(workload).get(name):
                        errs.append(required(f"spec.podGroupTemplateRef.workload.{name}"))
        errs += _disruption_mode_errors("spec.disruptionMode", spec.get("disruptionMode"))
        return errs

    def validate_update(self, new: JSON, old: JSON, lookup: Lookup) -> list[FieldError]:
        return _immutable(_dict(new.get("spec")), _dict(old.get("spec")), POD_GROUP_SPEC_ORDER, "spec")

    def validate_status_update(self, new: JSON, old: JSON, lookup: Lookup) -> list[FieldError]:
        return condition_errors("status.conditions", _dict(new.get("status")).get("conditions"))


class WorkloadStrategy(Strategy):
    """``workloads``: at least one and at most 8 uniquely named podGroupTemplates; spec immutable."""

    def prepare_create(self, obj: JSON, lookup: Lookup) -> None:
        spec = dict(_dict(obj.get("spec")))
        templates = spec.get("podGroupTemplates")
        if isinstance(templates, list):
            spec["podGroupTemplates"] = [
                ordered({"schedulingConstraints": None, **t}, TEMPLATE_ORDER) if isinstance(t, dict) else t
                for t in templates
            ]
        obj["spec"] = spec

    def validate(self, obj: JSON, lookup: Lookup) -> list[FieldError]:
        templates = _dict(obj.get("spec")).get("podGroupTemplates")
        path = "spec.podGroupTemplates"
        if not templates:
            return [required(path)]
        if not isinstance(templates, list):
            return [invalid_value(path, templates, "must be a list")]
        errs: list[FieldError] = []
        if len(templates) > MAX_POD_GROUP_TEMPLATES:
            errs.append(too_many(path, len(templates), MAX_POD_GROUP_TEMPLATES))
        names: set[str] = set()
        for i, template in enumerate(templates):
            where = f"{path}[{i}]"
            template = _dict(template)
            name = template.get("name") or ""
            if not name:
                errs.append(required(f"{where}.name"))
            elif name in names:
                errs.append(duplicate(where, {"name": name}))
            else:
                errs.extend(invalid_value(f"{where}.name", name, msg) for msg in dns1123_label_errors(name))
            names.add(name)
            errs += policy_errors(f"{where}.schedulingPolicy", template.get("schedulingPolicy"))
            errs += _disruption_mode_errors(f"{where}.disruptionMode", template.get("disruptionMode"))
        return errs

    def validate_update(self, new: JSON, old: JSON, lookup: Lookup) -> list[FieldError]:
        return _immutable(
            _dict(new.get("spec")), _dict(old.get("spec")), ("controllerRef", "podGroupTemplates"), "spec"
        )


class CoschedulingPodGroupStrategy(Strategy):
    """scheduler-plugins' PodGroup CRD: its OpenAPI schema asks only for an integer ``minMember`` >= 0."""

    def validate(self, obj: JSON, lookup: Lookup) -> list[FieldError]:
        min_member = _dict(obj.get("spec")).get("minMember", 0)
        if not isinstance(min_member, int) or isinstance(min_member, bool) or min_member < 0:
            return [invalid_value("spec.minMember", min_member, "should be greater than or equal to 0")]
        return []


STRATEGIES: dict[str, type[Strategy]] = {
    "podgroups.scheduling.k8s.io": PodGroupStrategy,
    "workloads.scheduling.k8s.io": WorkloadStrategy,
    "podgroups.scheduling.x-k8s.io": CoschedulingPodGroupStrategy,
}
