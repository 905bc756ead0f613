"""Resource pools reachable from a node (upstream ``structured/internal/incubating/pools_incubating.go``).

Slices of a pool with an older generation are ignored; a pool missing some of its slices is
*incomplete*, one with duplicate device names or dangling counter references *invalid*. Pools are
sorted by (driver, pool), those with devices that have binding conditions last, and slices by name:
the allocator takes the first fit, so this order decides which devices a claim gets.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from ksched.api.core import Node, NodeSelector
from ksched.api.resource import CounterSet, ResourceSlice
from ksched.apimachinery.nodeselector import NodeSelector as NodeSelectorMatcher
from ksched.apimachinery.quantity import Quantity, parse_quantity
from ksched.plugins.dynamicresources.devices import AllocatedState, DeviceID
from ksched.plugins.dynamicresources.features import DRAFeatures


class PoolError(ValueError):
    """A node selector of a slice or device that cannot be parsed."""


PoolID = tuple[str, str]
"""(driver, pool name)"""


@dataclass
class Pool:
    pool_id: PoolID
    is_incomplete: bool = False
    is_invalid: bool = False
    invalid_reason: str = ""
    slices_targeting_node: list[ResourceSlice] = field(default_factory=list)
    slices_not_targeting_node: list[ResourceSlice] = field(default_factory=list)
    counter_sets: dict[str, CounterSet] = field(default_factory=dict)

    @property
    def driver(self) -> str:
        return self.pool_id[0]

    @property
    def name(self) -> str:
        return self.pool_id[1]

    def __str__(self) -> str:
        return f"{self.pool_id[0]}/{self.pool_id[1]}"


def node_matches(node: Node | None, node_name: str, all_nodes: bool, selector: NodeSelector | None) -> bool:
    """Upstream ``NodeMatches``: a node name, all nodes, or a node selector."""
    if node_name:
        return node is not None and node.metadata.name == node_name
    if all_nodes:
        return True
    if selector is not None:
        matcher = NodeSelectorMatcher(selector)
        if matcher.errors:
            raise PoolError(f"failed to parse node selector: {'; '.join(matcher.errors)}")
        return node is not None and matcher.matches_node(node)
    return False


def _relevant(slice_: ResourceSlice, node: Node) -> bool | None:
    """Whether the slice offers devices to ``node``; None for a slice of no known kind."""
    spec = slice_.spec
    if spec.shared_counters:
        return True  # counters are needed to use the pool, wherever its devices are
    if spec.node_name or spec.all_nodes or spec.node_selector is not None:
        try:
            return node_matches(node, spec.node_name or "", bool(spec.all_nodes), spec.node_selector)
        except PoolError as exc:
            raise PoolError(
                f"failed to perform node selection for slice {slice_.metadata.name}: {exc}"
            ) from None
    if spec.per_device_node_selection:
        for device in spec.devices:
            try:
                if node_matches(node, device.node_name or "", bool(device.all_nodes), device.node_selector):
                    return True
            except PoolError as exc:
                raise PoolError(
                    f"failed to perform node selection for device {device.name} in slice "
                    f"{slice_.metadata.name}: {exc}"
                ) from None
        return False
    return None


def gather_pools(
    slices_for_node: Sequence[ResourceSlice],
    node: Node,
    features: DRAFeatures,
    all_slices: Sequence[ResourceSlice],
) -> list[Pool]:
    """Upstream ``GatherPools`` (PoolError for a node selector that does not parse)."""
    pools: dict[PoolID, list[ResourceSlice]] = {}
    for slice_ in slices_for_node:
        spec = slice_.spec
        if not features.partitionable_devices and (
            spec.per_device_node_selection is not None or spec.shared_counters
        ):
            continue
        if _relevant(slice_, node):
            _add_slice(pools, slice_)
    ready: list[Pool] = []
    with_binding_conditions: list[Pool] = []
    for pool_id, slices in pools.items():
        wanted = slices[0].spec.pool.resource_slice_count
        all_for_pool: list[ResourceSlice] | None = None
        if len(slices) != wanted:
            obsolete, all_for_pool = _slices_in_pool(all_slices, pool_id, slices[0].spec.pool.generation)
            if obsolete:
                continue
            if len(all_for_pool) != wanted:
                ready.append(Pool(pool_id, is_incomplete=True))
                continue
        pool = _build_pool(pool_id, slices, features, all_for_pool)
        (with_binding_conditions if _has_binding_conditions(pool) else ready).append(pool)
    ready.sort(key=lambda p: p.pool_id)
    with_binding_conditions.sort(key=lambda p: p.pool_id)
    return ready + with_binding_conditions


def _add_slice(pools: dict[PoolID, list[ResourceSlice]], slice_: ResourceSlice) -> None:
    pool_id = (slice_.spec.driver, slice_.spec.pool.name)
    known = pools.get(pool_id)
    generation = slice_.spec.pool.generation
    if known is None or generation > known[0].spec.pool.generation:
        pools[pool_id] = [slice_]
    elif generation == known[0].spec.pool.generation:
        known.append(slice_)


def _slices_in_pool(
    all_slices: Sequence[ResourceSlice], pool_id: PoolID, generation: int
) -> tuple[bool, list[ResourceSlice]]:
    """(a newer generation exists, every slice of the pool with ``generation``)."""
    found: list[ResourceSlice] = []
    for slice_ in all_slices:
        if (slice_.spec.driver, slice_.spec.pool.name) != pool_id:
            continue
        if slice_.spec.pool.generation == generation:
            found.append(slice_)
        elif slice_.spec.pool.generation > generation:
            return True, []
    return False, found


def _build_pool(
    pool_id: PoolID,
    slices: list[ResourceSlice],
    features: DRAFeatures,
    all_for_pool: list[ResourceSlice] | None,
) -> Pool:
    slices.sort(key=lambda s: s.metadata.name)
    if features.partitionable_devices:
        counter_slices = [s for s in slices if s.spec.shared_counters]
        device_slices = [s for s in slices if not s.spec.shared_counters]
    else:
        counter_slices, device_slices = [], slices
    problem = _duplicate_device_name(device_slices)
    if problem:
        return Pool(pool_id, is_invalid=True, invalid_reason=problem)
    if not features.partitionable_devices:
        return Pool(pool_id, slices_targeting_node=device_slices)
    counter_sets: dict[str, CounterSet] = {}
    for slice_ in counter_slices:
        for counter_set in slice_.spec.shared_counters:
            if counter_set.name in counter_sets:
                return Pool(
                    pool_id, is_invalid=True, invalid_reason=f"duplicate counter set name {counter_set.name}"
                )
            counter_sets[counter_set.name] = counter_set
    problem = _dangling_counters(counter_sets, slices)
    if problem:
        return Pool(pool_id, is_invalid=True, invalid_reason=problem)
    pool = Pool(pool_id, slices_targeting_node=device_slices, counter_sets=counter_sets)
    if all_for_pool is None or len(slices) == len(all_for_pool):
        return pool
    names = {s.metadata.name for s in slices}
    pool.slices_not_targeting_node = [s for s in all_for_pool if s.metadata.name not in names]
    problem = _dangling_counters(counter_sets, pool.slices_not_targeting_node)
    if problem:
        return Pool(pool_id, is_invalid=True, invalid_reason=problem)
    return pool


def _duplicate_device_name(slices: Sequence[ResourceSlice]) -> str:
    seen: set[str] = set()
    for slice_ in slices:
        for device in slice_.spec.devices:
            if device.name in seen:
                return f"duplicate device name {device.name}"
            seen.add(device.name)
    return ""


def _dangling_counters(counter_sets: dict[str, CounterSet], slices: Sequence[ResourceSlice]) -> str:
    for slice_ in slices:
        for device in slice_.spec.devices:
            for consumption in device.consumes_counters:
                counter_set = counter_sets.get(consumption.counter_set)
                if counter_set is None:
                    return f"counter set {consumption.counter_set} not found"
                for name in consumption.counters:
                    if name not in counter_set.counters:
                        return f"counter {name} not found in counter set {counter_set.name}"
    return ""


def _has_binding_conditions(pool: Pool) -> bool:
    return any(d.binding_conditions for s in pool.slices_targeting_node for d in s.spec.devices)


def counters_left(pool: Pool, allocated: AllocatedState) -> dict[str, dict[str, Quantity]]:
    """The pool's shared counters (counter set -> counter -> amount) minus what the devices of
    ``allocated`` consume (negative where they consume more than the set holds)."""
    left = {
        name: {counter: parse_quantity(c.value) for counter, c in counter_set.counters.items()}
        for name, counter_set in pool.counter_sets.items()
    }
    for slice_ in (*pool.slices_targeting_node, *pool.slices_not_targeting_node):
        for device in slice_.spec.devices:
            if not allocated.is_allocated(DeviceID(slice_.spec.driver, slice_.spec.pool.name, device.name)):
                continue
            for consumption in device.consumes_counters:
                counters = left.get(consumption.counter_set, {})
                for name, c in consumption.counters.items():
                    if name in counters:
                        counters[name] = counters[name] - parse_quantity(c.value)
    return left


class PoolCache:
    """:func:`gather_pools` per node, kept across pods (upstream gathers them for every node of
    every pod): an entry holds while the node object and every ResourceSlice are the objects it was
    gathered from (the snapshot replaces an object that changes), and the features are the same."""

    def __init__(self) -> None:
        self._slices: list[ResourceSlice] = []
        self._features: DRAFeatures | None = None
        self._by_node: dict[str, tuple[Node, list[Pool]]] = {}
        #: the slices of each node (``nodeName``, without shared counters), and those of every node
        self._on_node: dict[str, list[ResourceSlice]] = {}
        self._shared: list[ResourceSlice] = []

    def sync(self, all_slices: Sequence[ResourceSlice], features: DRAFeatures) -> None:
        """Forget every entry unless ``all_slices`` are the very objects of the last call."""
        same = (
            features == self._features
            and len(all_slices) == len(self._slices)
            and all(a is b for a, b in zip(all_slices, self._slices, strict=True))
        )
        if not same:
            self._slices = list(all_slices)
            self._features = features
            self._by_node.clear()
            self._on_node, self._shared = {}, []
            for slice_ in self._slices:
                if not slice_.spec.node_name or slice_.spec.shared_counters:
                    self._shared.append(slice_)
                else:
                    self._on_node.setdefault(slice_.spec.node_name, []).append(slice_)

    def pools(self, node: Node) -> list[Pool]:
        """The node's pools (as :func:`gather_pools` over its slices and the shared ones of the last
        :meth:`sync`)."""
        assert self._features is not None, "sync first"
        known = self._by_node.get(node.metadata.name)
        if known is not None and known[0] is node:
            return known[1]
        slices = [*self._on_node.get(node.metadata.name, ()), *self._shared]
        pools = gather_pools(slices, node, self._features, self._slices)
        self._by_node[node.metadata.name] = (node, pools)
        return pools
