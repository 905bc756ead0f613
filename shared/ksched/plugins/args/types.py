"""Typed arguments of the in-tree plugins (``kubescheduler.config.k8s.io/v1`` plugin args),
with upstream's defaults. Validation: :mod:`ksched.plugins.args.validation`."""

from __future__ import annotations

import msgspec

from ksched.api.core import NodeAffinity, TopologySpreadConstraint
from ksched.framework.registration import Args


class ResourceSpec(msgspec.Struct, rename="camel", kw_only=True, forbid_unknown_fields=True):
    name: str
    weight: int = 0


class UtilizationShapePoint(msgspec.Struct, rename="camel", kw_only=True, forbid_unknown_fields=True):
    utilization: int
    score: int


class RequestedToCapacityRatioParam(msgspec.Struct, rename="camel", kw_only=True, forbid_unknown_fields=True):
    shape: list[UtilizationShapePoint] = []


#: the top of a utilization shape's score scale (upstream ``config.MaxCustomPriorityScore``)
MAX_CUSTOM_PRIORITY_SCORE = 10

LEAST_ALLOCATED = "LeastAllocated"
MOST_ALLOCATED = "MostAllocated"
REQUESTED_TO_CAPACITY_RATIO = "RequestedToCapacityRatio"


def default_resource_spec() -> list[ResourceSpec]:
    return [ResourceSpec(name="cpu", weight=1), ResourceSpec(name="memory", weight=1)]


class ScoringStrategy(msgspec.Struct, rename="camel", kw_only=True, forbid_unknown_fields=True):
    type: str = LEAST_ALLOCATED
    resources: list[ResourceSpec] = []
    requested_to_capacity_ratio: RequestedToCapacityRatioParam | None = None


class NodeResourcesFitArgs(Args):
    ignored_resources: list[str] = []
    ignored_resource_groups: list[str] = []
    scoring_strategy: ScoringStrategy | None = None

    def __post_init__(self) -> None:
        if self.scoring_strategy is None:
            self.scoring_strategy = ScoringStrategy(type=LEAST_ALLOCATED, resources=default_resource_spec())
        if not self.scoring_strategy.resources:
            self.scoring_strategy.resources = default_resource_spec()
        for spec in self.scoring_strategy.resources:
            if spec.weight == 0:
                spec.weight = 1


class NodeResourcesBalancedAllocationArgs(Args):
    resources: list[ResourceSpec] = []

    def __post_init__(self) -> None:
        if not self.resources:
            self.resources = default_resource_spec()
        for spec in self.resources:
            if spec.weight == 0:
                spec.weight = 1


class NodeAffinityArgs(Args):
    added_affinity: NodeAffinity | None = None


SYSTEM_DEFAULTING = "System"
LIST_DEFAULTING = "List"


class PodTopologySpreadArgs(Args):
    default_constraints: list[TopologySpreadConstraint] = []
    defaulting_type: str = SYSTEM_DEFAULTING


class InterPodAffinityArgs(Args):
    hard_pod_affinity_weight: int = 1
    ignore_preferred_terms_of_existing_pods: bool = False


class DefaultPreemptionArgs(Args):
    min_candidate_nodes_percentage: int = 10
    min_candidate_nodes_absolute: int = 100


class VolumeBindingArgs(Args):
    bind_timeout_seconds: int = 600
    shape: list[UtilizationShapePoint] = []


class DynamicResourcesArgs(Args):
    filter_timeout: str | None = None
    binding_timeout: str | None = None
