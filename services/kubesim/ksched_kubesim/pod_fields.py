"""Pod spec fields validated as upstream's core validation does (``validateContainerPorts``,
``ValidateTolerations``, ``validateTopologySpreadConstraints``, ``validateNodeAffinity``...): enums,
port numbers and names, toleration and node-selector-requirement rules, with the API server's texts.
Lists of supported values are sorted as ``sets.List`` returns them.
"""

from __future__ import annotations

import re
from typing import Any

from ksched.apimachinery.validation import dns1123_subdomain_errors, label_key_errors, label_value_errors

from .errors import FieldError, duplicate, forbidden_field, invalid_value, not_supported, required

PORT_PROTOCOLS = ["SCTP", "TCP", "UDP"]
TERMINATION_MESSAGE_POLICIES = ["File", "FallbackToLogsOnError"]
TAINT_EFFECTS = ["NoSchedule", "PreferNoSchedule", "NoExecute"]
TOLERATION_OPERATORS = ["Equal", "Exists"]
SCHEDULE_ACTIONS = ["DoNotSchedule", "ScheduleAnyway"]
NODE_INCLUSION_POLICIES = ["Honor", "Ignore"]
_PORT_NAME_CHARSET = re.compile(r"^[-a-z0-9]+$")
_PORT_RANGE = "must be between 1 and 65535, inclusive"
_EMPTY_KEY = 'operator must be Exists when `key` is empty, which means "match all values and all keys"'
_SECONDS_NEED_NO_EXECUTE = "effect must be 'NoExecute' when `tolerationSeconds` is set"
_EXISTS_WITH_VALUE = "value must be empty when `operator` is 'Exists'"
_VALUES_FORBIDDEN = "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"


def _port_name_errors(name: str) -> list[str]:
    errs = ["must be no more than 15 characters"] if len(name) > 15 else []
    if not _PORT_NAME_CHARSET.match(name):
        errs.append("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)")
    if not re.search("[a-z]", name):
        errs.append("must contain at least one letter (a-z)")
    if "--" in name:
        errs.append("must not contain consecutive hyphens")
    if name.startswith("-") or name.endswith("-"):
        errs.append("must not begin or end with a hyphen")
    return errs


def _is_port(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= 65535


def container_port_errors(path: str, ports: Any) -> list[FieldError]:
    """``validateContainerPorts``: names, container and host port numbers, protocols."""
    errs: list[FieldError] = []
    names: set[str] = set()
    for i, port in enumerate(ports if isinstance(ports, list) else []):
        if not isinstance(port, dict):
            continue
        ppath = f"{path}[{i}]"
        name = port.get("name") or ""
        if name:
            msgs = _port_name_errors(name)
            errs.extend(invalid_value(f"{ppath}.name", name, msg) for msg in msgs)
            if not msgs and name in names:
                errs.append(duplicate(f"{ppath}.name", name))
            names.add(name)
        container_port = port.get("containerPort") or 0
        if container_port == 0:
            errs.append(required(f"{ppath}.containerPort"))
        elif not _is_port(container_port):
            errs.append(invalid_value(f"{ppath}.containerPort", container_port, _PORT_RANGE))
        host_port = port.get("hostPort") or 0
        if host_port != 0 and not _is_port(host_port):
            errs.append(invalid_value(f"{ppath}.hostPort", host_port, _PORT_RANGE))
        protocol = port.get("protocol") or "TCP"
        if protocol not in PORT_PROTOCOLS:
            errs.append(not_supported(f"{ppath}.protocol", protocol, PORT_PROTOCOLS))
    return errs


def termination_message_policy_errors(path: str, policy: Any) -> list[FieldError]:
    if policy in (None, "", *TERMINATION_MESSAGE_POLICIES):
        return []
    return [not_supported(f"{path}.terminationMessagePolicy", policy, TERMINATION_MESSAGE_POLICIES)]


def toleration_errors(path: str, tolerations: Any) -> list[FieldError]:
    """``ValidateTolerations`` (comparison operators, an alpha feature, are not supported)."""
    errs: list[FieldError] = []
    for i, toleration in enumerate(tolerations if isinstance(tolerations, list) else []):
        if not isinstance(toleration, dict):
            continue
        tpath = f"{path}[{i}]"
        key = toleration.get("key") or ""
        operator = toleration.get("operator") or ""
        effect = toleration.get("effect") or ""
        value = toleration.get("value") or ""
        errs.extend(invalid_value(f"{tpath}.key", key, msg) for msg in label_key_errors(key) if key)
        if not key and operator != "Exists":
            errs.append(invalid_value(f"{tpath}.operator", operator, _EMPTY_KEY))
        if toleration.get("tolerationSeconds") is not None and effect != "NoExecute":
            errs.append(invalid_value(f"{tpath}.effect", effect, _SECONDS_NEED_NO_EXECUTE))
        if operator in ("Equal", ""):
            msgs = label_value_errors(value)
            if msgs:
                errs.append(invalid_value(f"{tpath}.operator", value, ";".join(msgs)))
        elif operator == "Exists":
            if value:
                errs.append(invalid_value(f"{tpath}.operator", value, _EXISTS_WITH_VALUE))
        else:
            supported = TOLERATION_OPERATORS + (["Lt", "Gt"] if operator in ("Lt", "Gt") else [])
            errs.append(not_supported(f"{tpath}.operator", operator, supported))
        if effect and effect not in TAINT_EFFECTS:
            errs.append(not_supported(f"{tpath}.effect", effect, TAINT_EFFECTS))
    return errs


def topology_spread_errors(path: str, constraints: Any) -> list[FieldError]:
    """``validateTopologySpreadConstraints``: maxSkew, topologyKey, whenUnsatisfiable, repeats and the
    node inclusion policies (minDomains, matchLabelKeys and the selector are not checked)."""
    errs: list[FieldError] = []
    items = [c for c in constraints if isinstance(c, dict)] if isinstance(constraints, list) else []
    for i, constraint in enumerate(items):
        cpath = f"{path}[{i}]"
        max_skew = constraint.get("maxSkew") or 0
        if isinstance(max_skew, int) and max_skew <= 0:
            errs.append(invalid_value(f"{cpath}.maxSkew", max_skew, "must be greater than zero"))
        key = constraint.get("topologyKey") or ""
        if not key:
            errs.append(required(f"{cpath}.topologyKey", "can not be empty"))
        action = constraint.get("whenUnsatisfiable") or ""
        if action not in SCHEDULE_ACTIONS:
            errs.append(not_supported(f"{cpath}.whenUnsatisfiable", action, SCHEDULE_ACTIONS))
        for later in items[i + 1 :]:
            if (later.get("topologyKey") or "", later.get("whenUnsatisfiable") or "") == (key, action):
                errs.append(duplicate(f"{cpath}.{{topologyKey, whenUnsatisfiable}}", f"{{{key}, {action}}}"))
                break
        for field in ("nodeAffinityPolicy", "nodeTaintsPolicy"):
            policy = constraint.get(field)
            if policy is not None and policy not in NODE_INCLUSION_POLICIES:
                errs.append(not_supported(f"{cpath}.{field}", policy, NODE_INCLUSION_POLICIES))
    return errs


def _requirement_errors(path: str, requirement: dict[str, Any], check_values: bool) -> list[FieldError]:
    """``ValidateNodeSelectorRequirement``."""
    errs: list[FieldError] = []
    operator = requirement.get("operator") or ""
    values = requirement.get("values") or []
    if operator in ("In", "NotIn"):
        if not values:
            errs.append(required(f"{path}.values", "must be specified when `operator` is 'In' or 'NotIn'"))
    elif operator in ("Exists", "DoesNotExist"):
        if values:
            errs.append(forbidden_field(f"{path}.values", _VALUES_FORBIDDEN))
    elif operator in ("Gt", "Lt"):
        if len(values) != 1:
            errs.append(
                required(f"{path}.values", "must be specified single value when `operator` is 'Lt' or 'Gt'")
            )
    else:
        errs.append(invalid_value(f"{path}.operator", operator, "not a valid selector operator"))
    key = requirement.get("key") or ""
    errs.extend(invalid_value(f"{path}.key", key, msg) for msg in label_key_errors(key))
    if check_values:
        for i, value in enumerate(values if isinstance(values, list) else []):
            if isinstance(value, str):
                msgs = label_value_errors(value)
                errs.extend(invalid_value(f"{path}.values[{i}]", value, msg) for msg in msgs)
    return errs


def _term_errors(path: str, term: Any, check_values: bool) -> list[FieldError]:
    expressions = term.get("matchExpressions") if isinstance(term, dict) else None
    errs: list[FieldError] = []
    for i, requirement in enumerate(expressions if isinstance(expressions, list) else []):
        if isinstance(requirement, dict):
            errs.extend(_requirement_errors(f"{path}.matchExpressions[{i}]", requirement, check_values))
    return errs


def node_affinity_errors(path: str, affinity: Any) -> list[FieldError]:
    """``validateNodeAffinity``: required terms (label values checked, as on create) and preferred ones
    (weights 1-100, values not checked); ``matchFields`` are not checked."""
    node_affinity = affinity.get("nodeAffinity") if isinstance(affinity, dict) else None
    if not isinstance(node_affinity, dict):
        return []
    path = f"{path}.nodeAffinity"
    errs: list[FieldError] = []
    required_selector = node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
    if isinstance(required_selector, dict):
        rpath = f"{path}.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms"
        terms = required_selector.get("nodeSelectorTerms")
        if not terms:
            errs.append(required(rpath, "must have at least one node selector term"))
        for i, term in enumerate(terms if isinstance(terms, list) else []):
            errs.extend(_term_errors(f"{rpath}[{i}]", term, check_values=True))
    preferred = node_affinity.get("preferredDuringSchedulingIgnoredDuringExecution")
    for i, term in enumerate(preferred if isinstance(preferred, list) else []):
        if not isinstance(term, dict):
            continue
        ppath = f"{path}.preferredDuringSchedulingIgnoredDuringExecution[{i}]"
        weight = term.get("weight") or 0
        if isinstance(weight, int) and not 1 <= weight <= 100:
            errs.append(invalid_value(f"{ppath}.weight", weight, "must be in the range 1-100"))
        errs.extend(_term_errors(f"{ppath}.preference", term.get("preference"), check_values=False))
    return errs


def scheduling_group_errors(spec: dict[str, Any]) -> list[FieldError]:
    """``validateSchedulingGroup`` of a pod: a ``podGroupName`` that is a DNS subdomain."""
    group = spec.get("schedulingGroup")
    if group is None:
        return []
    name = group.get("podGroupName") if isinstance(group, dict) else None
    path = "spec.schedulingGroup.podGroupName"
    if name is None:
        return [invalid_value(path, None, "must specify one of: `podGroupName`")]
    return [invalid_value(path, name, msg) for msg in dns1123_subdomain_errors(str(name))]
