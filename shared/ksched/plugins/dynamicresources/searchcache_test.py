"""Searches kept across pods: given back while the node, its pools, the devices taken in them, the
claims' specs and the classes are the same; searched again when any of them changes."""

from __future__ import annotations

from collections.abc import Sequence

import msgspec
import pytest

from ksched.api.resource import ResourceClaim
from ksched.plugins.dynamicresources.allocator import Allocator, Choice
from ksched.plugins.dynamicresources.cel import CelCache
from ksched.plugins.dynamicresources.features import DRAFeatures
from ksched.plugins.dynamicresources.pools import PoolCache
from ksched.plugins.dynamicresources.searchcache import SearchCache
from ksched.plugins.dynamicresources.testing import (
    allocation,
    claim,
    consumes_counters,
    counter_set,
    device,
    device_class,
    node,
    request,
    resource_slice,
    selector,
)
from ksched.plugins.dynamicresources.tracker import ClaimTracker

DRIVER, CLASS = "driver-a", "class-a"


class World:
    """Two nodes with two devices each, the claims in view, one plugin's caches and tracker."""

    def __init__(self) -> None:
        self.nodes = {name: node(name) for name in ("node-1", "node-2")}
        self.slices = [
            resource_slice(f"{n}-slice", n, n, DRIVER, device("dev-0"), device("dev-1")) for n in self.nodes
        ]
        self.classes = {CLASS: device_class(CLASS, DRIVER)}
        self.claims: dict[str, ResourceClaim] = {}
        self.tracker = ClaimTracker(lambda: self.claims)
        self.cel, self.pools, self.searches = CelCache(), PoolCache(), SearchCache[Choice]()

    def allocator(self) -> Allocator:
        """What PreFilter builds for a pod."""
        return Allocator(
            DRAFeatures(),
            self.tracker.allocated_state(),
            self.classes,
            self.slices,
            self.cel,
            self.pools,
            self.searches,
        )

    def devices(self, allocator: Allocator, node_name: str, claims: Sequence[ResourceClaim]) -> list[str]:
        choice = allocator.search(self.nodes[node_name], claims)
        assert choice is not None
        return [r.device for result in choice.results(claims) for r in result.devices.results]

    def allocated(self, name: str, node_name: str, device_name: str) -> ResourceClaim:
        status = {"allocation": allocation(node_name, ("req-0", DRIVER, node_name, device_name))}
        return claim(name, request("req-0", CLASS), status=status)


def pod_claim(k: int, *selectors: dict[str, object]) -> ResourceClaim:
    """Pod ``k``'s claim from the template: one device of the class."""
    return claim(f"claim-{k}", request("req-0", CLASS, 1, *selectors))


def test_a_kept_search_is_given_back_to_the_next_pod() -> None:
    world = World()
    first = world.allocator()
    assert world.devices(first, "node-1", [pod_claim(1)]) == ["dev-0"]
    assert first.steps > 0
    second = world.allocator()
    assert world.devices(second, "node-1", [pod_claim(2)]) == ["dev-0"]
    assert second.steps == 0  # nothing searched


def test_a_node_that_does_not_fit_is_kept_too() -> None:
    world = World()
    taken = [world.allocated(f"old-{i}", "node-1", f"dev-{i}") for i in range(2)]
    world.claims = {c.key: c for c in taken}
    assert world.allocator().search(world.nodes["node-1"], [pod_claim(1)]) is None
    again = world.allocator()
    assert again.search(world.nodes["node-1"], [pod_claim(2)]) is None and again.steps == 0


def test_a_device_allocated_on_the_node_is_seen_by_the_next_search() -> None:
    world = World()
    for node_name in world.nodes:
        world.devices(world.allocator(), node_name, [pod_claim(1)])
    got = world.allocated("claim-1", "node-1", "dev-0")
    world.claims[got.key] = got  # PreBind's write came back
    allocator = world.allocator()
    assert world.devices(allocator, "node-1", [pod_claim(2)]) == ["dev-1"]
    steps = allocator.steps
    assert world.devices(allocator, "node-2", [pod_claim(2)]) == ["dev-0"]
    assert allocator.steps == steps  # node-2's search kept
    del world.claims[got.key]  # deallocated and deleted
    assert world.devices(world.allocator(), "node-1", [pod_claim(3)]) == ["dev-0"]


def test_an_allocation_in_flight_and_its_end_are_seen() -> None:
    world = World()
    mine = pod_claim(1)
    world.claims[mine.key] = mine  # the claim in view, not allocated yet
    world.devices(world.allocator(), "node-1", [mine])
    in_flight = world.allocated("claim-1", "node-1", "dev-0")
    world.tracker.signal_pending_allocation(in_flight.metadata.uid, in_flight)  # Reserve
    assert world.devices(world.allocator(), "node-1", [pod_claim(2)]) == ["dev-1"]
    world.tracker.maybe_remove_pending_allocation(in_flight.metadata.uid)  # Unreserve
    assert world.devices(world.allocator(), "node-1", [pod_claim(3)]) == ["dev-0"]


@pytest.mark.parametrize("changed", ["node", "slice", "class"])
def test_another_node_object_slice_or_class_is_searched_again(changed: str) -> None:
    world = World()
    world.devices(world.allocator(), "node-1", [pod_claim(1)])
    if changed == "node":
        world.nodes["node-1"] = node("node-1", region="region-2")
    elif changed == "slice":
        world.slices[0] = msgspec.structs.replace(world.slices[0])
    else:
        world.classes[CLASS] = device_class(CLASS, DRIVER)
    allocator = world.allocator()
    assert world.devices(allocator, "node-1", [pod_claim(2)]) == ["dev-0"]
    assert allocator.steps > 0


def test_claims_asking_for_other_devices_are_searched_apart() -> None:
    world = World()
    world.devices(world.allocator(), "node-1", [pod_claim(1)])
    picky = pod_claim(2, selector('device.driver == "driver-a"'))
    allocator = world.allocator()
    assert world.devices(allocator, "node-1", [picky]) == ["dev-0"]
    assert allocator.steps > 0
    two = world.allocator()
    assert world.devices(two, "node-1", [pod_claim(3), pod_claim(4)]) == ["dev-0", "dev-1"]
    assert two.steps > 0


def test_a_search_that_drew_share_ids_is_not_kept() -> None:
    world = World()
    world.slices = [
        resource_slice(
            "shared", "node-1", "node-1", DRIVER, device("nic", {"bw": "10"}, allowMultipleAllocations=True)
        )
    ]
    claims = [pod_claim(1)]
    first = world.allocator().search(world.nodes["node-1"], claims)
    second = world.allocator().search(world.nodes["node-1"], claims)
    assert first is not None and second is not None
    ids = [c.results(claims)[0].devices.results[0].share_id for c in (first, second)]
    assert ids[0] and ids[1] and ids[0] != ids[1]


def test_without_versions_of_the_taken_devices_nothing_is_kept() -> None:
    world = World()
    state = world.tracker.allocated_state()
    state.versions = None  # a state not gathered by the tracker
    allocators = [
        Allocator(DRAFeatures(), state, world.classes, world.slices, world.cel, world.pools, world.searches)
        for _ in range(2)
    ]
    for allocator in allocators:
        assert world.devices(allocator, "node-1", [pod_claim(1)]) == ["dev-0"]
        assert allocator.steps > 0


def test_a_search_that_read_pool_counters_is_not_kept() -> None:
    world = World()
    partitions = [device(f"part-{i}", **consumes_counters("memory", "4Gi")) for i in range(2)]
    world.slices = [
        resource_slice(
            "counters",
            "node-1",
            "node-1",
            DRIVER,
            slice_count=2,
            sharedCounters=[counter_set("memory", "8Gi")],
        ),
        resource_slice("partitions", "node-1", "node-1", DRIVER, *partitions, slice_count=2),
    ]
    world.devices(world.allocator(), "node-1", [pod_claim(1)])
    again = world.allocator()
    assert world.devices(again, "node-1", [pod_claim(2)]) == ["part-0"]
    assert again.steps > 0
