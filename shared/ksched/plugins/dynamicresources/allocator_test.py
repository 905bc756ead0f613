"""The allocator against upstream's test table (``structured/internal/allocatortesting``, the cases
the incubating variant runs), plus cases for the features that table covers with more machinery."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from ksched.api.core import Node
from ksched.api.resource import DeviceClass, ResourceClaim, ResourceSlice
from ksched.plugins.dynamicresources.allocator import AllocationError, Allocator, NodeAllocationError
from ksched.plugins.dynamicresources.cel import CelCache
from ksched.plugins.dynamicresources.devices import AllocatedState, DeviceID
from ksched.plugins.dynamicresources.features import DRAFeatures
from ksched.plugins.dynamicresources.testing import (
    all_request,
    allocate,
    claim,
    consumes_counters,
    counter_set,
    device,
    device_class,
    first_available,
    node,
    one_device_slice,
    request,
    resource_slice,
    result_devices,
    selector,
    sub_request,
)

DRIVER_A, DRIVER_B = "driver-a", "driver-b"
CLASS_A, CLASS_B = "class-a", "class-b"
NODE_1, NODE_2 = "node-1", "node-2"
POOL_1, POOL_2 = "pool-1", "pool-2"
REQ_0, REQ_1 = "req-0", "req-1"

Expected = list[list[tuple[str, str, str, str, bool]]]


@dataclass
class Case:
    claims: list[ResourceClaim]
    slices: list[ResourceSlice] = field(default_factory=list)
    classes: list[DeviceClass] = field(default_factory=lambda: [device_class(CLASS_A, DRIVER_A)])
    node: Node = field(default_factory=lambda: node(NODE_1))
    allocated: list[DeviceID] = field(default_factory=list)
    features: DRAFeatures = field(default_factory=DRAFeatures)
    expect: Expected | None = None
    error: str = ""
    node_error: bool = False


def _memory(minimum: str) -> dict[str, Any]:
    return selector(f'device.capacity["{DRIVER_A}"].memory.compareTo(quantity("{minimum}")) >= 0')


def _memory_slice(*names: str) -> ResourceSlice:
    """One slice of devices named device-N with N GiB of memory, in the given order."""
    devices = [device(name, {"memory": f"{name.rsplit('-', 1)[1]}Gi"}) for name in names]
    return resource_slice("slice-1", NODE_1, POOL_1, DRIVER_A, *devices)


SMALL_LARGE = [
    request(REQ_0, CLASS_A, 1, _memory("1Gi")),
    request(REQ_1, CLASS_A, 1, _memory("2Gi")),
]

CASES: dict[str, Case] = {
    # --- ported from upstream's table -------------------------------------------------------------
    "simple": Case(
        [claim("claim-0", request(REQ_0, CLASS_A))],
        [one_device_slice("slice-1", NODE_1, POOL_1, DRIVER_A)],
        expect=[[(REQ_0, DRIVER_A, POOL_1, "device-1", False)]],
    ),
    "other-node": Case(
        [claim("claim-0", request(REQ_0, CLASS_A))],
        [
            one_device_slice("slice-1", NODE_1, POOL_1, DRIVER_B),
            one_device_slice("slice-2", NODE_2, POOL_2, DRIVER_A),
        ],
        node=node(NODE_2, "region-2"),
        expect=[[(REQ_0, DRIVER_A, POOL_2, "device-1", False)]],
    ),
    "small-and-large": Case(
        [claim("claim-0", *SMALL_LARGE)],
        [_memory_slice("device-1", "device-2")],
        expect=[[(REQ_0, DRIVER_A, POOL_1, "device-1", False), (REQ_1, DRIVER_A, POOL_1, "device-2", False)]],
    ),
    "small-and-large-backtrack-requests": Case(
        [claim("claim-0", *SMALL_LARGE)],
        [_memory_slice("device-2", "device-1")],
        expect=[[(REQ_0, DRIVER_A, POOL_1, "device-1", False), (REQ_1, DRIVER_A, POOL_1, "device-2", False)]],
    ),
    "small-and-large-backtrack-claims": Case(
        [claim("claim-0", SMALL_LARGE[0]), claim("claim-1", SMALL_LARGE[1])],
        [_memory_slice("device-2", "device-1")],
        expect=[
            [(REQ_0, DRIVER_A, POOL_1, "device-1", False)],
            [(REQ_1, DRIVER_A, POOL_1, "device-2", False)],
        ],
    ),
    "devices-split-across-different-slices": Case(
        [claim("claim-0", request(REQ_0, CLASS_A, 2))],
        [
            one_device_slice("slice-1", NODE_1, POOL_1, DRIVER_A),
            one_device_slice("slice-2", NODE_1, POOL_2, DRIVER_A),
        ],
        expect=[[(REQ_0, DRIVER_A, POOL_1, "device-1", False), (REQ_0, DRIVER_A, POOL_2, "device-1", False)]],
    ),
    "obsolete-slice": Case(
        [claim("claim-0", request(REQ_0, CLASS_A))],
        [
            resource_slice("slice-1-obsolete", NODE_1, POOL_1, DRIVER_A, device("device-1"), slice_count=2),
            resource_slice(
                "slice-1-obsolete", NODE_1, POOL_1, DRIVER_A, device("device-2"), slice_count=2, generation=2
            ),
        ],
        expect=None,
    ),
    "duplicate-slice": Case(
        [claim("claim-0", request(REQ_0, CLASS_A))],
        [
            resource_slice("slice-1", NODE_1, POOL_1, DRIVER_A, device("device-1"), slice_count=2),
            resource_slice("slice-1-2", NODE_1, POOL_1, DRIVER_A, device("device-1"), slice_count=2),
        ],
        error="invalid resource pools were encountered",
        node_error=True,
    ),
    "no-slices": Case([claim("claim-0", request(REQ_0, CLASS_A))], expect=None),
    "not-enough-suitable-devices": Case(
        [claim("claim-0", request(REQ_0, CLASS_A)), claim("claim-0", request(REQ_1, CLASS_A))],
        [one_device_slice("slice-1", NODE_1, POOL_1, DRIVER_A)],
        expect=None,
    ),
    "no-classes": Case(
        [claim("claim-0", request(REQ_0, CLASS_A))],
        [one_device_slice("slice-1", NODE_1, POOL_1, DRIVER_A)],
        classes=[],
        error="could not retrieve device class class-a",
    ),
    "unknown-class": Case(
        [claim("claim-0", request(REQ_0, "unknown-class"))],
        [one_device_slice("slice-1", NODE_1, POOL_1, DRIVER_A)],
        error="could not retrieve device class unknown-class",
    ),
    "empty-class": Case(
        [claim("claim-0", request(REQ_0, ""))],
        [one_device_slice("slice-1", NODE_1, POOL_1, DRIVER_A)],
        error="claim claim-0, request req-0: missing device class name (unsupported request type?)",
    ),
    "no-claims-to-allocate": Case([], [one_device_slice("slice-1", NODE_1, POOL_1, DRIVER_A)], expect=[]),
    "all-devices-single": Case(
        [claim("claim-0", all_request(REQ_0, CLASS_A))],
        [one_device_slice("slice-1", NODE_1, POOL_1, DRIVER_A)],
        expect=[[(REQ_0, DRIVER_A, POOL_1, "device-1", False)]],
    ),
    "all-devices-many": Case(
        [claim("claim-0", all_request(REQ_0, CLASS_A))],
        [
            one_device_slice("slice-1", NODE_1, POOL_1, DRIVER_A),
            one_device_slice("slice-1", NODE_1, POOL_2, DRIVER_A),
        ],
        expect=[[(REQ_0, DRIVER_A, POOL_1, "device-1", False), (REQ_0, DRIVER_A, POOL_2, "device-1", False)]],
    ),
    "all-devices-of-the-incomplete-pool": Case(
        [claim("claim-0", all_request(REQ_0, CLASS_A, count=1))],
        [resource_slice("slice-1", NODE_1, POOL_1, DRIVER_A, device("device-1"), slice_count=2)],
        error=(
            "claim claim-0, request req-0: asks for all devices, but resource pool driver-a/pool-1 is "
            "currently being updated"
        ),
    ),
    "all-devices-plus-another": Case(
        [claim("claim-0", all_request(REQ_0, CLASS_A)), claim("claim-1", request(REQ_0, CLASS_B))],
        [
            one_device_slice("slice-1", NODE_1, POOL_1, DRIVER_A),
            one_device_slice("slice-1", NODE_1, POOL_1, DRIVER_B),
        ],
        classes=[device_class(CLASS_A, DRIVER_A), device_class(CLASS_B, DRIVER_B)],
        expect=[
            [(REQ_0, DRIVER_A, POOL_1, "device-1", False)],
            [(REQ_0, DRIVER_B, POOL_1, "device-1", False)],
        ],
    ),
    "all-devices-many-plus-another-reversed": Case(
        [claim("claim-1", request(REQ_0, CLASS_B)), claim("claim-0", all_request(REQ_0, CLASS_A))],
        [
            resource_slice("slice-1", NODE_1, POOL_1, DRIVER_A, device("device-1"), device("device-2")),
            one_device_slice("slice-1", NODE_1, POOL_1, DRIVER_B),
        ],
        classes=[device_class(CLASS_A, DRIVER_A), device_class(CLASS_B, DRIVER_B)],
        expect=[
            [(REQ_0, DRIVER_B, POOL_1, "device-1", False)],
            [(REQ_0, DRIVER_A, POOL_1, "device-1", False), (REQ_0, DRIVER_A, POOL_1, "device-2", False)],
        ],
    ),
    "all-devices-no-solution": Case(
        [claim("claim-1", request(REQ_0, CLASS_A)), claim("claim-0", all_request(REQ_0, CLASS_A))],
        [one_device_slice("slice-1", NODE_1, POOL_1, DRIVER_A)],
        expect=None,
    ),
    "all-devices-no-solution-reversed": Case(
        [claim("claim-0", all_request(REQ_0, CLASS_A)), claim("claim-1", request(REQ_0, CLASS_A))],
        [one_device_slice("slice-1", NODE_1, POOL_1, DRIVER_A)],
        expect=None,
    ),
    "all-devices-slice-without-devices": Case(
        [claim("claim-0", all_request(REQ_0, CLASS_A))],
        [resource_slice("slice-1", NODE_1, POOL_1, DRIVER_A)],
        expect=None,
    ),
    "all-devices-some-allocated": Case(
        [claim("claim-0", all_request(REQ_0, CLASS_A))],
        [resource_slice("slice-1", NODE_1, POOL_1, DRIVER_A, device("device-1"), device("device-2"))],
        allocated=[DeviceID(DRIVER_A, POOL_1, "device-1")],
        expect=None,
    ),
    "all-devices-some-allocated-admin-access": Case(
        [claim("claim-0", all_request(REQ_0, CLASS_A, adminAccess=True))],
        [resource_slice("slice-1", NODE_1, POOL_1, DRIVER_A, device("device-1"), device("device-2"))],
        allocated=[DeviceID(DRIVER_A, POOL_1, "device-1")],
        expect=[[(REQ_0, DRIVER_A, POOL_1, "device-1", True), (REQ_0, DRIVER_A, POOL_1, "device-2", True)]],
    ),
    "all-devices-some-allocating-admin-access": Case(
        [
            claim(
                "claim-0",
                request(REQ_0, CLASS_A, adminAccess=True),
                all_request(REQ_1, CLASS_A, adminAccess=True),
            )
        ],
        [resource_slice("slice-1", NODE_1, POOL_1, DRIVER_A, device("device-1"), device("device-2"))],
        expect=None,
    ),
    "count-devices-some-allocated-admin-access": Case(
        [claim("claim-0", request(REQ_0, CLASS_A, 2, adminAccess=True))],
        [resource_slice("slice-1", NODE_1, POOL_1, DRIVER_A, device("device-1"), device("device-2"))],
        allocated=[DeviceID(DRIVER_A, POOL_1, "device-1")],
        expect=[[(REQ_0, DRIVER_A, POOL_1, "device-1", True), (REQ_0, DRIVER_A, POOL_1, "device-2", True)]],
    ),
    "separate-claims-share-device-admin-access": Case(
        [
            claim("claim-0", request(REQ_0, CLASS_A, adminAccess=True)),
            claim("claim-1", request(REQ_0, CLASS_A, adminAccess=True)),
        ],
        [resource_slice("slice-1", NODE_1, POOL_1, DRIVER_A, device("device-1"), device("device-2"))],
        expect=[[(REQ_0, DRIVER_A, POOL_1, "device-1", True)], [(REQ_0, DRIVER_A, POOL_1, "device-1", True)]],
    ),
    # --- prioritized lists (firstAvailable) -------------------------------------------------------
    "first-available-takes-the-first-that-fits": Case(
        [
            claim(
                "claim-0",
                first_available(REQ_0, sub_request("big", CLASS_A, 2), sub_request("small", CLASS_A, 1)),
            )
        ],
        [one_device_slice("slice-1", NODE_1, POOL_1, DRIVER_A)],
        expect=[[("req-0/small", DRIVER_A, POOL_1, "device-1", False)]],
    ),
    "first-available-prefers-the-first": Case(
        [
            claim(
                "claim-0",
                first_available(REQ_0, sub_request("big", CLASS_A, 2), sub_request("small", CLASS_A, 1)),
            )
        ],
        [resource_slice("slice-1", NODE_1, POOL_1, DRIVER_A, device("device-1"), device("device-2"))],
        expect=[
            [
                ("req-0/big", DRIVER_A, POOL_1, "device-1", False),
                ("req-0/big", DRIVER_A, POOL_1, "device-2", False),
            ]
        ],
    ),
    "first-available-disabled": Case(
        [claim("claim-0", first_available(REQ_0, sub_request("small", CLASS_A, 1)))],
        [one_device_slice("slice-1", NODE_1, POOL_1, DRIVER_A)],
        features=DRAFeatures(prioritized_list=False),
        error="claim claim-0, request req-0: has subrequests, but the DRAPrioritizedList feature is disabled",
    ),
    "too-many-devices": Case(
        [claim("claim-0", request(REQ_0, CLASS_A, 33))],
        [one_device_slice("slice-1", NODE_1, POOL_1, DRIVER_A)],
        error="claim claim-0: number of requested devices 33 exceeds the claim limit of 32",
    ),
    # --- constraints ------------------------------------------------------------------------------
    "match-attribute-backtracks": Case(
        [
            claim(
                "claim-0",
                request(REQ_0, CLASS_A),
                request(REQ_1, CLASS_A),
                constraints=[{"matchAttribute": f"{DRIVER_A}/numa"}],
            )
        ],
        [
            resource_slice(
                "slice-1",
                NODE_1,
                POOL_1,
                DRIVER_A,
                device("device-1", attributes={"numa": {"int": 1}}),
                device("device-2", attributes={"numa": {"int": 2}}),
                device("device-3", attributes={"numa": {"int": 2}}),
            )
        ],
        expect=[[(REQ_0, DRIVER_A, POOL_1, "device-2", False), (REQ_1, DRIVER_A, POOL_1, "device-3", False)]],
    ),
    "match-attribute-missing": Case(
        [claim("claim-0", request(REQ_0, CLASS_A), constraints=[{"matchAttribute": f"{DRIVER_A}/numa"}])],
        [one_device_slice("slice-1", NODE_1, POOL_1, DRIVER_A)],
        expect=None,
    ),
    "match-attribute-all-mode-is-an-error": Case(
        [claim("claim-0", all_request(REQ_0, CLASS_A), constraints=[{"matchAttribute": f"{DRIVER_A}/numa"}])],
        [
            resource_slice(
                "slice-1",
                NODE_1,
                POOL_1,
                DRIVER_A,
                device("device-1", attributes={"numa": {"int": 1}}),
                device("device-2", attributes={"numa": {"int": 2}}),
            )
        ],
        error=(
            "claim claim-0, request req-0: cannot add device driver-a/pool-1/device-2 because a claim "
            "constraint would not be satisfied"
        ),
    ),
    "distinct-attribute": Case(
        [
            claim(
                "claim-0",
                request(REQ_0, CLASS_A),
                request(REQ_1, CLASS_A),
                constraints=[{"distinctAttribute": f"{DRIVER_A}/numa"}],
            )
        ],
        [
            resource_slice(
                "slice-1",
                NODE_1,
                POOL_1,
                DRIVER_A,
                device("device-1", attributes={"numa": {"int": 1}}),
                device("device-2", attributes={"numa": {"int": 1}}),
                device("device-3", attributes={"numa": {"int": 2}}),
            )
        ],
        expect=[[(REQ_0, DRIVER_A, POOL_1, "device-1", False), (REQ_1, DRIVER_A, POOL_1, "device-3", False)]],
    ),
    # --- taints -----------------------------------------------------------------------------------
    "tainted-device-skipped": Case(
        [claim("claim-0", request(REQ_0, CLASS_A))],
        [
            resource_slice(
                "slice-1",
                NODE_1,
                POOL_1,
                DRIVER_A,
                device("device-1", taints=[{"key": "k", "value": "v", "effect": "NoSchedule"}]),
                device("device-2", taints=[{"key": "k", "value": "v", "effect": "None"}]),
            )
        ],
        expect=[[(REQ_0, DRIVER_A, POOL_1, "device-2", False)]],
    ),
    "tainted-device-tolerated": Case(
        [claim("claim-0", request(REQ_0, CLASS_A, tolerations=[{"key": "k", "operator": "Exists"}]))],
        [
            resource_slice(
                "slice-1",
                NODE_1,
                POOL_1,
                DRIVER_A,
                device("device-1", taints=[{"key": "k", "effect": "NoExecute"}]),
            )
        ],
        expect=[[(REQ_0, DRIVER_A, POOL_1, "device-1", False)]],
    ),
    "taints-ignored-without-the-feature": Case(
        [claim("claim-0", request(REQ_0, CLASS_A))],
        [
            resource_slice(
                "slice-1",
                NODE_1,
                POOL_1,
                DRIVER_A,
                device("device-1", taints=[{"key": "k", "effect": "NoSchedule"}]),
            )
        ],
        features=DRAFeatures(device_taints=False),
        expect=[[(REQ_0, DRIVER_A, POOL_1, "device-1", False)]],
    ),
    # --- partitionable devices --------------------------------------------------------------------
    "shared-counters-limit-partitions": Case(
        [claim("claim-0", request(REQ_0, CLASS_A, 2))],
        [
            resource_slice(
                "counters",
                NODE_1,
                POOL_1,
                DRIVER_A,
                slice_count=2,
                sharedCounters=[counter_set("gpu", "8Gi")],
            ),
            resource_slice(
                "devices",
                NODE_1,
                POOL_1,
                DRIVER_A,
                device("half-a", **consumes_counters("gpu", "4Gi")),
                device("whole", **consumes_counters("gpu", "8Gi")),
                device("half-b", **consumes_counters("gpu", "4Gi")),
                slice_count=2,
            ),
        ],
        expect=[[(REQ_0, DRIVER_A, POOL_1, "half-a", False), (REQ_0, DRIVER_A, POOL_1, "half-b", False)]],
    ),
    "shared-counters-used-by-allocated-device": Case(
        [claim("claim-0", request(REQ_0, CLASS_A))],
        [
            resource_slice(
                "counters",
                NODE_1,
                POOL_1,
                DRIVER_A,
                slice_count=2,
                sharedCounters=[counter_set("gpu", "8Gi")],
            ),
            resource_slice(
                "devices",
                NODE_1,
                POOL_1,
                DRIVER_A,
                device("whole", **consumes_counters("gpu", "8Gi")),
                device("half", **consumes_counters("gpu", "4Gi")),
                slice_count=2,
            ),
        ],
        allocated=[DeviceID(DRIVER_A, POOL_1, "whole")],
        expect=None,
    ),
    "dangling-counter-set-is-an-invalid-pool": Case(
        [claim("claim-0", request(REQ_0, CLASS_A))],
        [
            resource_slice(
                "devices",
                NODE_1,
                POOL_1,
                DRIVER_A,
                device("half", **consumes_counters("gpu", "4Gi")),
            )
        ],
        error="invalid resource pools were encountered",
        node_error=True,
    ),
    # --- node selection ---------------------------------------------------------------------------
    "network-attached-devices-by-node-selector": Case(
        [claim("claim-0", request(REQ_0, CLASS_A))],
        [
            resource_slice(
                "slice-1",
                None,
                POOL_1,
                DRIVER_A,
                device("device-1"),
                nodeSelector={
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": "region", "operator": "In", "values": ["region-1"]}]}
                    ]
                },
            )
        ],
        expect=[[(REQ_0, DRIVER_A, POOL_1, "device-1", False)]],
    ),
    "network-attached-devices-of-another-region": Case(
        [claim("claim-0", request(REQ_0, CLASS_A))],
        [
            resource_slice(
                "slice-1",
                None,
                POOL_1,
                DRIVER_A,
                device("device-1"),
                nodeSelector={
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": "region", "operator": "In", "values": ["region-2"]}]}
                    ]
                },
            )
        ],
        expect=None,
    ),
    # --- consumable capacity ----------------------------------------------------------------------
    "shared-device-capacity": Case(
        [
            claim("claim-0", request(REQ_0, CLASS_A, capacity={"requests": {"bandwidth": "6"}})),
            claim("claim-1", request(REQ_0, CLASS_A, capacity={"requests": {"bandwidth": "4"}})),
        ],
        [
            resource_slice(
                "slice-1",
                NODE_1,
                POOL_1,
                DRIVER_A,
                device("nic-1", {"bandwidth": "10"}, allowMultipleAllocations=True),
            )
        ],
        expect=[[(REQ_0, DRIVER_A, POOL_1, "nic-1", False)], [(REQ_0, DRIVER_A, POOL_1, "nic-1", False)]],
    ),
    # --- consumable capacity off: upstream's incubating allocator refuses capacity requests; with
    # DeviceBindingAndStatus off too it picks its stable one, which ignores them and knows no
    # distinctAttribute
    "capacity-requests-refused-without-consumable-capacity": Case(
        [claim("claim-0", request(REQ_0, CLASS_A, capacity={"requests": {"bandwidth": "6"}}))],
        [resource_slice("slice-1", NODE_1, POOL_1, DRIVER_A, device("nic-1", {"bandwidth": "10"}))],
        features=DRAFeatures(consumable_capacity=False),
        error=(
            "claim claim-0, request req-0: has capacity requests, but the DRAConsumableCapacity feature is "
            "disabled"
        ),
    ),
    "capacity-requests-ignored-by-the-stable-allocator": Case(
        [
            claim("claim-0", request(REQ_0, CLASS_A, capacity={"requests": {"bandwidth": "6"}})),
            claim("claim-1", request(REQ_0, CLASS_A, capacity={"requests": {"bandwidth": "4"}})),
        ],
        [
            resource_slice(
                "slice-1",
                NODE_1,
                POOL_1,
                DRIVER_A,
                device("nic-1", {"bandwidth": "10"}, allowMultipleAllocations=True),
                device("nic-2", {"bandwidth": "10"}, allowMultipleAllocations=True),
            )
        ],
        features=DRAFeatures(consumable_capacity=False, device_binding_conditions=False),
        expect=[[(REQ_0, DRIVER_A, POOL_1, "nic-1", False)], [(REQ_0, DRIVER_A, POOL_1, "nic-2", False)]],
    ),
    "distinct-attribute-unknown-to-the-stable-allocator": Case(
        [
            claim(
                "claim-0",
                request(REQ_0, CLASS_A),
                constraints=[{"distinctAttribute": f"{DRIVER_A}/numa"}],
            )
        ],
        [one_device_slice("slice-1", NODE_1, POOL_1, DRIVER_A)],
        features=DRAFeatures(consumable_capacity=False, resource_claim_device_status=False),
        error="claim claim-0, constraint #0: empty constraint (unsupported constraint type?)",
    ),
    "shared-device-capacity-exhausted": Case(
        [
            claim("claim-0", request(REQ_0, CLASS_A, capacity={"requests": {"bandwidth": "6"}})),
            claim("claim-1", request(REQ_0, CLASS_A, capacity={"requests": {"bandwidth": "5"}})),
        ],
        [
            resource_slice(
                "slice-1",
                NODE_1,
                POOL_1,
                DRIVER_A,
                device("nic-1", {"bandwidth": "10"}, allowMultipleAllocations=True),
            )
        ],
        expect=None,
    ),
    # --- binding conditions -----------------------------------------------------------------------
    "pools-with-binding-conditions-come-last": Case(
        [claim("claim-0", request(REQ_0, CLASS_A))],
        [
            resource_slice(
                "slice-1", NODE_1, "aaa", DRIVER_A, device("device-1", bindingConditions=["attached"])
            ),
            one_device_slice("slice-2", NODE_1, "zzz", DRIVER_A),
        ],
        expect=[[(REQ_0, DRIVER_A, "zzz", "device-1", False)]],
    ),
    "binding-conditions-need-the-features": Case(
        [claim("claim-0", request(REQ_0, CLASS_A))],
        [
            resource_slice(
                "slice-1", NODE_1, POOL_1, DRIVER_A, device("device-1", bindingConditions=["attached"])
            )
        ],
        features=DRAFeatures(device_binding_conditions=False),
        expect=None,
    ),
}


def run(case: Case) -> list[Any] | None:
    allocator = Allocator(
        case.features,
        AllocatedState(allocated_devices=set(case.allocated)),
        {c.metadata.name: c for c in case.classes},
        case.slices,
        CelCache(),
    )
    return allocate(allocator, case.node, case.claims)


@pytest.mark.parametrize("name", list(CASES))
def test_allocator(name: str) -> None:
    case = CASES[name]
    if case.error:
        expected = NodeAllocationError if case.node_error else AllocationError
        with pytest.raises(expected) as info:
            run(case)
        assert case.error in str(info.value)
        assert isinstance(info.value, NodeAllocationError) == case.node_error
        return
    results = run(case)
    if case.expect is None:
        assert results is None
        return
    assert results is not None
    assert [result_devices(r) for r in results] == case.expect


def test_local_devices_restrict_the_allocation_to_the_node() -> None:
    results = run(CASES["simple"])
    assert results is not None and results[0].node_selector is not None
    field_req = results[0].node_selector.node_selector_terms[0].match_fields[0]
    assert (field_req.key, field_req.operator, field_req.values) == ("metadata.name", "In", [NODE_1])


def test_network_attached_devices_carry_the_slice_node_selector() -> None:
    results = run(CASES["network-attached-devices-by-node-selector"])
    assert results is not None and results[0].node_selector is not None
    expr = results[0].node_selector.node_selector_terms[0].match_expressions[0]
    assert (expr.key, expr.values) == ("region", ["region-1"])


def test_configs_of_class_and_claim_are_copied_into_the_allocation() -> None:
    opaque = {"driver": DRIVER_A, "parameters": {"a": "aValue"}}
    case = Case(
        [
            claim(
                "claim-0",
                request(REQ_0, CLASS_A),
                config=[{"opaque": {"driver": DRIVER_A, "parameters": {"b": 1}}}],
            )
        ],
        [one_device_slice("slice-1", NODE_1, POOL_1, DRIVER_A)],
        classes=[device_class(CLASS_A, DRIVER_A, config=[opaque])],
    )
    results = run(case)
    assert results is not None
    configs = results[0].devices.config
    assert [(c.source, c.requests) for c in configs] == [("FromClass", [REQ_0]), ("FromClaim", [])]
    assert configs[0].opaque is not None and configs[0].opaque.parameters == {"a": "aValue"}


def test_shared_devices_get_a_share_id_and_consumed_capacity() -> None:
    results = run(CASES["shared-device-capacity"])
    assert results is not None
    first, second = (r.devices.results[0] for r in results)
    assert first.share_id and second.share_id and first.share_id != second.share_id
    assert (first.consumed_capacity, second.consumed_capacity) == ({"bandwidth": "6"}, {"bandwidth": "4"})


def test_a_cel_runtime_error_fails_the_allocation() -> None:
    broken = claim(
        "claim-0", request(REQ_0, CLASS_A, 1, selector(f'device.attributes["{DRIVER_A}"].missing'))
    )
    with pytest.raises(
        AllocationError, match="claim claim-0: selector #0: CEL runtime error: no such key: missing"
    ):
        run(Case([broken], [one_device_slice("slice-1", NODE_1, POOL_1, DRIVER_A)]))


def test_search_steps_are_counted() -> None:
    case = CASES["small-and-large-backtrack-requests"]
    allocator = Allocator(
        DRAFeatures(), AllocatedState(), {CLASS_A: case.classes[0]}, case.slices, CelCache()
    )
    assert allocate(allocator, case.node, case.claims) is not None
    assert allocator.steps > 3
