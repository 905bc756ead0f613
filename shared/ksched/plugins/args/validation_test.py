"""Args validation: upstream ``validation_pluginargs_test.go`` cases for the args validated here
(DefaultPreemption, VolumeBinding, DynamicResources) and the type -> validator dispatch."""

from __future__ import annotations

import msgspec
import pytest

from ksched.plugins.args import validation as args_validation
from ksched.plugins.args.types import (
    DefaultPreemptionArgs,
    DynamicResourcesArgs,
    InterPodAffinityArgs,
    NodeResourcesBalancedAllocationArgs,
    NodeResourcesFitArgs,
    ResourceSpec,
    UtilizationShapePoint,
    VolumeBindingArgs,
)
from ksched.plugins.args.validation import (
    register_validator,
    validate_args,
    validate_default_preemption_args,
    validate_dynamic_resources_args,
    validate_volume_binding_args,
    validator_for,
)

PCT = "minCandidateNodesPercentage"
ABS = "minCandidateNodesAbsolute"


@pytest.mark.parametrize(
    ("name", "pct", "absolute", "want"),
    [
        ("valid args (default)", 10, 100, []),
        (
            "negative minCandidateNodesPercentage",
            -1,
            100,
            [f"{PCT}: Invalid value: -1: not in valid range [0, 100]"],
        ),
        (
            "minCandidateNodesPercentage over 100",
            900,
            100,
            [f"{PCT}: Invalid value: 900: not in valid range [0, 100]"],
        ),
        (
            "negative minCandidateNodesAbsolute",
            20,
            -1,
            [f"{ABS}: Invalid value: -1: not in valid range [0, inf)"],
        ),
        (
            "all zero",
            0,
            0,
            [
                f"{PCT}: Invalid value: 0: cannot be zero at the same time as minCandidateNodesAbsolute",
                f"{ABS}: Invalid value: 0: cannot be zero at the same time as minCandidateNodesPercentage",
            ],
        ),
        (
            "both negative",
            -1,
            -1,
            [
                f"{PCT}: Invalid value: -1: not in valid range [0, 100]",
                f"{ABS}: Invalid value: -1: not in valid range [0, inf)",
            ],
        ),
    ],
)
def test_default_preemption_args(name: str, pct: int, absolute: int, want: list[str]) -> None:
    args = DefaultPreemptionArgs(min_candidate_nodes_percentage=pct, min_candidate_nodes_absolute=absolute)
    assert validate_default_preemption_args(args) == want


def test_default_preemption_args_under_a_path() -> None:
    args = DefaultPreemptionArgs(min_candidate_nodes_percentage=101)
    assert validate_default_preemption_args(args, "profiles[0].pluginConfig[0].args") == [
        "profiles[0].pluginConfig[0].args.minCandidateNodesPercentage: Invalid value: 101: not in valid "
        "range [0, 100]"
    ]


@pytest.mark.parametrize(
    ("name", "args", "want"),
    [
        ("zero is a valid config", VolumeBindingArgs(bind_timeout_seconds=0), []),
        ("positive value is valid config", VolumeBindingArgs(bind_timeout_seconds=10), []),
        (
            "negative value is invalid config ",
            VolumeBindingArgs(bind_timeout_seconds=-10),
            [
                "bindTimeoutSeconds: Invalid value: -10: invalid BindTimeoutSeconds, should not be a "
                "negative value"
            ],
        ),
        (
            "[StorageCapacityScoring=off] shape should be nil when the feature is off",
            VolumeBindingArgs(bind_timeout_seconds=10),
            [],
        ),
        (
            "[StorageCapacityScoring=off] error if the shape is not nil when the feature is off",
            VolumeBindingArgs(
                bind_timeout_seconds=10,
                shape=[
                    UtilizationShapePoint(utilization=1, score=1),
                    UtilizationShapePoint(utilization=3, score=3),
                ],
            ),
            [
                'shape: Invalid value: [{"Utilization":1,"Score":1},{"Utilization":3,"Score":3}]: '
                "unexpected field "
                "`shape`, remove it or turn on the feature gate StorageCapacityScoring"
            ],
        ),
    ],
)
def test_volume_binding_args(name: str, args: VolumeBindingArgs, want: list[str]) -> None:
    assert validate_volume_binding_args(args) == want


@pytest.mark.parametrize(
    ("name", "shape", "want"),
    [
        (
            "[StorageCapacityScoring=on] shape should not be empty",
            [],
            ["shape: Required value: at least one point must be specified"],
        ),
        (
            "[StorageCapacityScoring=on] shape points must be sorted in increasing order",
            [(3, 3), (1, 1)],
            ["shape[1].utilization: Invalid value: 1: values must be sorted in increasing order"],
        ),
        (
            "[StorageCapacityScoring=on] shape point: invalid utilization and score",
            [(-1, 1), (10, -1), (20, 11), (101, 1)],
            [
                "shape[0].utilization: Invalid value: -1: not in valid range [0, 100]",
                "shape[1].score: Invalid value: -1: not in valid range [0, 10]",
                "shape[2].score: Invalid value: 11: not in valid range [0, 10]",
                "shape[3].utilization: Invalid value: 101: not in valid range [0, 100]",
            ],
        ),
    ],
)
def test_volume_binding_shape_with_gate_on(
    monkeypatch: pytest.MonkeyPatch, name: str, shape: list[tuple[int, int]], want: list[str]
) -> None:
    monkeypatch.setattr(args_validation, "STORAGE_CAPACITY_SCORING", True)
    points = [UtilizationShapePoint(utilization=u, score=s) for u, s in shape]
    assert validate_volume_binding_args(VolumeBindingArgs(bind_timeout_seconds=10, shape=points)) == want


@pytest.mark.parametrize(
    ("name", "filter_timeout", "binding_timeout", "want"),
    [
        ("defaults", "10s", "10m0s", []),
        ("unset", None, None, []),
        ("zero filter timeout disables it", "0s", "1s", []),
        (
            "negative filter timeout",
            "-1s",
            None,
            ['filterTimeout: Invalid value: "-1s": must be zero or positive'],
        ),
        (
            "binding timeout below a second",
            None,
            "999ms",
            ['bindingTimeout: Invalid value: "999ms": must be at least 1 second'],
        ),
        (
            "zero binding timeout",
            None,
            "0s",
            ['bindingTimeout: Invalid value: "0s": must be at least 1 second'],
        ),
        (
            "not a duration",
            "ten",
            None,
            ['filterTimeout: Invalid value: "ten": time: invalid duration "ten"'],
        ),
    ],
)
def test_dynamic_resources_args(
    name: str, filter_timeout: str | None, binding_timeout: str | None, want: list[str]
) -> None:
    args = DynamicResourcesArgs(filter_timeout=filter_timeout, binding_timeout=binding_timeout)
    assert validate_dynamic_resources_args(args) == want


def test_dispatch_by_args_type_reaches_plugin_family_validators() -> None:
    fit = NodeResourcesFitArgs(scoring_strategy=None)
    fit.scoring_strategy = None  # __post_init__ defaults it; upstream requires it after defaulting
    assert validate_args(fit, "a") == ["a.scoringStrategy: Required value: ScoringStrategy field is required"]
    balanced = NodeResourcesBalancedAllocationArgs(resources=[ResourceSpec(name="cpu", weight=2)])
    assert validate_args(balanced, "") == ["resources[0].weight: Invalid value: 2: must be 1"]
    affinity = InterPodAffinityArgs(hard_pod_affinity_weight=101)
    assert validate_args(affinity, "p") == [
        "p.hardPodAffinityWeight: Invalid value: 101: not in valid range [0, 100]"
    ]
    assert validate_args(None, "p") == []


def test_out_of_tree_validator_registration() -> None:
    class CustomArgs(msgspec.Struct):
        size: int = 0

    assert validator_for(CustomArgs) is None
    assert validate_args(CustomArgs(size=-1), "x") == []
    register_validator(CustomArgs, lambda a, p: [f"{p}.size: bad"] if a.size < 0 else [])
    assert validate_args(CustomArgs(size=-1), "x") == ["x.size: bad"]
    assert validate_args(CustomArgs(size=1), "x") == []
