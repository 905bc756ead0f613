"""The resourceclaim controller: claims from templates for pods, released and deleted with them."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator
from typing import Any

import pytest
from ksched_kubesim import KubeSim, KubeSimConfig, LifecycleSettings
from ksched_kubesim.claim_controller import generate_name
from ksched_kubesim.errors import ApiError

from tests.polling import until

RESOURCE = "resource.k8s.io/v1"
FINALIZER = "resource.kubernetes.io/delete-protection"


@pytest.fixture
async def sim() -> AsyncIterator[KubeSim]:
    config = KubeSimConfig(nodes=1, lifecycle=LifecycleSettings(pod_start_delay=0.05, time_scale=0.01))
    async with KubeSim(config) as running:
        running.create(
            {
                "apiVersion": RESOURCE,
                "kind": "ResourceClaimTemplate",
                "metadata": {"name": "gpu", "namespace": "default"},
                "spec": {
                    "metadata": {"labels": {"team": "ml"}, "annotations": {"note": "from template"}},
                    "spec": {
                        "devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu"}}]}
                    },
                },
            }
        )
        yield running


def _pod(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "resourceClaims": [{"name": "accel", "resourceClaimTemplateName": "gpu"}],
            "containers": [{"name": "c", "image": "x:1", "resources": {"claims": [{"name": "accel"}]}}],
            **spec,
        },
    }


def _claims(sim: KubeSim) -> list[dict[str, Any]]:
    return sim.list_objects("ResourceClaim", RESOURCE, "default")


def _generated(sim: KubeSim, pod: str) -> str | None:
    obj = sim.get("Pod", pod, "default")
    statuses = (obj or {}).get("status", {}).get("resourceClaimStatuses") or []
    return statuses[0]["resourceClaimName"] if statuses else None


def _allocate(sim: KubeSim, claim_name: str, pod: str) -> None:
    """What kube-scheduler's PreBind writes: the finalizer, then allocation and reservedFor."""
    pod_obj = sim.get("Pod", pod, "default")
    assert pod_obj is not None
    claim = sim.get("ResourceClaim", claim_name, "default", api_version=RESOURCE)
    assert claim is not None
    claim["metadata"]["finalizers"] = [FINALIZER]
    sim.update(claim)
    claim = sim.get("ResourceClaim", claim_name, "default", api_version=RESOURCE)
    assert claim is not None
    claim["status"] = {
        "allocation": {
            "devices": {
                "results": [{"request": "gpu", "driver": "gpu.example.com", "pool": "p", "device": "d"}]
            }
        },
        "reservedFor": [{"resource": "pods", "name": pod, "uid": pod_obj["metadata"]["uid"]}],
    }
    sim.update(claim, subresource="status")


def test_generated_names_are_cut_proportionally_as_upstream() -> None:
    assert generate_name("web", "gpu") == "web-gpu-"
    long_pod, long_claim = "p" * 60, "c" * 20
    name = generate_name(long_pod, long_claim)
    assert name == "p" * 41 + "-" + "c" * 13  # upstream drops the trailing hyphen when it cuts
    assert len(name + "abcde") <= 63


async def test_a_claim_is_created_from_the_template_owned_by_the_pod(sim: KubeSim) -> None:
    created = sim.create(_pod("trainer"))
    name = await until(lambda: _generated(sim, "trainer"))
    assert re.fullmatch(r"trainer-accel-[a-z0-9]{5}", name)
    [claim] = _claims(sim)
    meta = claim["metadata"]
    assert meta["name"] == name
    assert meta["ownerReferences"] == [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "name": "trainer",
            "uid": created["metadata"]["uid"],
            "controller": True,
        }
    ]
    assert meta["annotations"] == {"note": "from template", "resource.kubernetes.io/pod-claim-name": "accel"}
    assert meta["labels"] == {"team": "ml"}
    assert claim["spec"]["devices"]["requests"][0]["exactly"] == {
        "deviceClassName": "gpu",
        "allocationMode": "ExactCount",
        "count": 1,
    }
    pod = sim.get("Pod", "trainer", "default")
    assert pod is not None
    assert pod["status"]["resourceClaimStatuses"] == [{"name": "accel", "resourceClaimName": name}]
    managers = {m["manager"] for m in pod["metadata"]["managedFields"] if m.get("subresource") == "status"}
    assert "ResourceClaimController" in managers


async def test_a_pod_created_before_its_template_gets_its_claim_when_the_template_comes(sim: KubeSim) -> None:
    pod = _pod("early")
    pod["spec"]["resourceClaims"][0]["resourceClaimTemplateName"] = "later"
    sim.create(pod)
    await until(lambda: True)
    assert _claims(sim) == []
    sim.create(
        {
            "apiVersion": RESOURCE,
            "kind": "ResourceClaimTemplate",
            "metadata": {"name": "later", "namespace": "default"},
            "spec": {"spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "c"}}]}}},
        }
    )
    await until(lambda: _generated(sim, "early"))


async def test_claims_are_deleted_with_their_pod_and_allocation_released(sim: KubeSim) -> None:
    sim.create(_pod("short"))
    name = await until(lambda: _generated(sim, "short"))
    _allocate(sim, name, "short")
    sim.delete("Pod", "short", "default", grace_period=0)
    await until(lambda: not _claims(sim))


async def test_a_finished_pod_releases_its_claim_which_is_then_deleted(sim: KubeSim) -> None:
    shared = {
        "apiVersion": RESOURCE,
        "kind": "ResourceClaim",
        "metadata": {"name": "shared", "namespace": "default"},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu"}}]}},
    }
    sim.create(shared)
    pod = _pod("job", restartPolicy="Never")
    pod["spec"]["resourceClaims"].append({"name": "shared", "resourceClaimName": "shared"})
    sim.create(pod)
    name = await until(lambda: _generated(sim, "job"))
    _allocate(sim, name, "job")
    _allocate(sim, "shared", "job")
    sim.bind("default", "job", "node-0000")
    obj = sim.get("Pod", "job", "default")
    assert obj is not None
    obj["status"]["phase"] = "Succeeded"
    sim.update(obj, subresource="status")
    await until(lambda: [c["metadata"]["name"] for c in _claims(sim)] == ["shared"])
    [claim] = _claims(sim)
    assert claim["status"] == {}
    assert "finalizers" not in claim["metadata"]


async def test_a_scheduled_pod_is_reserved_on_an_allocated_claim(sim: KubeSim) -> None:
    sim.create(_pod("other"))
    name = await until(lambda: _generated(sim, "other"))
    _allocate(sim, name, "other")
    claim = sim.get("ResourceClaim", name, "default", api_version=RESOURCE)
    assert claim is not None
    claim["status"]["reservedFor"] = []
    sim.update(claim, subresource="status")
    sim.bind("default", "other", "node-0000")

    def reserved() -> bool:
        got = sim.get("ResourceClaim", name, "default", api_version=RESOURCE) or {}
        return [r["name"] for r in got.get("status", {}).get("reservedFor") or []] == ["other"]

    await until(reserved)


def _extended_claim(sim: KubeSim, pod: str) -> str:
    """What the scheduler's PreBind creates for a pod's extended resources backed by DRA, and the
    pod status naming it; returns the claim's name."""
    pod_obj = sim.get("Pod", pod, "default")
    assert pod_obj is not None
    created = sim.create(
        {
            "apiVersion": RESOURCE,
            "kind": "ResourceClaim",
            "metadata": {
                "generateName": f"{pod}-extended-resources-",
                "namespace": "default",
                "annotations": {"resource.kubernetes.io/extended-resource-claim": "true"},
                "ownerReferences": [
                    {
                        "apiVersion": "v1",
                        "kind": "Pod",
                        "name": pod,
                        "uid": pod_obj["metadata"]["uid"],
                        "controller": True,
                    }
                ],
            },
            "spec": {
                "devices": {
                    "requests": [
                        {"name": "container-0-request-0", "exactly": {"deviceClassName": "gpu", "count": 1}}
                    ]
                }
            },
        }
    )
    name = created["metadata"]["name"]
    assert re.fullmatch(rf"{pod}-extended-resources-[a-z0-9]{{5}}", name)
    claim = sim.get("ResourceClaim", name, "default", api_version=RESOURCE)
    assert claim is not None
    claim["metadata"]["finalizers"] = [FINALIZER]
    sim.update(claim)
    claim = sim.get("ResourceClaim", name, "default", api_version=RESOURCE)
    assert claim is not None
    claim["status"] = {
        "allocation": {
            "devices": {
                "results": [
                    {
                        "request": "container-0-request-0",
                        "driver": "gpu.example.com",
                        "pool": "p",
                        "device": "d",
                    }
                ]
            }
        },
        "reservedFor": [{"resource": "pods", "name": pod, "uid": pod_obj["metadata"]["uid"]}],
    }
    sim.update(claim, subresource="status")
    return str(name)


def _extended_pod(name: str, **spec: Any) -> dict[str, Any]:
    requests = {"example.com/gpu": "1"}
    container = {"name": "c", "image": "x:1", "resources": {"requests": requests, "limits": requests}}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"containers": [container], **spec},
    }


async def test_an_extended_resource_claim_goes_when_its_pod_finishes(sim: KubeSim) -> None:
    """DRAExtendedResource: the claim named in ``status.extendedResourceClaimStatus`` is released and
    deleted when the pod ends, as upstream's controller does for it."""
    sim.create(_extended_pod("ext", restartPolicy="Never"))
    name = _extended_claim(sim, "ext")
    obj = sim.get("Pod", "ext", "default")
    assert obj is not None
    mappings = [
        {"containerName": "c", "resourceName": "example.com/gpu", "requestName": "container-0-request-0"}
    ]
    obj["status"]["extendedResourceClaimStatus"] = {"requestMappings": mappings, "resourceClaimName": name}
    sim.update(obj, subresource="status")
    sim.bind("default", "ext", "node-0000")
    await until(lambda: (sim.get("Pod", "ext", "default") or {}).get("status", {}).get("phase") == "Running")
    await asyncio.sleep(0.1)  # the controller has seen the claim by now: a running pod keeps it
    assert [c["metadata"]["name"] for c in _claims(sim)] == [name]
    obj = sim.get("Pod", "ext", "default")
    assert obj is not None
    assert obj["status"]["extendedResourceClaimStatus"]["resourceClaimName"] == name
    obj["status"]["phase"] = "Succeeded"
    sim.update(obj, subresource="status")
    await until(lambda: not _claims(sim))


async def test_a_claim_created_for_a_pod_goes_with_it_even_unnamed(sim: KubeSim) -> None:
    """The garbage collector's part: the pod's status never named the claim (its binder died in
    between); deleting the pod still deletes it."""
    sim.create(_extended_pod("orphan"))
    _extended_claim(sim, "orphan")
    sim.delete("Pod", "orphan", "default", grace_period=0)
    await until(lambda: not _claims(sim))


async def test_an_invalid_extended_resource_claim_status_is_refused(sim: KubeSim) -> None:
    sim.create(_extended_pod("bad"))
    obj = sim.get("Pod", "bad", "default")
    assert obj is not None
    wrong = [{"containerName": "nope", "resourceName": "example.com/gpu", "requestName": "Not_A_Label"}]
    obj["status"]["extendedResourceClaimStatus"] = {"requestMappings": wrong, "resourceClaimName": ""}
    with pytest.raises(ApiError) as info:
        sim.update(obj, subresource="status")
    causes = {(c["field"], c["reason"]) for c in info.value.body["details"]["causes"]}
    assert causes == {
        ("status.extendedResourceClaimStatus.requestMappings[0].containerName", "FieldValueInvalid"),
        ("status.extendedResourceClaimStatus.requestName", "FieldValueInvalid"),
        ("status.extendedResourceClaimStatus.resourceClaimName", "FieldValueRequired"),
    }


def test_a_device_class_extended_resource_name_must_be_an_extended_resource(sim: KubeSim) -> None:
    good = {"apiVersion": RESOURCE, "kind": "DeviceClass", "metadata": {"name": "g"}}
    sim.create({**good, "spec": {"extendedResourceName": "example.com/gpu"}})
    for bad in ("gpu", "kubernetes.io/gpu", "deviceclass.resource.kubernetes.io/g", "requests.example.com/x"):
        with pytest.raises(ApiError) as info:
            sim.create({**good, "metadata": {"name": "b"}, "spec": {"extendedResourceName": bad}})
        [cause] = info.value.body["details"]["causes"]
        assert cause["field"] == "spec.extendedResourceName"
        assert cause["message"].endswith("must be a valid extended resource name")
