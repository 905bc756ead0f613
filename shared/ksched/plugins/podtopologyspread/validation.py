"""PodTopologySpreadArgs validation, worded as upstream ``ValidatePodTopologySpreadArgs``
(``pkg/scheduler/apis/config/validation/validation_pluginargs.go``) and apimachinery field errors."""

from __future__ import annotations

import json
import re

from ksched.api.core import TopologySpreadConstraint
from ksched.plugins.args import LIST_DEFAULTING, SYSTEM_DEFAULTING, PodTopologySpreadArgs

_SUPPORTED_ACTIONS = ("DoNotSchedule", "ScheduleAnyway")
_NO_SELECTOR = "constraint must not define a selector, as they deduced for each pod"

_NAME_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_NAME_RE = re.compile(f"^{_NAME_FMT}$")
_DNS1123_SUBDOMAIN_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"
_DNS1123_SUBDOMAIN_RE = re.compile(f"^{_DNS1123_SUBDOMAIN_FMT}$")
_NAME_MSG = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric "
    f"character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '{_NAME_FMT}')"
)
_PREFIX_HINT = "with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
_SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must "
    f"start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
    f"'{_DNS1123_SUBDOMAIN_FMT}')"
)


def _quote(value: str) -> str:
    """Go's ``%q`` for the printable strings found in configuration."""
    return json.dumps(value, ensure_ascii=False)


def qualified_name_errors(value: str) -> list[str]:
    """apimachinery ``IsQualifiedName``: ``[DNS-subdomain prefix '/'] name`` (name at most 63 bytes)."""
    parts = value.split("/")
    errs: list[str] = []
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errs.append("prefix part must be non-empty")
        else:
            if len(prefix) > 253:
                errs.append("prefix part must be no more than 253 bytes")
            if not _DNS1123_SUBDOMAIN_RE.match(prefix):
                errs.append("prefix part " + _SUBDOMAIN_MSG)
    else:
        return [f"a qualified name {_NAME_MSG} {_PREFIX_HINT}"]
    if not name:
        errs.append("name part must be non-empty")
    elif len(name) > 63:
        errs.append("name part must be no more than 63 bytes")
    if not _NAME_RE.match(name):
        errs.append("name part " + _NAME_MSG)
    return errs


def _child(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _validate_defaulting_type(
    path: str, value: str, constraints: list[TopologySpreadConstraint]
) -> str | None:
    if value not in (SYSTEM_DEFAULTING, LIST_DEFAULTING):
        return (
            f"{path}: Unsupported value: {_quote(value)}: supported values: "
            f"{_quote(SYSTEM_DEFAULTING)}, {_quote(LIST_DEFAULTING)}"
        )
    if value == SYSTEM_DEFAULTING and constraints:
        return f"{path}: Invalid value: {_quote(value)}: when .defaultConstraints are not empty"
    return None


def _validate_topology_key(path: str, value: str) -> list[str]:
    if not value:
        return [f"{path}: Required value: can not be empty"]
    return [f"{path}: Invalid value: {_quote(value)}: {msg}" for msg in qualified_name_errors(value)]


def _validate_when_unsatisfiable(path: str, value: str) -> str | None:
    if not value:
        return f"{path}: Required value: can not be empty"
    if value not in _SUPPORTED_ACTIONS:
        supported = ", ".join(_quote(a) for a in _SUPPORTED_ACTIONS)
        return f"{path}: Unsupported value: {_quote(value)}: supported values: {supported}"
    return None


def validate_pod_topology_spread_args(args: PodTopologySpreadArgs, path: str = "") -> list[str]:
    """Every problem with ``args`` (empty when valid); ``path`` prefixes the field paths."""
    errs: list[str] = []
    err = _validate_defaulting_type(
        _child(path, "defaultingType"), args.defaulting_type, args.default_constraints
    )
    if err:
        errs.append(err)
    constraints_path = _child(path, "defaultConstraints")
    for i, c in enumerate(args.default_constraints):
        p = f"{constraints_path}[{i}]"
        if c.max_skew <= 0:
            errs.append(f"{p}.maxSkew: Invalid value: {c.max_skew}: not in valid range (0, inf)")
        errs.extend(_validate_topology_key(f"{p}.topologyKey", c.topology_key))
        err = _validate_when_unsatisfiable(f"{p}.whenUnsatisfiable", c.when_unsatisfiable)
        if err:
            errs.append(err)
        if c.label_selector is not None:
            errs.append(f"{p}.labelSelector: Forbidden: {_NO_SELECTOR}")
        for other in args.default_constraints[:i]:
            if (other.topology_key, other.when_unsatisfiable) == (c.topology_key, c.when_unsatisfiable):
                pair = "{" + c.topology_key + ", " + c.when_unsatisfiable + "}"
                errs.append(f"{p}: Duplicate value: {_quote(pair)}")
                break
    return list(dict.fromkeys(errs))  # ToAggregate drops repeated messages


def aggregate_message(errors: list[str]) -> str:
    """utilerrors.Aggregate's text: the single message, or ``[m1, m2, ...]``."""
    return errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]"
