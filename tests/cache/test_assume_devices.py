"""The assume check across replicas for pods with ResourceClaims: a placement carries the devices
its replica's Reserve chose (``Placement.plugin_state``), the binder writes exactly those, so the
informer refuses a placement naming a device that the cache shows allocated or that a placement it
accepted since holds, even when other devices of the node would fit."""

from __future__ import annotations

from typing import Any

import msgspec

from ksched.api.core import ContainerExtendedResourceRequest, Pod
from ksched.api.resource import (
    AllocationResult,
    DeviceClaim,
    DeviceClass,
    DeviceRequest,
    ExactDeviceRequest,
    ResourceClaim,
    ResourceClaimSpec,
)
from ksched.cache.ledger import AssumeVerdict, ClusterCache
from ksched.config import default_config, parse_config
from ksched.config.profile import build_frameworks
from ksched.framework.nominator import Nominator
from ksched.framework.runtime import Framework
from ksched.framework.testing import make_node, make_pod
from ksched.plugins.dynamicresources.extended import SPECIAL_CLAIM_NAME, new_special_claim
from ksched.plugins.dynamicresources.state import ExportedState
from ksched.plugins.dynamicresources.testing import (
    allocation,
    claim,
    consumes_counters,
    counter_set,
    device,
    device_class,
    request,
    resource_slice,
)

DRIVER = "gpu.example.com"
CLASS = "gpu"
NODE = "worker"
NS = "default"


def taken(name: str) -> str:
    return f"DynamicResources: device {DRIVER}/{NODE}/{name} of resourceclaim {NS}/c2 is already allocated"


class Informer:
    """The informer's cache with DRA objects on one node and the default profile(s) over it."""

    def __init__(self, devices: list[dict[str, Any]] | None = None, config_yaml: str = "") -> None:
        self.cache = ClusterCache()
        config = parse_config(config_yaml) if config_yaml else default_config()
        self.frameworks = build_frameworks(config, self.cache.snapshot, nominator=Nominator())
        self.cache.upsert_node(make_node(NODE, allocatable={"cpu": "8", "memory": "8Gi", "pods": "110"}))
        self.cache.upsert_object(device_class(CLASS, DRIVER))
        if devices is None:
            devices = [device("gpu-0"), device("gpu-1")]
        self.cache.upsert_object(resource_slice(f"{NODE}-gpus", NODE, NODE, DRIVER, *devices))

    def fw(self, profile: str = "default-scheduler") -> Framework:
        return self.frameworks[profile]

    def claim(self, name: str, status: dict[str, Any] | None = None) -> ResourceClaim:
        c = claim(name, request("gpu", CLASS), namespace=NS, status=status)
        self.cache.upsert_object(c)
        return c

    def pending(self, name: str, claim_name: str, scheduler: str = "") -> Pod:
        spec: dict[str, Any] = {"resourceClaims": [{"name": "gpu", "resourceClaimName": claim_name}]}
        if scheduler:
            spec["schedulerName"] = scheduler
        pod = make_pod(name, NS, requests={"cpu": "100m"}, spec=spec)
        self.cache.upsert_pod(pod)
        return pod

    def assume(
        self, pod: Pod, c: ResourceClaim, dev: str, generation: int, profile: str = "default-scheduler"
    ) -> AssumeVerdict:
        """The verdict on a placement of ``pod`` whose replica allocated ``dev`` for claim ``c``,
        deciding on ``generation``."""
        return self.cache.assume(
            pod,
            NODE,
            generation=generation,
            scheduler_id="s",
            profile=self.fw(profile),
            plugin_state={"DynamicResources": placement_state(c, dev)},
        )


def allocated(dev: str) -> AllocationResult:
    return msgspec.convert(allocation(NODE, ("gpu", DRIVER, NODE, dev)), AllocationResult)


def placement_state(c: ResourceClaim, dev: str) -> bytes:
    """What a replica's DynamicResources exports after Reserve allocated ``dev`` for ``c``."""
    return msgspec.msgpack.encode(ExportedState(node_name=NODE, claims=[c], allocations=[allocated(dev)]))


def two_placements() -> tuple[Informer, Pod, ResourceClaim, Pod, ResourceClaim, int]:
    informer = Informer()
    c1, c2 = informer.claim("c1"), informer.claim("c2")
    p1, p2 = informer.pending("p1", "c1"), informer.pending("p2", "c2")
    return informer, p1, c1, p2, c2, informer.cache.generation


def test_a_device_an_accepted_placement_took_is_refused_to_another_though_another_would_fit() -> None:
    informer, p1, c1, p2, c2, decided_at = two_placements()
    assert informer.assume(p1, c1, "gpu-0", decided_at).accepted
    verdict = informer.assume(p2, c2, "gpu-0", decided_at)
    assert not verdict.accepted and verdict.reason == taken("gpu-0")
    assert p2.metadata.uid in informer.cache.pending
    assert informer.assume(p2, c2, "gpu-1", decided_at).accepted


def test_a_device_the_cache_shows_allocated_is_refused() -> None:
    informer = Informer()
    informer.claim("c0", status={"allocation": allocation(NODE, ("gpu", DRIVER, NODE, "gpu-0"))})
    c2 = informer.claim("c2")
    p2 = informer.pending("p2", "c2")
    decided_at = informer.cache.generation - 1  # the replica had not seen c0's allocation
    verdict = informer.assume(p2, c2, "gpu-0", decided_at)
    assert verdict.reason == taken("gpu-0")


def test_a_forgotten_placement_frees_its_devices() -> None:
    informer, p1, c1, p2, c2, decided_at = two_placements()
    assert informer.assume(p1, c1, "gpu-0", decided_at).accepted
    assert informer.cache.forget(p1.metadata.uid)  # its binding failed
    assert informer.assume(p2, c2, "gpu-0", decided_at).accepted


def test_a_deleted_pod_frees_the_devices_of_its_placement() -> None:
    informer, p1, c1, p2, c2, decided_at = two_placements()
    assert informer.assume(p1, c1, "gpu-0", decided_at).accepted
    informer.cache.remove_pod(p1.metadata.uid)
    assert informer.assume(p2, c2, "gpu-0", decided_at).accepted


def test_a_bound_placement_holds_its_devices_until_the_claim_shows_them() -> None:
    informer, p1, c1, p2, c2, decided_at = two_placements()
    assert informer.assume(p1, c1, "gpu-0", decided_at).accepted
    bound = msgspec.structs.replace(p1, spec=msgspec.structs.replace(p1.spec, node_name=NODE))
    informer.cache.upsert_pod(bound)  # the pod's watch event came before the claim's
    assert informer.assume(p2, c2, "gpu-0", decided_at).reason == taken("gpu-0")
    informer.claim("c1", status={"allocation": allocation(NODE, ("gpu", DRIVER, NODE, "gpu-0"))})
    assert informer.assume(p2, c2, "gpu-0", decided_at).reason == taken("gpu-0")
    informer.cache.remove_object("ResourceClaim", f"{NS}/c1")  # the pod's claim is gone: so is its device
    assert informer.assume(p2, c2, "gpu-0", decided_at).accepted


def test_a_shared_claim_is_not_allocated_twice_differently() -> None:
    informer = Informer()
    shared = informer.claim("shared")
    p1, p2 = informer.pending("p1", "shared"), informer.pending("p2", "shared")
    decided_at = informer.cache.generation
    assert informer.assume(p1, shared, "gpu-0", decided_at).accepted
    in_flight = f"DynamicResources: resource claim {NS}/shared is in the process of being allocated"
    assert informer.assume(p2, shared, "gpu-1", decided_at).reason == in_flight  # PreFilter, as upstream
    informer.claim("shared", status={"allocation": allocation(NODE, ("gpu", DRIVER, NODE, "gpu-0"))})
    verdict = informer.assume(p2, shared, "gpu-1", decided_at)
    assert verdict.reason == f"DynamicResources: resourceclaim {NS}/shared was allocated for another pod"
    assert informer.assume(p2, shared, "gpu-0", decided_at).accepted  # the same allocation: shared


def test_partitions_of_one_device_share_its_counters() -> None:
    slices = [
        resource_slice(
            "counters",
            NODE,
            NODE,
            DRIVER,
            slice_count=2,
            sharedCounters=[counter_set(name, "8Gi") for name in ("gpu-0", "gpu-1")],
        ),
        resource_slice(
            f"{NODE}-gpus",
            NODE,
            NODE,
            DRIVER,
            *(
                device(f"{gpu}-{part}", **consumes_counters(gpu, size))
                for gpu in ("gpu-0", "gpu-1")
                for part, size in (("whole", "8Gi"), ("half", "4Gi"))
            ),
            slice_count=2,
        ),
    ]
    informer = Informer(devices=[])
    informer.cache.remove_object("ResourceSlice", f"{NODE}-gpus")
    for s in slices:
        informer.cache.upsert_object(s)
    c1, c2 = informer.claim("c1"), informer.claim("c2")
    p1, p2 = informer.pending("p1", "c1"), informer.pending("p2", "c2")
    decided_at = informer.cache.generation
    assert informer.assume(p1, c1, "gpu-0-whole", decided_at).accepted
    # gpu-1-half would fit: the filter passes
    verdict = informer.assume(p2, c2, "gpu-0-half", decided_at)
    short = "is short of counters of its partitionable device"
    assert verdict.reason == f"DynamicResources: device {DRIVER}/{NODE}/gpu-0-half {short}"
    assert informer.assume(p2, c2, "gpu-1-half", decided_at).accepted


def test_a_restored_placement_holds_its_devices_again() -> None:
    informer, p1, c1, p2, c2, decided_at = two_placements()
    state = {"DynamicResources": placement_state(c1, "gpu-0")}
    informer.cache.restore_assumption(p1, NODE, "s", informer.fw(), state)
    assert informer.assume(p2, c2, "gpu-0", decided_at).reason == taken("gpu-0")


TWO_PROFILES = """
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: default-scheduler
- schedulerName: other-scheduler
"""


def test_profiles_share_what_placements_hold() -> None:
    informer = Informer(config_yaml=TWO_PROFILES)
    c1, c2 = informer.claim("c1"), informer.claim("c2")
    p1, p2 = informer.pending("p1", "c1"), informer.pending("p2", "c2", scheduler="other-scheduler")
    decided_at = informer.cache.generation
    assert informer.assume(p1, c1, "gpu-0", decided_at).accepted
    assert informer.assume(p2, c2, "gpu-0", decided_at, profile="other-scheduler").reason == taken("gpu-0")


def test_shares_of_a_device_stay_within_its_consumable_capacity() -> None:
    shared = [device(f"gpu-{i}", capacity={"memory": "8Gi"}, allowMultipleAllocations=True) for i in (0, 1)]
    informer = Informer(devices=shared)  # gpu-1 free: the filter passes, the named share decides
    c1, c2 = informer.claim("c1"), informer.claim("c2")
    p1, p2 = informer.pending("p1", "c1"), informer.pending("p2", "c2")
    decided_at = informer.cache.generation

    def share(c: ResourceClaim, share_id: str, memory: str) -> bytes:
        result = {
            "request": "gpu",
            "driver": DRIVER,
            "pool": NODE,
            "device": "gpu-0",
            "shareID": share_id,
            "consumedCapacity": {"memory": memory},
        }
        alloc = msgspec.convert({"devices": {"results": [result]}}, AllocationResult)
        return msgspec.msgpack.encode(ExportedState(node_name=NODE, claims=[c], allocations=[alloc]))

    def assume(pod: Pod, state: bytes) -> AssumeVerdict:
        return informer.cache.assume(
            pod,
            NODE,
            generation=decided_at,
            scheduler_id="s",
            profile=informer.fw(),
            plugin_state={"DynamicResources": state},
        )

    assert assume(p1, share(c1, "a", "6Gi")).accepted
    verdict = assume(p2, share(c2, "b", "6Gi"))
    assert verdict.reason == f"DynamicResources: device {DRIVER}/{NODE}/gpu-0 has no memory capacity left"
    assert assume(p2, share(c2, "b", "2Gi")).accepted


# --- extended resources backed by DRA (DRAExtendedResource) ----------------------------------------

GPU = "example.com/gpu"


def extended_pending(informer: Informer, name: str) -> Pod:
    """A pod asking for the extended resource the informer's second DeviceClass backs."""
    containers = [{"name": "c", "resources": {"requests": {GPU: "1"}, "limits": {GPU: "1"}}}]
    pod = make_pod(name, NS, containers=containers)
    informer.cache.upsert_pod(pod)
    return pod


def extended_state(pod: Pod, dev: str) -> bytes:
    """What a replica exports after Reserve allocated ``dev`` for the pod's in-memory claim."""
    special = new_special_claim(pod)
    requests = [
        DeviceRequest(
            name="container-0-request-0", exactly=ExactDeviceRequest(device_class_name="ext", count=1)
        )
    ]
    special = msgspec.structs.replace(special, spec=ResourceClaimSpec(devices=DeviceClaim(requests=requests)))
    result = msgspec.convert(allocation(NODE, ("container-0-request-0", DRIVER, NODE, dev)), AllocationResult)
    mapping = ContainerExtendedResourceRequest(
        container_name="c", resource_name=GPU, request_name="container-0-request-0"
    )
    return msgspec.msgpack.encode(
        ExportedState(
            node_name=NODE,
            claims=[special],
            allocations=[result],
            num_user_owned=0,
            initial_extended_uid=special.metadata.uid,
            mappings=[mapping],
        )
    )


def test_extended_resource_claims_of_two_placements_never_share_a_device() -> None:
    """Each placement carries its pod's in-memory claim (not created yet): the informer refuses the
    second one naming the device the first took, and holds the first's device until the claim its
    binder created shows up allocated."""
    informer = Informer()
    informer.cache.upsert_object(
        msgspec.convert({"metadata": {"name": "ext"}, "spec": {"extendedResourceName": GPU}}, DeviceClass)
    )
    p1, p2 = extended_pending(informer, "p1"), extended_pending(informer, "p2")
    decided_at = informer.cache.generation

    def assume(pod: Pod, dev: str) -> AssumeVerdict:
        state = {"DynamicResources": extended_state(pod, dev)}
        return informer.cache.assume(
            pod, NODE, generation=decided_at, scheduler_id="s", profile=informer.fw(), plugin_state=state
        )

    assert assume(p1, "gpu-0").accepted
    verdict = assume(p2, "gpu-0")
    assert not verdict.accepted
    assert verdict.reason == (
        f"DynamicResources: device {DRIVER}/{NODE}/gpu-0 of resourceclaim {NS}/{SPECIAL_CLAIM_NAME} "
        "is already allocated"
    )
    # p1's binder created its claim: the cache shows it allocated, the hold ends, gpu-0 stays taken
    created = msgspec.convert(
        {
            "metadata": {
                "name": "p1-extended-resources-abcde",
                "namespace": NS,
                "uid": "uid-created",
                "annotations": {"resource.kubernetes.io/extended-resource-claim": "true"},
                "ownerReferences": [
                    {
                        "apiVersion": "v1",
                        "kind": "Pod",
                        "name": "p1",
                        "uid": p1.metadata.uid,
                        "controller": True,
                    }
                ],
            },
            "status": {"allocation": allocation(NODE, ("container-0-request-0", DRIVER, NODE, "gpu-0"))},
        },
        ResourceClaim,
    )
    informer.cache.upsert_object(created)
    assert not assume(p2, "gpu-0").accepted
    assert assume(p2, "gpu-1").accepted
