"""Resource vectors and a pod's effective requests, as upstream computes them for scheduling.

Requests follow component-helpers ``PodRequests``: the sum of app containers and restartable
(sidecar) init containers, maxed against each init container's need at its start, pod-level
``spec.resources.requests`` (cpu, memory, hugepages-*) replacing the container sum, plus overhead.
Non-zero requests default a missing cpu/memory request to 100m / 200Mi for scoring.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from ksched.api.core import Container, Pod
from ksched.apimachinery.quantity import (
    Quantity,
    milli_value,
    new_milli_quantity,
    new_quantity,
    parse_quantity,
    value,
)

CPU = "cpu"
MEMORY = "memory"
EPHEMERAL_STORAGE = "ephemeral-storage"
PODS = "pods"

DEFAULT_MILLI_CPU_REQUEST = 100
"""Upstream's non-zero default cpu request (0.1 core) for pods that set none."""
DEFAULT_MEMORY_REQUEST = 200 * 1024 * 1024
"""Upstream's non-zero default memory request (200 MiB)."""

HUGEPAGES_PREFIX = "hugepages-"
ATTACHABLE_VOLUMES_PREFIX = "attachable-volumes-"
DEFAULT_NAMESPACE_PREFIX = "kubernetes.io/"
REQUESTS_PREFIX = "requests."


def is_native_resource(name: str) -> bool:
    return "/" not in name or DEFAULT_NAMESPACE_PREFIX in name


def is_extended_resource(name: str) -> bool:
    """Fully-qualified names outside ``kubernetes.io/`` (``nvidia.com/gpu``)."""
    return not is_native_resource(name) and not name.startswith(REQUESTS_PREFIX)


def is_scalar_resource(name: str) -> bool:
    """Resources tracked in ``Resource.scalar``: extended, hugepages, prefixed native, attachable volumes."""
    return (
        is_extended_resource(name)
        or name.startswith((HUGEPAGES_PREFIX, ATTACHABLE_VOLUMES_PREFIX))
        or DEFAULT_NAMESPACE_PREFIX in name
    )


class Resource:
    """A vector of resource amounts (cpu in millicores, memory/storage in bytes, scalars in units)."""

    __slots__ = ("allowed_pod_number", "ephemeral_storage", "memory", "milli_cpu", "scalar")

    def __init__(
        self,
        milli_cpu: int = 0,
        memory: int = 0,
        ephemeral_storage: int = 0,
        allowed_pod_number: int = 0,
        scalar: dict[str, int] | None = None,
    ) -> None:
        self.milli_cpu = milli_cpu
        self.memory = memory
        self.ephemeral_storage = ephemeral_storage
        self.allowed_pod_number = allowed_pod_number
        self.scalar: dict[str, int] = scalar if scalar is not None else {}

    @classmethod
    def from_list(cls, resources: Mapping[str, str]) -> Resource:
        r = cls()
        r.add_list(resources)
        return r

    def add_list(self, resources: Mapping[str, str]) -> None:
        """Add a ResourceList (name -> quantity string), ignoring names upstream ignores."""
        for name, qty in resources.items():
            if name == CPU:
                self.milli_cpu += milli_value(qty)
            elif name == MEMORY:
                self.memory += value(qty)
            elif name == PODS:
                self.allowed_pod_number += value(qty)
            elif name == EPHEMERAL_STORAGE:
                self.ephemeral_storage += value(qty)
            elif is_scalar_resource(name):
                self.scalar[name] = self.scalar.get(name, 0) + value(qty)

    def get(self, name: str) -> int:
        if name == CPU:
            return self.milli_cpu
        if name == MEMORY:
            return self.memory
        if name == EPHEMERAL_STORAGE:
            return self.ephemeral_storage
        if name == PODS:
            return self.allowed_pod_number
        return self.scalar.get(name, 0)

    def add(self, other: Resource, sign: int = 1) -> None:
        self.milli_cpu += sign * other.milli_cpu
        self.memory += sign * other.memory
        self.ephemeral_storage += sign * other.ephemeral_storage
        self.allowed_pod_number += sign * other.allowed_pod_number
        for name, amount in other.scalar.items():
            self.scalar[name] = self.scalar.get(name, 0) + sign * amount

    def clone(self) -> Resource:
        return Resource(
            self.milli_cpu, self.memory, self.ephemeral_storage, self.allowed_pod_number, dict(self.scalar)
        )

    def items(self) -> Iterable[tuple[str, int]]:
        """Every non-zero amount by resource name."""
        base = ((CPU, self.milli_cpu), (MEMORY, self.memory), (EPHEMERAL_STORAGE, self.ephemeral_storage))
        yield from ((n, v) for n, v in base if v)
        yield from ((n, v) for n, v in self.scalar.items() if v)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Resource):
            return NotImplemented
        return (
            self.milli_cpu == other.milli_cpu
            and self.memory == other.memory
            and self.ephemeral_storage == other.ephemeral_storage
            and self.allowed_pod_number == other.allowed_pod_number
            and {k: v for k, v in self.scalar.items() if v} == {k: v for k, v in other.scalar.items() if v}
        )

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return (
            f"Resource(cpu={self.milli_cpu}m, memory={self.memory}, ephemeral={self.ephemeral_storage}, "
            f"pods={self.allowed_pod_number}, scalar={self.scalar})"
        )


# --- pod requests -------------------------------------------------------------------------------

_Amounts = dict[str, int]
_Quantities = dict[str, Quantity]


def _quantities(container: Container) -> _Quantities:
    res = container.resources
    if res is None:
        return {}
    return {name: parse_quantity(qty) for name, qty in res.requests.items()}


def _add(into: _Quantities, more: Mapping[str, Quantity]) -> None:
    for name, q in more.items():
        into[name] = into[name] + q if name in into else q


def _max(into: _Quantities, other: Mapping[str, Quantity]) -> None:
    for name, q in other.items():
        if name not in into or q > into[name]:
            into[name] = q


def _with_defaults(quantities: _Quantities, defaults: Mapping[str, Quantity]) -> _Quantities:
    if not defaults:
        return quantities
    out = dict(quantities)
    for name, q in defaults.items():
        if name not in out:
            out[name] = q
    return out


def is_supported_pod_level_resource(name: str) -> bool:
    return name in (CPU, MEMORY) or name.startswith(HUGEPAGES_PREFIX)


def pod_level_requests_set(pod: Pod) -> bool:
    res = pod.spec.resources
    return res is not None and any(is_supported_pod_level_resource(n) for n in res.requests)


def pod_requests(pod: Pod, container_defaults: Mapping[str, int] | None = None) -> _Amounts:
    """Effective requests by resource name (cpu in millicores), overhead included.

    Quantities are summed exactly and rounded once, as upstream adds ``resource.Quantity`` values.
    ``container_defaults`` fills requests a container leaves out (upstream's NonMissingContainerRequests).
    """
    defaults = {
        name: new_milli_quantity(amount) if name == CPU else new_quantity(amount)
        for name, amount in (container_defaults or {}).items()
    }
    reqs: _Quantities = {}
    for c in pod.spec.containers:
        _add(reqs, _with_defaults(_quantities(c), defaults))
    sidecars: _Quantities = {}
    init_peak: _Quantities = {}
    for c in pod.spec.init_containers:
        need = _with_defaults(_quantities(c), defaults)
        if c.restart_policy == "Always":
            _add(reqs, need)
            _add(sidecars, need)
            need = dict(sidecars)
        else:
            combined = dict(need)
            _add(combined, sidecars)
            need = combined
        _max(init_peak, need)
    _max(reqs, init_peak)
    res = pod.spec.resources
    if res is not None:
        for name, qty in res.requests.items():
            if is_supported_pod_level_resource(name):
                reqs[name] = parse_quantity(qty)
    for name, qty in pod.spec.overhead.items():
        _add(reqs, {name: parse_quantity(qty)})
    return {name: q.milli_value() if name == CPU else q.value() for name, q in reqs.items()}


def resource_from_amounts(amounts: Mapping[str, int]) -> Resource:
    r = Resource()
    for name, amount in amounts.items():
        if name == CPU:
            r.milli_cpu += amount
        elif name == MEMORY:
            r.memory += amount
        elif name == PODS:
            r.allowed_pod_number += amount
        elif name == EPHEMERAL_STORAGE:
            r.ephemeral_storage += amount
        elif is_scalar_resource(name):
            r.scalar[name] = r.scalar.get(name, 0) + amount
    return r


def non_zero_requests(pod: Pod, requests: Mapping[str, int]) -> tuple[int, int]:
    """(milli cpu, memory) with upstream's defaults for requests left out, for scoring."""
    if not pod_level_requests_set(pod):
        defaults = {CPU: DEFAULT_MILLI_CPU_REQUEST, MEMORY: DEFAULT_MEMORY_REQUEST}
    else:
        defaults = {}
        if CPU not in requests:
            defaults[CPU] = DEFAULT_MILLI_CPU_REQUEST
        if MEMORY not in requests:
            defaults[MEMORY] = DEFAULT_MEMORY_REQUEST
    non0 = pod_requests(pod, defaults) if defaults and some_container_lacks(pod, defaults) else requests
    return non0.get(CPU, 0), non0.get(MEMORY, 0)


def some_container_lacks(pod: Pod, names: Iterable[str]) -> bool:
    """Whether a container or init container requests none of some of ``names`` (when all request
    them, the defaults change nothing and the requests already computed are the non-zero ones)."""
    for containers in (pod.spec.containers, pod.spec.init_containers):
        for c in containers:
            requested = c.resources.requests if c.resources is not None else {}
            if any(name not in requested for name in names):
                return True
    return False
