"""Extended resources backed by DRA (DRAExtendedResource; upstream ``extendeddynamicresources.go``
and ``deviceclass/extendedresourcecache``).

A DeviceClass backs the extended resource named in its ``spec.extendedResourceName`` and, always,
``deviceclass.resource.kubernetes.io/<class name>``. A pod requesting such a resource on a node
that does not offer it as allocatable (no device plugin) gets its devices from DRA: the scheduler
builds one *special* ResourceClaim for the pod, in memory under the name ``<extended-resources>``
until PreBind creates it (``generateName: <pod>-extended-resources-``), with one ExactCount request
per container and resource, and records in ``pod.status.extendedResourceClaimStatus`` which request
serves which container.
"""

from __future__ import annotations

import datetime
import hashlib
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from ksched.api.core import Container, ContainerExtendedResourceRequest, Pod
from ksched.api.meta import ObjectMeta, OwnerReference
from ksched.api.resource import (
    ALLOCATION_MODE_EXACT_COUNT,
    DeviceClass,
    DeviceRequest,
    ExactDeviceRequest,
    ResourceClaim,
)
from ksched.apimachinery.quantity import QuantityError, parse_quantity
from ksched.framework.resources import is_extended_resource

SPECIAL_CLAIM_NAME = "<extended-resources>"
"""The in-memory name of the pod's extended-resource claim (not a valid object name on purpose)."""
EXTENDED_RESOURCE_CLAIM_ANNOTATION = "resource.kubernetes.io/extended-resource-claim"
DEVICE_CLASS_PREFIX = "deviceclass.resource.kubernetes.io/"
"""Every DeviceClass backs the implicit extended resource ``<prefix><class name>``."""
_INT64_MAX = (1 << 63) - 1


def is_dra_extended_resource_name(name: str) -> bool:
    """Upstream ``IsDRAExtendedResourceName``: an extended resource, or an implicit class one."""
    return is_extended_resource(name) or name.startswith(DEVICE_CLASS_PREFIX)


def is_special(claim: ResourceClaim) -> bool:
    """Whether ``claim`` is the in-memory extended-resource claim (not created yet)."""
    return claim.metadata.name == SPECIAL_CLAIM_NAME


# --- which DeviceClass backs a resource ----------------------------------------------------------


def _created(device_class: DeviceClass) -> datetime.datetime:
    stamp = device_class.metadata.creation_timestamp
    if not stamp:
        return datetime.datetime.min.replace(tzinfo=datetime.UTC)
    return datetime.datetime.fromisoformat(stamp.replace("Z", "+00:00"))


class DeviceClassResolver:
    """Extended resource name -> the DeviceClass backing it (upstream ``ExtendedResourceCache``).

    Upstream fills its cache from DeviceClass events; this one is built from the classes in view
    as if each was added in name order (the order of the informer's initial list): where classes
    name the same ``extendedResourceName`` the newest one wins (ties: the lower name), and, as
    upstream, a class that loses to one already known adds no mapping at all, not even its implicit
    one.
    """

    __slots__ = ("_by_resource",)

    def __init__(self, classes: Iterable[DeviceClass] = ()) -> None:
        self._by_resource: dict[str, DeviceClass] = {}
        for device_class in sorted(classes, key=lambda c: c.metadata.name):
            self._add(device_class)

    def _add(self, device_class: DeviceClass) -> None:
        explicit = device_class.spec.extended_resource_name
        if explicit is not None:
            holder = self._by_resource.get(explicit)
            if holder is not None:
                mine, theirs = _created(device_class), _created(holder)
                if mine < theirs or (mine == theirs and device_class.metadata.name >= holder.metadata.name):
                    return
            self._by_resource[explicit] = device_class
        self._by_resource[DEVICE_CLASS_PREFIX + device_class.metadata.name] = device_class

    def get(self, resource: str) -> DeviceClass | None:
        return self._by_resource.get(resource)

    def __bool__(self) -> bool:
        return bool(self._by_resource)


NO_CLASSES = DeviceClassResolver()


class _ResolverCache:
    """The last resolver built, with the classes it was built from."""

    def __init__(self) -> None:
        self.key: tuple[int, tuple[tuple[str, int], ...]] | None = None
        self.resolver = NO_CLASSES

    def get(self, classes: Mapping[str, DeviceClass]) -> DeviceClassResolver:
        if not classes:
            return NO_CLASSES
        key = (id(classes), tuple((k, id(v)) for k, v in classes.items()))
        if key != self.key:
            self.key, self.resolver = key, DeviceClassResolver(classes.values())
        return self.resolver


_CACHE = _ResolverCache()


def resolver_for(classes: Mapping[str, DeviceClass]) -> DeviceClassResolver:
    """The resolver of the classes in view; rebuilt only when a class was added, changed or removed
    (classes are immutable structs replaced on change, so their identities tell)."""
    return _CACHE.get(classes)


def mapped_extended_resources(requests: Mapping[str, int], resolver: DeviceClassResolver) -> dict[str, int]:
    """The pod's non-zero requests of extended resources some DeviceClass backs (empty: none)."""
    if not resolver:
        return {}
    return {
        name: amount
        for name, amount in requests.items()
        if amount != 0 and is_dra_extended_resource_name(name) and resolver.get(name) is not None
    }


# --- the pod's claim ------------------------------------------------------------------------------


def find_extended_resource_claim(pod: Pod, claims: Iterable[ResourceClaim]) -> ResourceClaim | None:
    """Upstream ``findExtendedResourceClaim``: the claim annotated as the extended-resource claim
    whose controller owner is the pod (left from an earlier cycle whose binding failed)."""
    meta = pod.metadata
    for claim in claims:
        if claim.metadata.namespace != meta.namespace:
            continue
        if claim.metadata.annotations.get(EXTENDED_RESOURCE_CLAIM_ANNOTATION) != "true":
            continue
        for ref in claim.metadata.owner_references:
            if ref.name == meta.name and ref.controller and ref.uid == meta.uid:
                return claim
    return None


def new_special_claim(pod: Pod) -> ResourceClaim:
    """The in-memory claim for the pod's extended resources: no requests yet (Filter fills them per
    node), a temporary uid for the in-flight bookkeeping, the pod as controller owner."""
    meta = pod.metadata
    return ResourceClaim(
        metadata=ObjectMeta(
            name=SPECIAL_CLAIM_NAME,
            namespace=meta.namespace,
            uid=str(uuid.uuid4()),
            generate_name=meta.name + "-extended-resources-",
            owner_references=[
                OwnerReference(api_version="v1", kind="Pod", name=meta.name, uid=meta.uid, controller=True)
            ],
            annotations={EXTENDED_RESOURCE_CLAIM_ANNOTATION: "true"},
        )
    )


_NAME_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
"""The characters of the API server's generated name suffixes (apimachinery ``rand.String``)."""


def simulated_name(claim: ResourceClaim) -> str:
    """The name the API server would generate for ``claim`` (``generateName`` + 5 characters), with a
    suffix derived from its owner pod's uid so a simulation's output is stable."""
    meta = claim.metadata
    owner = next((ref.uid for ref in meta.owner_references if ref.controller), meta.uid)
    digest = hashlib.sha256(f"{meta.namespace}/{meta.generate_name}/{owner}".encode()).digest()
    suffix = "".join(_NAME_ALPHABET[b % len(_NAME_ALPHABET)] for b in digest[:5])
    return (claim.metadata.generate_name or "")[:58] + suffix


def _as_int64(text: str) -> int | None:
    """Upstream ``Quantity.AsInt64``: the integer value, None when fractional or out of range."""
    try:
        fraction = parse_quantity(text).as_fraction()
    except QuantityError:
        return None
    if fraction.denominator != 1 or not -_INT64_MAX - 1 <= fraction.numerator <= _INT64_MAX:
        return None
    return fraction.numerator


@dataclass
class _Request:
    name: str
    class_name: str
    count: int

    def to_api(self) -> DeviceRequest:
        return DeviceRequest(
            name=self.name,
            exactly=ExactDeviceRequest(
                device_class_name=self.class_name,
                allocation_mode=ALLOCATION_MODE_EXACT_COUNT,
                count=self.count,
            ),
        )


def _container_request(
    index: int,
    container: Container,
    resource: str,
    class_name: str,
    reusable: Sequence[_Request | None] = (),
) -> tuple[_Request | None, list[ContainerExtendedResourceRequest]]:
    """Upstream ``createResourceRequestAndMappings``: the request a container needs for ``resource``
    beyond what ``reusable`` requests (of long-lived containers after it) give, and its mappings."""
    requests = container.resources.requests if container.resources is not None else {}
    if resource not in requests:
        return None, []
    wanted = _as_int64(requests[resource])
    if not wanted:
        return None, []
    mappings: list[ContainerExtendedResourceRequest] = []
    covered = 0
    for other in reusable:
        if other is None:
            continue
        covered += other.count
        mappings.append(
            ContainerExtendedResourceRequest(
                container_name=container.name, resource_name=resource, request_name=other.name
            )
        )
        if covered >= wanted:
            return None, mappings
    # the request is named after the container's index and the resource's index among its sorted
    # request names
    position = sorted(requests).index(resource)
    name = f"container-{index}-request-{position}"
    mappings.append(
        ContainerExtendedResourceRequest(
            container_name=container.name, resource_name=resource, request_name=name
        )
    )
    return _Request(name, class_name, wanted - covered), mappings


def requests_and_mappings(
    pod: Pod, extended: Mapping[str, int], resolver: DeviceClassResolver
) -> tuple[list[DeviceRequest], list[ContainerExtendedResourceRequest]]:
    """Upstream ``createRequestsAndMappings``: the device requests of the pod's extended-resource
    claim for the resources in ``extended`` and which request serves which container.

    Containers are the init containers then the app containers, indexed in that order. Long-lived
    ones (app containers, sidecars) get a request each; a plain init container, which runs before
    them, reuses the requests of the long-lived containers after it and asks only for the rest,
    and of those rests only the largest is requested (the others are mapped to it). Requests are
    sorted by name.
    """
    spec = pod.spec
    containers = [*spec.init_containers, *spec.containers]
    n_init = len(spec.init_containers)
    long_lived = [i for i, c in enumerate(containers) if i >= n_init or c.restart_policy == "Always"]
    short_lived = [i for i in range(n_init) if containers[i].restart_policy != "Always"]
    out_requests: list[_Request] = []
    out_mappings: list[ContainerExtendedResourceRequest] = []
    for resource in sorted(extended):
        device_class = resolver.get(resource)
        if device_class is None:
            continue
        class_name = device_class.metadata.name
        by_container: list[_Request | None] = [None] * len(containers)
        long_mappings: list[ContainerExtendedResourceRequest] = []
        for i in long_lived:
            req, mappings = _container_request(i, containers[i], resource, class_name)
            by_container[i] = req
            long_mappings += mappings
        largest: _Request | None = None
        short_names: set[str] = set()
        short_mappings: list[ContainerExtendedResourceRequest] = []
        for i in short_lived:
            req, mappings = _container_request(i, containers[i], resource, class_name, by_container[i:])
            if req is not None:
                short_names.add(req.name)
                if largest is None or largest.count < req.count:
                    largest = req
            short_mappings += mappings
        if largest is not None and len(short_names) > 1:
            short_names.discard(largest.name)
            short_mappings = [
                ContainerExtendedResourceRequest(
                    container_name=m.container_name, resource_name=m.resource_name, request_name=largest.name
                )
                if m.request_name in short_names
                else m
                for m in short_mappings
            ]
        if largest is not None:
            out_requests.append(largest)
        out_requests += [r for r in by_container if r is not None]
        out_mappings += long_mappings + short_mappings
    out_requests.sort(key=lambda r: r.name)
    return [r.to_api() for r in out_requests], out_mappings
