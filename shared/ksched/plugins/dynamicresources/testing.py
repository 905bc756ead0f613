"""Builders of DRA objects for tests and the bench (the shapes of upstream's ``allocatortesting``
generators)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ksched.api.core import Node
from ksched.api.kinds import convert
from ksched.api.resource import (
    AllocationResult,
    DeviceClass,
    ResourceClaim,
    ResourceSlice,
)
from ksched.plugins.dynamicresources.allocator import Allocator


def node(name: str, region: str = "region-1") -> Node:
    return convert({"metadata": {"name": name, "labels": {"region": region, "planet": "earth"}}}, Node)


def device_class(name: str, driver: str, config: Iterable[Mapping[str, Any]] = ()) -> DeviceClass:
    spec: dict[str, Any] = {"selectors": [{"cel": {"expression": f'device.driver == "{driver}"'}}]}
    if config:
        spec["config"] = [{"opaque": dict(c)} for c in config]
    return convert({"metadata": {"name": name}, "spec": spec}, DeviceClass)


def selector(expression: str) -> dict[str, Any]:
    return {"cel": {"expression": expression}}


def request(
    name: str, class_name: str, count: int = 1, *selectors: dict[str, Any], **extra: Any
) -> dict[str, Any]:
    exactly: dict[str, Any] = {"deviceClassName": class_name, "allocationMode": "ExactCount", "count": count}
    if selectors:
        exactly["selectors"] = list(selectors)
    exactly.update(extra)
    return {"name": name, "exactly": exactly}


def all_request(name: str, class_name: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "exactly": {"deviceClassName": class_name, "allocationMode": "All", **extra}}


def sub_request(
    name: str, class_name: str, count: int = 1, *selectors: dict[str, Any], **extra: Any
) -> dict[str, Any]:
    sub: dict[str, Any] = {
        "name": name,
        "deviceClassName": class_name,
        "allocationMode": "ExactCount",
        "count": count,
    }
    if selectors:
        sub["selectors"] = list(selectors)
    sub.update(extra)
    return sub


def first_available(name: str, *subs: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "firstAvailable": list(subs)}


def claim(
    name: str,
    *requests: dict[str, Any],
    constraints: Iterable[Mapping[str, Any]] = (),
    config: Iterable[Mapping[str, Any]] = (),
    namespace: str = "",
    uid: str = "",
    status: Mapping[str, Any] | None = None,
    owner_uid: str = "",
) -> ResourceClaim:
    meta: dict[str, Any] = {"name": name, "namespace": namespace, "uid": uid or f"uid-{name}"}
    if owner_uid:
        meta["ownerReferences"] = [
            {"apiVersion": "v1", "kind": "Pod", "name": "owner", "uid": owner_uid, "controller": True}
        ]
    devices: dict[str, Any] = {"requests": list(requests)}
    if constraints:
        devices["constraints"] = [dict(c) for c in constraints]
    if config:
        devices["config"] = [dict(c) for c in config]
    raw: dict[str, Any] = {"metadata": meta, "spec": {"devices": devices}}
    if status is not None:
        raw["status"] = dict(status)
    return convert(raw, ResourceClaim)


def device(
    name: str,
    capacity: Mapping[str, str] | None = None,
    attributes: Mapping[str, Mapping[str, Any]] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name}
    if capacity:
        out["capacity"] = {k: {"value": v} for k, v in capacity.items()}
    if attributes:
        out["attributes"] = {k: dict(v) for k, v in attributes.items()}
    out.update(extra)
    return out


def consumes_counters(counter_set: str, memory: str) -> dict[str, Any]:
    """The ``consumesCounters`` of a device (a partition) taking ``memory`` of ``counter_set``, for
    ``device(name, **consumes_counters(...))``."""
    return {"consumesCounters": [{"counterSet": counter_set, "counters": {"memory": {"value": memory}}}]}


def counter_set(name: str, memory: str) -> dict[str, Any]:
    """An entry of a slice's ``sharedCounters``: counter set ``name`` of ``memory``."""
    return {"name": name, "counters": {"memory": {"value": memory}}}


def resource_slice(
    name: str,
    node_name: str | None,
    pool: str,
    driver: str,
    *devices: dict[str, Any],
    generation: int = 1,
    slice_count: int = 1,
    **spec: Any,
) -> ResourceSlice:
    raw_spec: dict[str, Any] = {
        "driver": driver,
        "pool": {"name": pool, "generation": generation, "resourceSliceCount": slice_count},
        "devices": list(devices),
        **spec,
    }
    if node_name is not None:
        raw_spec["nodeName"] = node_name
    return convert({"metadata": {"name": name}, "spec": raw_spec}, ResourceSlice)


def one_device_slice(name: str, node_name: str, pool: str, driver: str) -> ResourceSlice:
    return resource_slice(name, node_name, pool, driver, device("device-1"))


def allocation(node_name: str | None, *results: tuple[str, str, str, str]) -> dict[str, Any]:
    """A claim status allocation of ``(request, driver, pool, device)`` results."""
    out: dict[str, Any] = {
        "devices": {
            "results": [{"request": r, "driver": d, "pool": p, "device": n} for r, d, p, n in results]
        }
    }
    if node_name is not None:
        out["nodeSelector"] = local_node_selector(node_name)
    return out


def local_node_selector(node_name: str) -> dict[str, Any]:
    return {
        "nodeSelectorTerms": [
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node_name]}]}
        ]
    }


def result_devices(result: AllocationResult) -> list[tuple[str, str, str, str, bool]]:
    """``(request, driver, pool, device, admin access)`` of each allocated device."""
    return [(r.request, r.driver, r.pool, r.device, bool(r.admin_access)) for r in result.devices.results]


def allocate(
    allocator: Allocator, node: Node, claims: Sequence[ResourceClaim]
) -> list[AllocationResult] | None:
    """The allocation results of ``claims`` on ``node``, or None when they do not all fit."""
    choice = allocator.search(node, claims)
    return None if choice is None else choice.results(claims)
