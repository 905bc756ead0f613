"""Validation of NodeResourcesFitArgs / NodeResourcesBalancedAllocationArgs: upstream's field
errors (``validation_pluginargs.go``) with their exact wording."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from ksched.plugins.args.noderesources_validation import (
    validate_balanced_allocation_args,
    validate_fit_args,
)
from ksched.plugins.args.types import (
    LEAST_ALLOCATED,
    REQUESTED_TO_CAPACITY_RATIO,
    NodeResourcesBalancedAllocationArgs,
    NodeResourcesFitArgs,
    RequestedToCapacityRatioParam,
    ResourceSpec,
    ScoringStrategy,
    UtilizationShapePoint,
)


def fit_args(
    kind: str = LEAST_ALLOCATED,
    weights: list[tuple[str, int]] | None = None,
    shape: list[tuple[int, int]] | None = None,
    ignored_resources: Sequence[str] = (),
    ignored_resource_groups: Sequence[str] = (),
) -> NodeResourcesFitArgs:
    ratio = None
    if shape is not None:
        ratio = RequestedToCapacityRatioParam(
            shape=[UtilizationShapePoint(utilization=u, score=s) for u, s in shape]
        )
    args = NodeResourcesFitArgs(
        ignored_resources=list(ignored_resources),
        ignored_resource_groups=list(ignored_resource_groups),
        scoring_strategy=ScoringStrategy(type=kind, requested_to_capacity_ratio=ratio),
    )
    if weights is not None:
        assert args.scoring_strategy is not None
        args.scoring_strategy.resources = [ResourceSpec(name=n, weight=w) for n, w in weights]
    return args


QN_MSG = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
    "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)

FIT_CASES = [
    ("valid defaults", NodeResourcesFitArgs(), []),
    (
        "valid ignored resources and groups",
        fit_args(ignored_resources=["example.com/foo"], ignored_resource_groups=["example.com"]),
        [],
    ),
    (
        "ignored resource with an invalid name",
        fit_args(ignored_resources=["example.com/foo bar"]),
        [f'ignoredResources[0]: Invalid value: "example.com/foo bar": {QN_MSG}'],
    ),
    (
        "resource group containing a slash",
        fit_args(ignored_resource_groups=["example.com/aaa"]),
        [
            "ignoredResourceGroups[0]: Invalid value: \"example.com/aaa\": resource group name can't contain '/'"  # noqa: E501
        ],
    ),
    (
        "unsupported scoring strategy",
        fit_args(kind="Foo"),
        [
            'scoringStrategy.type: Unsupported value: "Foo": supported values: "LeastAllocated", "MostAllocated", '  # noqa: E501
            '"RequestedToCapacityRatio"'
        ],
    ),
    (
        "zero weight",
        fit_args(weights=[("cpu", 0)]),
        [
            "scoringStrategy.resources[0].weight: Invalid value: 0: resource weight of cpu not in valid range (0, 100]"  # noqa: E501
        ],
    ),
    (
        "weight above 100",
        fit_args(weights=[("cpu", 1), ("memory", 101)]),
        [
            "scoringStrategy.resources[1].weight: Invalid value: 101: resource weight of memory not in valid range "  # noqa: E501
            "(0, 100]"
        ],
    ),
    (
        "RequestedToCapacityRatio without parameters",
        fit_args(kind=REQUESTED_TO_CAPACITY_RATIO),
        [
            "scoringStrategy.requestedToCapacityRatio: Required value: must be specified when type is "
            "RequestedToCapacityRatio"
        ],
    ),
    (
        "RequestedToCapacityRatio with an empty shape",
        fit_args(kind=REQUESTED_TO_CAPACITY_RATIO, shape=[]),
        [
            "scoringStrategy.requestedToCapacityRatio.shape: Required value: at least one point must be specified"  # noqa: E501
        ],
    ),
    (
        "shape not sorted and out of range",
        fit_args(kind=REQUESTED_TO_CAPACITY_RATIO, shape=[(10, 1), (5, 11), (101, 0)]),
        [
            "scoringStrategy.requestedToCapacityRatio.shape[1].utilization: Invalid value: 5: values must be sorted "  # noqa: E501
            "in increasing order",
            "scoringStrategy.requestedToCapacityRatio.shape[1].score: Invalid value: 11: not in valid range [0, 10]",  # noqa: E501
            "scoringStrategy.requestedToCapacityRatio.shape[2].utilization: Invalid value: 101: not in valid range "  # noqa: E501
            "[0, 100]",
        ],
    ),
    (
        "shape parameters with another strategy",
        fit_args(shape=[(0, 0)]),
        [
            "scoringStrategy.requestedToCapacityRatio: Forbidden: must be nil when type is not RequestedToCapacityRatio"  # noqa: E501
        ],
    ),
]


@pytest.mark.parametrize(("name", "args", "want"), FIT_CASES, ids=[c[0] for c in FIT_CASES])
def test_validate_fit_args(name: str, args: NodeResourcesFitArgs, want: list[str]) -> None:
    assert validate_fit_args(args) == want


def test_validate_fit_args_without_strategy_and_with_path() -> None:
    args = NodeResourcesFitArgs()
    args.scoring_strategy = None
    path = "profiles[0].pluginConfig[2].args"
    assert validate_fit_args(args, path) == [
        f"{path}.scoringStrategy: Required value: ScoringStrategy field is required"
    ]


@pytest.mark.parametrize(
    ("resources", "want"),
    [
        ([], []),
        ([("cpu", 1), ("memory", 1)], []),
        (
            [("cpu", 1), ("cpu", 2)],
            ['resources[1].name: Duplicate value: "cpu"', "resources[1].weight: Invalid value: 2: must be 1"],
        ),
    ],
    ids=["defaults", "valid", "duplicate and weight"],
)
def test_validate_balanced_allocation_args(resources: list[tuple[str, int]], want: list[str]) -> None:
    args = NodeResourcesBalancedAllocationArgs()
    if resources:
        args.resources = [ResourceSpec(name=n, weight=w) for n, w in resources]
    assert validate_balanced_allocation_args(args) == want


def test_ignored_resource_names_are_label_keys() -> None:
    assert validate_fit_args(fit_args(ignored_resources=["example.com/gpu"])) == []
    errs = validate_fit_args(fit_args(ignored_resources=["a/b/c", "/gpu", "example.com/"]))
    assert errs[0].startswith(
        'ignoredResources[0]: Invalid value: "a/b/c": a valid label key must consist of'
    )
    assert errs[1] == 'ignoredResources[1]: Invalid value: "/gpu": prefix part must be non-empty'
    assert errs[2:] == [
        'ignoredResources[2]: Invalid value: "example.com/": name part must be non-empty',
        f'ignoredResources[2]: Invalid value: "example.com/": {QN_MSG}',
    ]
