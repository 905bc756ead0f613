"""Scoring extended resources backed by DRA (DRAExtendedResource; upstream ``resource_allocation.go``'s
``getDRAPreScoredParams`` and ``calculateDRAResourceTotals``).

When a scoring strategy names an extended resource a DeviceClass backs, a node that does not offer
it as allocatable counts its devices instead: allocatable is the number of devices of the node's
ResourceSlices that the class's selectors match, allocated how many of them are in use (allocated,
shared or in flight). Upstream's simplifications are kept: every slice of the node counts (no pool
generation check), taints are ignored, and a selector or node selector that fails makes the
resource count as not offered by the node.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from ksched.api.core import Node, NodeSelector
from ksched.api.resource import Device, DeviceClass, ResourceClaim, ResourceSlice
from ksched.apimachinery.nodeselector import NodeSelector as NodeSelectorMatcher
from ksched.plugins.dynamicresources.cel import CelCache, CelRuntimeError
from ksched.plugins.dynamicresources.devices import AllocatedState, DeviceID
from ksched.plugins.dynamicresources.extended import DeviceClassResolver, is_dra_extended_resource_name
from ksched.plugins.dynamicresources.tracker import shared_tracker


class _NodeSelectionError(Exception):
    pass


def _selector_matches(node: Node, selector: NodeSelector) -> bool:
    matcher = NodeSelectorMatcher(selector)
    if matcher.errors:
        raise _NodeSelectionError("; ".join(matcher.errors))
    return matcher.matches_node(node)


def _node_devices(slice_: ResourceSlice, node: Node) -> Iterable[Device]:
    """The devices of ``slice_`` available on ``node`` (upstream's node checks of the scorer)."""
    spec, name = slice_.spec, node.metadata.name
    if spec.per_device_node_selection:
        for device in spec.devices:
            if (
                device.all_nodes
                or (device.node_name and device.node_name == name)
                or (
                    device.node_selector is not None
                    and not device.node_name
                    and _selector_matches(node, device.node_selector)
                )
            ):
                yield device
        return
    node_name = spec.node_name or ""
    if not spec.all_nodes and node_name != name and spec.node_selector is not None:
        if node_name or not _selector_matches(node, spec.node_selector):
            return
    elif not spec.all_nodes and node_name and node_name != name:
        return
    yield from spec.devices


@dataclass
class DRAScoring:
    """What scoring needs of DRA for one pod's cycle (upstream ``draPreScoreState``)."""

    resolver: DeviceClassResolver
    allocated: AllocatedState
    slices: Sequence[ResourceSlice]
    cel: CelCache
    _by_node: dict[str, list[ResourceSlice]] = field(default_factory=dict)
    _elsewhere: list[ResourceSlice] = field(default_factory=list)

    def __post_init__(self) -> None:
        for slice_ in self.slices:
            if slice_.spec.node_name and not slice_.spec.per_device_node_selection:
                self._by_node.setdefault(slice_.spec.node_name, []).append(slice_)
            else:
                self._elsewhere.append(slice_)

    def amounts(self, node: Node | None, resource: str) -> tuple[int, int]:
        """(devices, devices in use) of the class backing ``resource`` on ``node``; (0, 0) when
        none backs it or a selector fails."""
        device_class = self.resolver.get(resource)
        if device_class is None or node is None:
            return 0, 0
        total = used = 0
        try:
            for slice_ in (*self._by_node.get(node.metadata.name, ()), *self._elsewhere):
                driver, pool = slice_.spec.driver, slice_.spec.pool.name
                for device in _node_devices(slice_, node):
                    if not self._matches(device_class, device, driver):
                        continue
                    total += 1
                    if self.allocated.is_allocated(DeviceID(driver, pool, device.name)):
                        used += 1
        except (CelRuntimeError, _NodeSelectionError):
            return 0, 0
        return total, used

    def _matches(self, device_class: DeviceClass, device: Device, driver: str) -> bool:
        for selector in device_class.spec.selectors:
            if selector.cel is None:
                continue
            compiled = self.cel.get_or_compile(selector.cel.expression)
            if compiled.error is not None:
                raise CelRuntimeError(compiled.error)
            if not compiled.matches(device, driver):
                return False
        return True


def prepare(
    resources: Sequence[str],
    resolver: DeviceClassResolver,
    snapshot: object,
    claims: Callable[[], Mapping[str, ResourceClaim]],
    slices: Iterable[ResourceSlice],
    cel: CelCache,
) -> DRAScoring | None:
    """Upstream ``getDRAPreScoredParams``: None unless a scored resource is backed by a DeviceClass;
    the devices in use are the process's shared DRA tracker's (allocated and in flight)."""
    if not any(is_dra_extended_resource_name(r) and resolver.get(r) is not None for r in resources):
        return None
    tracker = shared_tracker(snapshot, claims, True)
    return DRAScoring(resolver, tracker.allocated_state(), list(slices), cel)
