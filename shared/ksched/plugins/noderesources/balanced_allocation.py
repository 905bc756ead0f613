"""NodeResourcesBalancedAllocation: favour nodes whose resource usage stays balanced
(upstream ``noderesources/balanced_allocation.go``, 1.36.2).

Per node, the balance score is ``(1 - std) * 100`` of the requested/allocatable fractions of
the configured resources (capped at 1). 1.36 scores the improvement the pod brings:
``50 + (50 + balance_with_pod - balance_without_pod) / 2``, in 50..100. Requests are the
pod's real requests (pod-level ``spec.resources`` included, no non-zero defaults) and the
node's requested amounts; best-effort pods skip the plugin at PreScore. An extended resource a
DeviceClass backs counts the node's devices where the node does not offer it (``dra_scoring``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ksched.apimachinery.field import aggregate_message
from ksched.apimachinery.gomath import (
    Float64Array,
    Int64Rows,
    div,
    div_array,
    float_to_int64,
    float_to_int64_array,
)
from ksched.framework.cycle_state import CycleState
from ksched.framework.handle import Handle
from ksched.framework.interfaces import (
    MAX_NODE_SCORE,
    BatchScorePlugin,
    BoolArray,
    Int64Array,
    PreScorePlugin,
    Rows,
    ScorePlugin,
)
from ksched.framework.nodeinfo import NodeInfo
from ksched.framework.podinfo import PodInfo
from ksched.framework.snapshot import Snapshot
from ksched.framework.status import Status
from ksched.plugins.args.noderesources_validation import validate_balanced_allocation_args
from ksched.plugins.args.types import NodeResourcesBalancedAllocationArgs
from ksched.plugins.dynamicresources.cel import CelCache
from ksched.plugins.dynamicresources.extended import resolver_for
from ksched.plugins.feature import DEFAULT_FEATURES, Features
from ksched.plugins.noderesources import dra_scoring
from ksched.plugins.noderesources.dra_scoring import DRAScoring
from ksched.plugins.noderesources.resource_allocation import ResourceAllocation, gathered

NAME = "NodeResourcesBalancedAllocation"
PRE_SCORE_STATE_KEY = "PreScore" + NAME

_HALF = MAX_NODE_SCORE // 2


def balanced_resource_score(requested: Sequence[int], allocatable: Sequence[int]) -> int:
    """``(1 - std) * 100`` of the fractions of the resources the node offers, truncated."""
    fractions: list[float] = []
    total = 0.0
    for req, cap in zip(requested, allocatable, strict=True):
        if cap == 0:
            continue
        fraction = float(req) / float(cap)
        if fraction > 1:
            fraction = 1.0
        total += fraction
        fractions.append(fraction)
    std = 0.0
    n = len(fractions)
    if n == 2:
        std = abs((fractions[0] - fractions[1]) / 2)
    elif n > 2:
        mean = total / float(n)
        acc = 0.0
        for fraction in fractions:
            acc = acc + (fraction - mean) * (fraction - mean)
        std = math.sqrt(acc / float(n))
    return float_to_int64((1 - std) * float(MAX_NODE_SCORE))


def _scores_from_std(std: Float64Array) -> Int64Array:
    # Fractions are finite (capacity is never 0 here) and at most 1, so std is finite and >= 0:
    # only a huge spread from negative amounts can leave the int64 range.
    scaled = (1 - std) * float(MAX_NODE_SCORE)
    if scaled.size and scaled.min() < -9.2e18:
        return float_to_int64_array(scaled)
    return scaled.astype(np.int64)  # truncation toward zero, as Go's int64(f)


def balanced_resource_score_batch(
    values: Int64Rows, present: BoolArray, capacity: Float64Array
) -> Int64Array:
    """``balanced_resource_score`` per node, with the same float operations in the same order.

    Rows are resources, columns nodes: ``present`` marks nodes offering the row's resource;
    ``capacity`` is its allocatable as float64 (any non-zero value where absent).
    """
    # int64 / float64 converts the amounts to float64 first, as float(req) / float(cap) does
    fractions = np.minimum(np.asarray(values, dtype=np.int64) / capacity, 1.0)
    if len(fractions) == 2:  # the usual cpu + memory: std is |f0 - f1| / 2 where both count
        std = np.where(present[0] & present[1], np.abs((fractions[0] - fractions[1]) / 2), 0.0)
        return _scores_from_std(std)
    n = fractions.shape[1]
    total = np.zeros(n, dtype=np.float64)
    first = np.zeros_like(total)
    second = np.zeros_like(total)
    count = np.zeros(n, dtype=np.int64)
    for f, p in zip(fractions, present, strict=True):
        total = total + np.where(p, f, 0.0)  # adding 0.0 for a skipped resource is exact
        count = count + p
        first = np.where(p & (count == 1), f, first)
        second = np.where(p & (count == 2), f, second)
    divisor = np.maximum(count, 1).astype(np.float64)
    mean = total / divisor
    acc = np.zeros_like(total)
    for f, p in zip(fractions, present, strict=True):
        d = f - mean
        acc = acc + np.where(p, d * d, 0.0)
    spread = np.sqrt(acc / divisor)
    std = np.where(count == 2, np.abs((first - second) / 2), np.where(count > 2, spread, 0.0))
    return _scores_from_std(std)


class Balanced:
    """The balanced-allocation strategy: how much the pod improves the node's balance."""

    def score(self, requested: Sequence[int], allocated: Sequence[int], allocatable: Sequence[int]) -> int:
        with_pod = balanced_resource_score(requested, allocatable)
        without_pod = balanced_resource_score(allocated, allocatable)
        return _HALF + div(_HALF + with_pod - without_pod, 2)

    def score_batch(self, requested: Int64Rows, allocated: Int64Rows, allocatable: Int64Rows) -> Int64Array:
        cap = np.asarray(allocatable, dtype=np.int64)
        present = cap != 0
        capacity = np.where(present, cap, 1).astype(np.float64)
        with_pod = balanced_resource_score_batch(requested, present, capacity)
        without_pod = balanced_resource_score_batch(allocated, present, capacity)
        return _HALF + div_array(_HALF + with_pod - without_pod, 2)


@dataclass(frozen=True, slots=True)
class PreScoreState:
    pod_requests: tuple[int, ...]
    dra: DRAScoring | None = None

    def clone(self) -> PreScoreState:
        return self


class BalancedAllocation:
    """The NodeResourcesBalancedAllocation plugin: PreScore and Score."""

    name = NAME

    def __init__(
        self,
        args: NodeResourcesBalancedAllocationArgs | None = None,
        *,
        pod_level_resources: bool = True,
        dra_extended_resource: bool = True,
        handle: Handle | None = None,
    ) -> None:
        args = args if args is not None else NodeResourcesBalancedAllocationArgs()
        errors = validate_balanced_allocation_args(args)
        if errors:
            raise ValueError(aggregate_message(errors))
        resources = [(r.name, r.weight) for r in args.resources]
        self.scorer = ResourceAllocation(
            NAME, resources, Balanced(), use_requested=True, pod_level_resources=pod_level_resources
        )
        self._dra_extended_resource = dra_extended_resource
        self._handle = handle
        self._cel = CelCache()

    def _dra_scoring(self) -> DRAScoring | None:
        if not self._dra_extended_resource or self._handle is None:
            return None
        snapshot = self._handle.snapshot
        objects = snapshot.objects
        resolver = resolver_for(objects.device_classes)
        if not resolver:
            return None
        return dra_scoring.prepare(
            self.scorer.names,
            resolver,
            snapshot,
            lambda: objects.resource_claims,
            objects.resource_slices.values(),
            self._cel,
        )

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Status | None:
        requests = self.scorer.pod_requests(pod)
        if not any(requests):
            # best-effort pods would all pile onto one node (kubernetes#129138)
            return Status.skip()
        state.write(PRE_SCORE_STATE_KEY, PreScoreState(requests, self._dra_scoring()))
        return None

    def _pre_score_state(self, state: CycleState, pod: PodInfo) -> PreScoreState | None:
        cached = state.get(PRE_SCORE_STATE_KEY, PreScoreState)
        if cached is not None:
            return cached
        requests = self.scorer.pod_requests(pod)
        return PreScoreState(requests, self._dra_scoring()) if any(requests) else None

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        st = self._pre_score_state(state, pod)
        return 0 if st is None else self.scorer.score(node, st.pod_requests, st.dra)

    def score_batch(self, state: CycleState, pod: PodInfo, snapshot: Snapshot, rows: Rows) -> Int64Array:
        st = self._pre_score_state(state, pod)
        if st is None:
            return np.zeros(len(rows), dtype=np.int64)
        block = gathered(state, snapshot, rows)
        return self.scorer.score_rows(snapshot.columns, rows, st.pod_requests, st.dra, snapshot.nodes, block)


# The extension points BalancedAllocation implements, checked by mypy against ksched.framework.interfaces
# (upstream's ``var _ fwk.<Point>Plugin = &BalancedAllocation{}`` lines).
_PRE_SCORE: type[PreScorePlugin] = BalancedAllocation
_SCORE: type[ScorePlugin] = BalancedAllocation
_BATCH_SCORE: type[BatchScorePlugin] = BalancedAllocation


def new(
    args: NodeResourcesBalancedAllocationArgs | None, handle: Handle, features: Features = DEFAULT_FEATURES
) -> BalancedAllocation:
    return BalancedAllocation(
        args, dra_extended_resource=features.enable_dra_extended_resource, handle=handle
    )
