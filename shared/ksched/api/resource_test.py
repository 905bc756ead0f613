"""resource.k8s.io/v1 objects decode from the API server's JSON (shapes of the 1.36.2 captures) by kind."""

from __future__ import annotations

import msgspec

from ksched.api.kinds import decode_object
from ksched.api.resource import DeviceClass, ResourceClaim, ResourceClaimTemplate, ResourceSlice

SLICE = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "ResourceSlice",
    "metadata": {"name": "gpu-node-1-gpu", "resourceVersion": "7"},
    "spec": {
        "driver": "gpu.example.com",
        "nodeName": "gpu-node-1",
        "pool": {"name": "gpu-node-1", "generation": 1, "resourceSliceCount": 1},
        "devices": [
            {
                "name": "gpu-0",
                "attributes": {
                    "model": {"string": "a100"},
                    "index": {"int": 0},
                    "driverVersion": {"version": "1.2.3"},
                    "ok": {"bool": True},
                },
                "capacity": {"memory": {"value": "40Gi"}},
                "allowMultipleAllocations": True,
                "taints": [{"key": "broken", "effect": "NoSchedule"}],
            }
        ],
    },
}

CLAIM = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "ResourceClaim",
    "metadata": {"name": "prio", "namespace": "dra", "uid": "u1"},
    "spec": {
        "devices": {
            "requests": [
                {
                    "name": "gpu",
                    "firstAvailable": [
                        {"name": "big", "deviceClassName": "gpu", "allocationMode": "ExactCount", "count": 4},
                        {"name": "small", "deviceClassName": "gpu", "allocationMode": "All"},
                    ],
                }
            ],
            "constraints": [{"requests": ["gpu"], "matchAttribute": "gpu.example.com/model"}],
        }
    },
    "status": {
        "allocation": {
            "devices": {
                "results": [
                    {
                        "request": "gpu/small",
                        "driver": "gpu.example.com",
                        "pool": "gpu-node-1",
                        "device": "gpu-1",
                        "shareID": "s1",
                        "consumedCapacity": {"memory": "1Gi"},
                    }
                ]
            },
            "nodeSelector": {
                "nodeSelectorTerms": [
                    {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["gpu-node-1"]}]}
                ]
            },
        },
        "reservedFor": [{"resource": "pods", "name": "other", "uid": "p1"}],
    },
}


def test_a_resource_slice_decodes_with_typed_attributes() -> None:
    obj = decode_object(SLICE)
    assert isinstance(obj, ResourceSlice)
    device = obj.spec.devices[0]
    assert device.attributes["model"].string_value == "a100"
    assert device.attributes["index"].int_value == 0
    assert device.attributes["driverVersion"].version_value == "1.2.3"
    assert device.attributes["ok"].bool_value is True
    assert device.capacity["memory"].value == "40Gi"
    assert device.allow_multiple_allocations is True
    assert device.taints[0].effect == "NoSchedule"
    assert obj.spec.node_name == "gpu-node-1" and obj.spec.pool.resource_slice_count == 1


def test_a_claim_decodes_with_subrequests_constraints_and_allocation() -> None:
    obj = decode_object(CLAIM)
    assert isinstance(obj, ResourceClaim) and obj.key == "dra/prio"
    request = obj.spec.devices.requests[0]
    assert request.exactly is None
    assert [s.name for s in request.first_available] == ["big", "small"]
    assert obj.spec.devices.constraints[0].match_attribute == "gpu.example.com/model"
    allocation = obj.status.allocation
    assert allocation is not None and allocation.node_selector is not None
    result = allocation.devices.results[0]
    assert (result.request, result.device, result.share_id) == ("gpu/small", "gpu-1", "s1")
    assert obj.status.reserved_for[0].uid == "p1"


def test_the_wire_names_survive_a_round_trip() -> None:
    raw = msgspec.json.decode(msgspec.json.encode(decode_object(CLAIM)))
    result = raw["status"]["allocation"]["devices"]["results"][0]
    assert result["shareID"] == "s1" and result["consumedCapacity"] == {"memory": "1Gi"}
    raw_slice = msgspec.json.decode(msgspec.json.encode(decode_object(SLICE)))
    assert raw_slice["spec"]["devices"][0]["attributes"]["index"] == {"int": 0}


ALL_GPUS = {"deviceClassName": "gpu", "allocationMode": "All"}


def test_device_class_and_template_decode() -> None:
    cls = decode_object(
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "DeviceClass",
            "metadata": {"name": "gpu"},
            "spec": {"selectors": [{"cel": {"expression": 'device.driver == "gpu.example.com"'}}]},
        }
    )
    assert isinstance(cls, DeviceClass)
    assert cls.spec.selectors[0].cel is not None
    assert cls.spec.selectors[0].cel.expression == 'device.driver == "gpu.example.com"'
    template = decode_object(
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaimTemplate",
            "metadata": {"name": "gpu-template", "namespace": "default"},
            "spec": {
                "spec": {
                    "devices": {
                        "requests": [
                            {"name": "gpu", "exactly": {"deviceClassName": "gpu", "allocationMode": "All"}}
                        ]
                    }
                }
            },
        }
    )
    assert isinstance(template, ResourceClaimTemplate)
    exactly = template.spec.spec.devices.requests[0].exactly
    assert exactly is not None and exactly.allocation_mode == "All"


def test_nulls_of_empty_lists_decode_as_absent() -> None:
    """What the real API server writes for lists without ``omitempty`` that are empty."""
    from ksched.api.core import Node
    from ksched.api.kinds import decode_lenient
    from ksched.api.storage import CSINode

    csi = decode_lenient(b'{"metadata":{"name":"n"},"spec":{"drivers":null}}', CSINode)
    assert csi.spec.drivers == []
    csi = decode_lenient(b'{"spec":{"drivers":[{"name":"d","nodeID":"n","topologyKeys":null}]}}', CSINode)
    assert csi.spec.drivers[0].topology_keys == []
    node = decode_lenient(b'{"status":{"images":[{"names":null,"sizeBytes":5}]}}', Node)
    assert node.status.images[0].names == [] and node.status.images[0].size_bytes == 5
    claim = decode_lenient(b'{"metadata":{"name":"c"},"spec":{"devices":{"requests":null}}}', ResourceClaim)
    assert claim.spec.devices.requests == []
