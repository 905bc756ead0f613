"""Validation of NodeResourcesFitArgs and NodeResourcesBalancedAllocationArgs, worded as
upstream's ``validation_pluginargs.go`` field errors (``<path>: <type>: <value>: <detail>``).

Both functions take args after defaulting and a field path prefix ("" for none) and return
one string per error, in upstream's order.
"""

from __future__ import annotations

from ksched.apimachinery import field as fe
from ksched.apimachinery.validation import label_key_errors
from ksched.plugins.args.types import (
    LEAST_ALLOCATED,
    MAX_CUSTOM_PRIORITY_SCORE,
    MOST_ALLOCATED,
    REQUESTED_TO_CAPACITY_RATIO,
    NodeResourcesBalancedAllocationArgs,
    NodeResourcesFitArgs,
    ResourceSpec,
    UtilizationShapePoint,
)

SUPPORTED_SCORING_STRATEGIES = (LEAST_ALLOCATED, MOST_ALLOCATED, REQUESTED_TO_CAPACITY_RATIO)
MAX_RESOURCE_WEIGHT = 100


def _invalid(path: str, value: object, detail: str) -> str:
    return str(fe.invalid(path, value, detail))


def _label_name_errors(value: str, path: str) -> list[str]:
    """metav1 ``ValidateLabelName``: one Invalid error per label-key problem."""
    return [_invalid(path, value, msg) for msg in label_key_errors(value)]


def _resource_weight_errors(resources: list[ResourceSpec], path: str) -> list[str]:
    return [
        _invalid(
            fe.child(fe.index(path, i), "weight"),
            r.weight,
            f"resource weight of {r.name} not in valid range (0, {MAX_RESOURCE_WEIGHT}]",
        )
        for i, r in enumerate(resources)
        if r.weight <= 0 or r.weight > MAX_RESOURCE_WEIGHT
    ]


def shape_errors(shape: list[UtilizationShapePoint], path: str) -> list[str]:
    """Upstream ``validateFunctionShape``."""
    if not shape:
        return [str(fe.required(path, "at least one point must be specified"))]
    errs: list[str] = []
    for i in range(1, len(shape)):
        if shape[i - 1].utilization >= shape[i].utilization:
            point_path = fe.child(fe.index(path, i), "utilization")
            errs.append(
                _invalid(point_path, shape[i].utilization, "values must be sorted in increasing order")
            )
            break
    for i, point in enumerate(shape):
        if not 0 <= point.utilization <= 100:
            point_path = fe.child(fe.index(path, i), "utilization")
            errs.append(_invalid(point_path, point.utilization, "not in valid range [0, 100]"))
        if not 0 <= point.score <= MAX_CUSTOM_PRIORITY_SCORE:
            detail = f"not in valid range [0, {MAX_CUSTOM_PRIORITY_SCORE}]"
            errs.append(_invalid(fe.child(fe.index(path, i), "score"), point.score, detail))
    return errs


def validate_fit_args(args: NodeResourcesFitArgs, path: str = "") -> list[str]:
    """Upstream ``ValidateNodeResourcesFitArgs``."""
    errs: list[str] = []
    for i, name in enumerate(args.ignored_resources):
        errs.extend(_label_name_errors(name, fe.index(fe.child(path, "ignoredResources"), i)))
    for i, group in enumerate(args.ignored_resource_groups):
        group_path = fe.index(fe.child(path, "ignoredResourceGroups"), i)
        if "/" in group:
            errs.append(_invalid(group_path, group, "resource group name can't contain '/'"))
        errs.extend(_label_name_errors(group, group_path))
    strategy_path = fe.child(path, "scoringStrategy")
    strategy = args.scoring_strategy
    if strategy is None:
        errs.append(str(fe.required(strategy_path, "ScoringStrategy field is required")))
        return errs
    if strategy.type not in SUPPORTED_SCORING_STRATEGIES:
        supported = sorted(SUPPORTED_SCORING_STRATEGIES)
        errs.append(str(fe.not_supported(fe.child(strategy_path, "type"), strategy.type, supported)))
    errs.extend(_resource_weight_errors(strategy.resources, fe.child(strategy_path, "resources")))
    ratio_path = fe.child(strategy_path, "requestedToCapacityRatio")
    if strategy.type == REQUESTED_TO_CAPACITY_RATIO:
        if strategy.requested_to_capacity_ratio is None:
            errs.append(
                str(fe.required(ratio_path, "must be specified when type is RequestedToCapacityRatio"))
            )
        else:
            errs.extend(
                shape_errors(strategy.requested_to_capacity_ratio.shape, fe.child(ratio_path, "shape"))
            )
    elif strategy.requested_to_capacity_ratio is not None:
        errs.append(str(fe.forbidden(ratio_path, "must be nil when type is not RequestedToCapacityRatio")))
    return errs


def validate_balanced_allocation_args(args: NodeResourcesBalancedAllocationArgs, path: str = "") -> list[str]:
    """Upstream ``ValidateNodeResourcesBalancedAllocationArgs``: unique names, every weight 1."""
    errs: list[str] = []
    seen: set[str] = set()
    for i, resource in enumerate(args.resources):
        item = fe.index(fe.child(path, "resources"), i)
        if resource.name in seen:
            errs.append(str(fe.duplicate(fe.child(item, "name"), resource.name)))
        else:
            seen.add(resource.name)
        if resource.weight != 1:
            errs.append(_invalid(fe.child(item, "weight"), resource.weight, "must be 1"))
    return errs
