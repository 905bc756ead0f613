"""Whether a node has room for a pod's requests (upstream ``computePodResourceRequest`` and
``fitsRequest``), per node and vectorized over the snapshot's columns."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass

import numpy as np

from ksched.api.core import Pod
from ksched.apimachinery.gomath import wrap64
from ksched.framework.columns import NodeColumns, row_runs, take_rows
from ksched.framework.interfaces import BoolArray, Rows
from ksched.framework.nodeinfo import NodeInfo
from ksched.framework.podinfo import PodInfo
from ksched.framework.resources import (
    CPU,
    EPHEMERAL_STORAGE,
    MEMORY,
    is_extended_resource,
    is_scalar_resource,
    pod_requests,
)
from ksched.plugins.noderesources.resource_allocation import without_pod_level_resources

REASON_TOO_MANY_PODS = "Too many pods"
REASON_INSUFFICIENT_CPU = "Insufficient cpu"
REASON_INSUFFICIENT_MEMORY = "Insufficient memory"
REASON_INSUFFICIENT_EPHEMERAL_STORAGE = "Insufficient ephemeral-storage"


def insufficient_reason(resource: str) -> str:
    """``Insufficient <resource>``, upstream's wording for every resource."""
    return f"Insufficient {resource}"


@dataclass(frozen=True, slots=True)
class FitRequest:
    """The largest amount of each resource the pod needs at once (upstream ``preFilterState``).

    Negative amounts count as 0 and the ``pods`` resource is not part of it, as upstream's
    ``SetMaxResource``. Immutable, so ``clone`` returns itself.
    """

    milli_cpu: int = 0
    memory: int = 0
    ephemeral_storage: int = 0
    scalars: tuple[tuple[str, int], ...] = ()
    #: extended resources a DeviceClass backs (DRAExtendedResource): a node that does not offer
    #: one as allocatable leaves it to DynamicResources (upstream ``shouldDelegateResourceToDRA``)
    dra_backed: frozenset[str] = frozenset()

    def clone(self) -> FitRequest:
        return self

    @property
    def empty(self) -> bool:
        return not (self.milli_cpu or self.memory or self.ephemeral_storage or self.scalars)

    @classmethod
    def from_requests(cls, requests: Mapping[str, int]) -> FitRequest:
        return cls(
            milli_cpu=max(0, requests.get(CPU, 0)),
            memory=max(0, requests.get(MEMORY, 0)),
            ephemeral_storage=max(0, requests.get(EPHEMERAL_STORAGE, 0)),
            scalars=tuple((n, max(0, q)) for n, q in requests.items() if is_scalar_resource(n)),
        )


def fit_request_of(pod: Pod, *, pod_level_resources: bool = True) -> FitRequest:
    """The FitRequest of a bare pod (queueing hints)."""
    source = pod if pod_level_resources else without_pod_level_resources(pod)
    return FitRequest.from_requests(pod_requests(source))


def pod_fit_request(pod_info: PodInfo, *, pod_level_resources: bool = True) -> FitRequest:
    """The FitRequest of a pod, memoized on its PodInfo."""
    key = f"noderesources/fit-request/{int(pod_level_resources)}"
    cached = pod_info.cache.get(key)
    if not isinstance(cached, FitRequest):
        if pod_level_resources:
            cached = FitRequest.from_requests(pod_info.requests_map)
        else:
            cached = fit_request_of(pod_info.pod, pod_level_resources=False)
        pod_info.cache[key] = cached
    return cached


@dataclass(frozen=True, slots=True)
class InsufficientResource:
    """A resource the node lacks; ``unresolvable`` when the request exceeds the node's allocatable
    outright, so evicting pods (preemption) cannot help."""

    resource_name: str
    reason: str
    requested: int
    used: int
    capacity: int
    unresolvable: bool = False


class IgnoredResources:
    """Extended resources NodeResourcesFit does not check (by name, or by the prefix before '/')."""

    __slots__ = ("groups", "names")

    def __init__(self, names: Collection[str] = (), groups: Collection[str] = ()) -> None:
        self.names = frozenset(names)
        self.groups = frozenset(groups)

    def __contains__(self, resource: object) -> bool:
        if not isinstance(resource, str) or not is_extended_resource(resource):
            return False
        if resource in self.names:
            return True
        return bool(self.groups) and resource.split("/", 1)[0] in self.groups


NOTHING_IGNORED = IgnoredResources()


def fits_request(
    request: FitRequest, node: NodeInfo, ignored: IgnoredResources = NOTHING_IGNORED
) -> list[InsufficientResource]:
    """Every resource the node lacks for ``request`` (empty when the pod fits)."""
    out: list[InsufficientResource] = []
    alloc, used = node.allocatable, node.requested
    pods = len(node.pods)
    if pods + 1 > alloc.allowed_pod_number:
        out.append(InsufficientResource("pods", REASON_TOO_MANY_PODS, 1, pods, alloc.allowed_pod_number))
    if request.empty:
        return out
    checks = (
        (CPU, REASON_INSUFFICIENT_CPU, request.milli_cpu, used.milli_cpu, alloc.milli_cpu),
        (MEMORY, REASON_INSUFFICIENT_MEMORY, request.memory, used.memory, alloc.memory),
        (
            EPHEMERAL_STORAGE,
            REASON_INSUFFICIENT_EPHEMERAL_STORAGE,
            request.ephemeral_storage,
            used.ephemeral_storage,
            alloc.ephemeral_storage,
        ),
    )
    for name, reason, want, in_use, capacity in checks:
        if want > 0 and want > wrap64(capacity - in_use):
            out.append(InsufficientResource(name, reason, want, in_use, capacity, want > capacity))
    for name, want in request.scalars:
        if want == 0 or name in ignored:
            continue
        capacity = alloc.scalar.get(name, 0)
        if capacity <= 0 and name in request.dra_backed:
            continue  # DynamicResources allocates it from devices
        in_use = used.scalar.get(name, 0)
        if want > wrap64(capacity - in_use):
            out.append(
                InsufficientResource(name, insufficient_reason(name), want, in_use, capacity, want > capacity)
            )
    return out


def fits_rows(
    request: FitRequest, columns: NodeColumns, rows: Rows, ignored: IgnoredResources = NOTHING_IGNORED
) -> BoolArray:
    """For each row, whether ``fits_request`` would report nothing."""
    runs = row_runs(rows, columns.size)
    alloc, req = take_rows(columns.alloc, runs), take_rows(columns.req, runs)
    ok: BoolArray = req[:, 3] < alloc[:, 3]
    if request.empty:
        return ok
    for base, want in ((0, request.milli_cpu), (1, request.memory), (2, request.ephemeral_storage)):
        if want > 0:
            ok &= alloc[:, base] - req[:, base] >= want
    for name, want in request.scalars:
        if want == 0 or name in ignored:
            continue
        col = columns.resource_index.get(name)
        delegated = name in request.dra_backed
        if col is None:  # no node offers it (nor has it requested): free amount is 0 everywhere
            if delegated:
                continue
            return np.zeros(len(ok), dtype=np.bool_)
        fits = alloc[:, col] - req[:, col] >= want
        ok &= (alloc[:, col] <= 0) | fits if delegated else fits
    return ok
