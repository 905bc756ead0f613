"""The binder's own API reads (VolumeBinding's and DynamicResources' PreBind) take the ``null`` the real
API server writes for an empty list as absent, as the informer does: a CSINode driver without
``topologyKeys`` (every CSI driver that reports none) failed VolumeBinding's PreBind on the real
Kubernetes 1.36.2 with ``cannot decode the API answer: Expected `array`, got `null```, and the pod went
to another node (found by ``ksched differential --pipeline``, case volumes-s1001-50)."""

from __future__ import annotations

import json
from typing import Any

from ksched.client.rest import Client
from ksched.plugins.dynamicresources.binding import ClaimApi
from ksched.plugins.volumebinding.prebind import VolumeApi


async def test_a_csinode_driver_without_topology_keys_is_read(kube136_client: Client, kube136: Any) -> None:
    name = "prebind-null-csinode"
    body = {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "CSINode",
        "metadata": {"name": name},
        "spec": {"drivers": [{"name": "csi.example.com", "nodeID": name}]},
    }
    status, answer = await kube136_client.request("POST", "/apis/storage.k8s.io/v1/csinodes", body)
    assert status == 201, answer
    try:
        status, raw = await kube136_client.request("GET", f"/apis/storage.k8s.io/v1/csinodes/{name}")
        assert json.loads(raw)["spec"]["drivers"][0]["topologyKeys"] is None  # the strict decoder refused it
        got = await VolumeApi(kube136_client).get_csi_node(name)
        assert got is not None and got.spec.drivers[0].topology_keys == []
    finally:
        await kube136_client.request("DELETE", f"/apis/storage.k8s.io/v1/csinodes/{name}")


async def test_a_claim_without_requests_is_read(kube136_client: Client, kube136: Any) -> None:
    ns = "default"
    name = "prebind-null-claim"
    body = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"devices": {"requests": []}},
    }
    path = f"/apis/resource.k8s.io/v1/namespaces/{ns}/resourceclaims"
    status, answer = await kube136_client.request("POST", path, body)
    assert status == 201, answer
    try:
        status, raw = await kube136_client.request("GET", f"{path}/{name}")
        assert json.loads(raw)["spec"]["devices"]["requests"] is None
        claims = ClaimApi(kube136_client)
        assert (await claims.get(ns, name)).metadata.name == name
        assert name in [c.metadata.name for c in await claims.list(ns)]
    finally:
        await kube136_client.request("DELETE", f"{path}/{name}")
