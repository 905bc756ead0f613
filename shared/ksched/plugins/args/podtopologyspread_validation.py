"""PodTopologySpreadArgs validation, worded as upstream ``ValidatePodTopologySpreadArgs``
(``pkg/scheduler/apis/config/validation/validation_pluginargs.go``) and apimachinery field errors."""

from __future__ import annotations

from ksched.api.core import TopologySpreadConstraint
from ksched.apimachinery import field as fe
from ksched.apimachinery.validation import label_key_errors
from ksched.plugins.args.types import LIST_DEFAULTING, SYSTEM_DEFAULTING, PodTopologySpreadArgs

_SUPPORTED_ACTIONS = ("DoNotSchedule", "ScheduleAnyway")
_NO_SELECTOR = "constraint must not define a selector, as they deduced for each pod"


def _validate_defaulting_type(
    path: str, value: str, constraints: list[TopologySpreadConstraint]
) -> str | None:
    if value not in (SYSTEM_DEFAULTING, LIST_DEFAULTING):
        return str(fe.not_supported(path, value, (SYSTEM_DEFAULTING, LIST_DEFAULTING)))
    if value == SYSTEM_DEFAULTING and constraints:
        return str(fe.invalid(path, value, "when .defaultConstraints are not empty"))
    return None


def _validate_topology_key(path: str, value: str) -> list[str]:
    if not value:
        return [str(fe.required(path, "can not be empty"))]
    return [str(fe.invalid(path, value, msg)) for msg in label_key_errors(value)]


def _validate_when_unsatisfiable(path: str, value: str) -> str | None:
    if not value:
        return str(fe.required(path, "can not be empty"))
    if value not in _SUPPORTED_ACTIONS:
        return str(fe.not_supported(path, value, _SUPPORTED_ACTIONS))
    return None


def validate_pod_topology_spread_args(args: PodTopologySpreadArgs, path: str = "") -> list[str]:
    """Every problem with ``args`` (empty when valid); ``path`` prefixes the field paths."""
    errs: list[str] = []
    err = _validate_defaulting_type(
        fe.child(path, "defaultingType"), args.defaulting_type, args.default_constraints
    )
    if err:
        errs.append(err)
    constraints_path = fe.child(path, "defaultConstraints")
    for i, c in enumerate(args.default_constraints):
        p = fe.index(constraints_path, i)
        if c.max_skew <= 0:
            errs.append(str(fe.invalid(fe.child(p, "maxSkew"), c.max_skew, "not in valid range (0, inf)")))
        errs.extend(_validate_topology_key(fe.child(p, "topologyKey"), c.topology_key))
        err = _validate_when_unsatisfiable(fe.child(p, "whenUnsatisfiable"), c.when_unsatisfiable)
        if err:
            errs.append(err)
        if c.label_selector is not None:
            errs.append(str(fe.forbidden(fe.child(p, "labelSelector"), _NO_SELECTOR)))
        for other in args.default_constraints[:i]:
            if (other.topology_key, other.when_unsatisfiable) == (c.topology_key, c.when_unsatisfiable):
                pair = "{" + c.topology_key + ", " + c.when_unsatisfiable + "}"
                errs.append(str(fe.duplicate(p, pair)))
                break
    return list(dict.fromkeys(errs))  # ToAggregate drops repeated messages
