"""Plugin args validation in one place: args type -> validator ``(args, path) -> list[str]``.

Each validator returns upstream's field errors (``validation_pluginargs.go``) with paths under
``path`` (``profiles[0].pluginConfig[2].args`` when called by the configuration loader, "" for
none). The DefaultPreemption, VolumeBinding and DynamicResources validators are here, those of
the other plugin families in ``<family>_validation`` beside this module. Out-of-tree plugins add
theirs with :func:`register_validator`.

Feature gates are those of kube-scheduler 1.36 by default: DRASchedulerFilterTimeout,
DRADeviceBindingConditions and DRAResourceClaimDeviceStatus on; StorageCapacityScoring off.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ksched.apimachinery import field as fe
from ksched.apimachinery.duration import DurationError, parse_duration
from ksched.plugins.args.interpodaffinity_validation import validate_inter_pod_affinity_args
from ksched.plugins.args.nodeaffinity_validation import validate_node_affinity_args
from ksched.plugins.args.noderesources_validation import (
    shape_errors,
    validate_balanced_allocation_args,
    validate_fit_args,
)
from ksched.plugins.args.podtopologyspread_validation import validate_pod_topology_spread_args
from ksched.plugins.args.types import (
    DefaultPreemptionArgs,
    DynamicResourcesArgs,
    InterPodAffinityArgs,
    NodeAffinityArgs,
    NodeResourcesBalancedAllocationArgs,
    NodeResourcesFitArgs,
    PodTopologySpreadArgs,
    UtilizationShapePoint,
    VolumeBindingArgs,
)

Validator = Callable[[Any, str], list[str]]

#: kube-scheduler 1.36 default for the StorageCapacityScoring gate (alpha)
STORAGE_CAPACITY_SCORING = False
_SECOND_NS = 1_000_000_000


def _invalid(path: str, value: object, detail: str) -> str:
    return str(fe.invalid(path, value, detail))


def validate_default_preemption_args(args: DefaultPreemptionArgs, path: str = "") -> list[str]:
    """Upstream ``ValidateDefaultPreemptionArgs``."""
    percentage_path = fe.child(path, "minCandidateNodesPercentage")
    absolute_path = fe.child(path, "minCandidateNodesAbsolute")
    pct, absolute = args.min_candidate_nodes_percentage, args.min_candidate_nodes_absolute
    errs: list[str] = []
    if pct < 0 or pct > 100:
        errs.append(_invalid(percentage_path, pct, "not in valid range [0, 100]"))
    if absolute < 0:
        errs.append(_invalid(absolute_path, absolute, "not in valid range [0, inf)"))
    if pct == 0 and absolute == 0:
        errs.append(
            _invalid(percentage_path, pct, "cannot be zero at the same time as minCandidateNodesAbsolute")
        )
        errs.append(
            _invalid(
                absolute_path, absolute, "cannot be zero at the same time as minCandidateNodesPercentage"
            )
        )
    return errs


def _go_shape(shape: list[UtilizationShapePoint]) -> list[dict[str, int]]:
    """The internal (untagged) ``[]UtilizationShapePoint`` as ``json.Marshal`` sees it."""
    return [{"Utilization": p.utilization, "Score": p.score} for p in shape]


def validate_volume_binding_args(args: VolumeBindingArgs, path: str = "") -> list[str]:
    """Upstream ``ValidateVolumeBindingArgs`` with StorageCapacityScoring off (1.36 default)."""
    errs: list[str] = []
    if args.bind_timeout_seconds < 0:
        errs.append(
            _invalid(
                fe.child(path, "bindTimeoutSeconds"),
                args.bind_timeout_seconds,
                "invalid BindTimeoutSeconds, should not be a negative value",
            )
        )
    if STORAGE_CAPACITY_SCORING:
        errs.extend(shape_errors(args.shape, fe.child(path, "shape")))
    elif args.shape:
        errs.append(
            _invalid(
                fe.child(path, "shape"),
                _go_shape(args.shape),
                "unexpected field `shape`, remove it or turn on the feature gate StorageCapacityScoring",
            )
        )
    return errs


def _duration_ns(value: str, path: str, errs: list[str]) -> int | None:
    try:
        return parse_duration(value)
    except DurationError as exc:
        errs.append(_invalid(path, value, str(exc)))
        return None


def validate_dynamic_resources_args(args: DynamicResourcesArgs, path: str = "") -> list[str]:
    """Upstream ``ValidateDynamicResourcesArgs`` with the 1.36 default DRA feature gates (all on)."""
    errs: list[str] = []
    if args.filter_timeout is not None:
        where = fe.child(path, "filterTimeout")
        ns = _duration_ns(args.filter_timeout, where, errs)
        if ns is not None and ns < 0:
            errs.append(_invalid(where, args.filter_timeout, "must be zero or positive"))
    if args.binding_timeout is not None:
        where = fe.child(path, "bindingTimeout")
        ns = _duration_ns(args.binding_timeout, where, errs)
        if ns is not None and ns < _SECOND_NS:
            errs.append(_invalid(where, args.binding_timeout, "must be at least 1 second"))
    return errs


_VALIDATORS: dict[type, Validator] = {
    DefaultPreemptionArgs: validate_default_preemption_args,
    VolumeBindingArgs: validate_volume_binding_args,
    DynamicResourcesArgs: validate_dynamic_resources_args,
    NodeResourcesFitArgs: validate_fit_args,
    NodeResourcesBalancedAllocationArgs: validate_balanced_allocation_args,
    PodTopologySpreadArgs: validate_pod_topology_spread_args,
    InterPodAffinityArgs: validate_inter_pod_affinity_args,
    NodeAffinityArgs: validate_node_affinity_args,
}


def register_validator(args_type: type, validator: Validator) -> None:
    """Validate args of ``args_type`` (an out-of-tree plugin's) with ``validator``."""
    _VALIDATORS[args_type] = validator


def validator_for(args_type: type) -> Validator | None:
    """The validator of ``args_type``; None when it has none."""
    return _VALIDATORS.get(args_type)


def validate_args(args: object, path: str = "") -> list[str]:
    """Field errors of a plugin's typed args (empty when valid or when no validator applies)."""
    if args is None:
        return []
    validator = validator_for(type(args))
    return validator(args, path) if validator is not None else []
