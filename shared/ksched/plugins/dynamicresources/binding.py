"""PreBind's API half (upstream ``bindClaim`` and the binding-conditions wait), run in the binder
with its API client (:class:`ksched.client.rest.Client`).

For each claim not yet reserved for the pod: add the delete-protection finalizer if needed, then
write ``status.allocation`` (when Reserve chose one) and append the pod to ``status.reservedFor``.
Writes are JSON merge patches carrying the ``resourceVersion`` the decision saw, so a claim changed
in between answers 409 Conflict, as upstream's Update does; on a conflict the claim is read again
and the write retried (upstream ``retry.RetryOnConflict``, 5 tries). Then, if a chosen device has
binding conditions, the claims are read every 5 s until all conditions are true, a failure
condition is true, or the binding timeout passes.

The pod's in-memory extended-resource claim (DRAExtendedResource) is created first (``generateName``,
one taken over from an earlier delivery of the placement when it matches), then written like the
others, then named in the pod's ``status.extendedResourceClaimStatus`` (a strategic merge patch).
Unreserve's API half deletes it again.
"""

from __future__ import annotations

import asyncio
import datetime
import json
import time
from collections.abc import Sequence
from http import HTTPStatus
from typing import Any

import aiohttp
import msgspec

from ksched.api.base import DECODE_ERRORS
from ksched.api.core import ContainerExtendedResourceRequest, Pod
from ksched.api.kinds import POD, RESOURCE_CLAIM, decode_lenient
from ksched.api.resource import FINALIZER, ResourceClaim, ResourceClaimConsumerReference
from ksched.client.rest import JSON, MERGE_PATCH, STRATEGIC_MERGE_PATCH, Client
from ksched.plugins.dynamicresources import extended as extended_resources
from ksched.plugins.dynamicresources.claims import is_reserved_for, pod_reference
from ksched.plugins.dynamicresources.cyclestate import DRAState
from ksched.plugins.dynamicresources.features import DRAFeatures

POLL_INTERVAL = 5.0
CONFLICT_RETRIES = 5
CONFLICT_BACKOFF = 0.01


class PreBindError(RuntimeError):
    """PreBind failed; the pod goes back to the queue."""


class BindingFailed(PreBindError):
    """A device's binding failure condition is true (upstream ``ErrDeviceBindingFailed``)."""


class NotFound(PreBindError):
    """The object is gone (404)."""


class _Conflict(Exception):
    pass


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _ref(claim: ResourceClaim) -> str:
    return f"{claim.metadata.namespace}/{claim.metadata.name}"


class ClaimApi:
    """Reads and merge patches of ResourceClaims, answering ksched's structs."""

    def __init__(self, client: Client) -> None:
        self.client = client

    @classmethod
    def of(cls, client: object | None) -> ClaimApi:
        if not isinstance(client, Client):
            raise PreBindError(
                f"DynamicResources PreBind needs an API client (ksched.client), got {type(client).__name__}"
            )
        return cls(client)

    @staticmethod
    def _claims(namespace: str) -> str:
        return RESOURCE_CLAIM.path(namespace)

    def _claim(self, namespace: str, name: str) -> str:
        return RESOURCE_CLAIM.object_path(namespace, name)

    async def get(self, namespace: str, name: str) -> ResourceClaim:
        return _decode(await _call_raw(self.client, "GET", self._claim(namespace, name)))

    async def create(self, claim: ResourceClaim) -> ResourceClaim:
        body = msgspec.to_builtins(claim)
        return _decode(await _call_raw(self.client, "POST", self._claims(claim.metadata.namespace), body))

    async def list(self, namespace: str) -> list[ResourceClaim]:
        raw = await _call_raw(self.client, "GET", self._claims(namespace))
        try:
            return decode_lenient(raw, _ClaimList).items  # type: ignore[no-any-return]
        except DECODE_ERRORS as exc:
            raise PreBindError(f"cannot decode the API answer: {exc}") from None

    async def delete(self, claim: ResourceClaim) -> None:
        meta = claim.metadata
        await _call_raw(self.client, "DELETE", self._claim(meta.namespace, meta.name))

    async def patch_pod_status(self, pod: Pod, body: dict[str, Any]) -> None:
        meta = pod.metadata
        path = POD.object_path(meta.namespace, meta.name, "status")
        await _call_raw(self.client, "PATCH", path, body, STRATEGIC_MERGE_PATCH)

    async def patch(
        self, claim: ResourceClaim, body: dict[str, Any], status: bool, content_type: str = MERGE_PATCH
    ) -> ResourceClaim:
        meta = claim.metadata
        path = self._claim(meta.namespace, meta.name) + ("/status" if status else "")
        return _decode(await _call_raw(self.client, "PATCH", path, body, content_type))


class _ClaimList(msgspec.Struct):
    items: list[ResourceClaim] = []


def _decode(raw: bytes) -> ResourceClaim:
    try:
        return decode_lenient(raw, ResourceClaim)  # type: ignore[no-any-return]
    except DECODE_ERRORS as exc:
        raise PreBindError(f"cannot decode the API answer: {exc}") from None


async def _call_raw(
    client: Client, method: str, path: str, body: Any = None, content_type: str = JSON
) -> bytes:
    """The body of a successful answer; _Conflict for 409, PreBindError for any other failure.
    No timeout, as the generated client had. ``content_type``: a patch's (a create's body is JSON:
    the API server refuses another type with 415)."""
    try:
        code, data = await client.request(method, path, body, content_type, timeout=None)
    except (TimeoutError, aiohttp.ClientError, OSError) as exc:
        raise PreBindError(str(exc)) from None
    if code == 409:
        raise _Conflict(_message(data, code))
    if code == 404:
        raise NotFound(_message(data, code))
    if not 200 <= code < 300:
        raise PreBindError(_message(data, code))
    return data


def _message(body: bytes, code: int) -> str:
    try:
        status = json.loads(body)
        if isinstance(status, dict) and status.get("message"):
            return str(status["message"])
    except ValueError:
        pass
    try:
        phrase = HTTPStatus(code).phrase
    except ValueError:
        phrase = ""
    return f"the server responded with {code} {phrase}".rstrip()


def _consumer(ref: ResourceClaimConsumerReference) -> dict[str, Any]:
    return msgspec.to_builtins(ref)  # type: ignore[no-any-return]


async def bind_claim(
    api: ClaimApi, claim: ResourceClaim, allocation: Any, pod: Pod, features: DRAFeatures
) -> ResourceClaim:
    """Upstream ``bindClaim``: the claim after its allocation and the pod's reservation are written."""
    reference = pod_reference(pod)
    refresh = False
    last: Exception | None = None
    for attempt in range(CONFLICT_RETRIES):
        if attempt:
            await asyncio.sleep(CONFLICT_BACKOFF)
        try:
            if refresh:
                try:
                    claim = await api.get(claim.metadata.namespace, claim.metadata.name)
                except PreBindError as exc:
                    raise PreBindError(f"get updated claim {_ref(claim)} after conflict: {exc}") from None
            refresh = True
            return await _write(api, claim, allocation, reference, features)
        except _Conflict as exc:
            last = exc
    raise PreBindError(str(last))


async def _write(
    api: ClaimApi,
    claim: ResourceClaim,
    allocation: Any,
    reference: ResourceClaimConsumerReference,
    features: DRAFeatures,
) -> ResourceClaim:
    if claim.metadata.deletion_timestamp is not None:
        raise PreBindError(f"claim {_ref(claim)} got deleted in the meantime")
    status: dict[str, Any] = {}
    current_allocation = claim.status.allocation
    if allocation is not None:
        if claim.status.allocation is not None:
            raise PreBindError(f"claim {_ref(claim)} got allocated elsewhere in the meantime")
        if FINALIZER not in claim.metadata.finalizers:
            body = {
                "metadata": {
                    "resourceVersion": claim.metadata.resource_version,
                    "finalizers": [*claim.metadata.finalizers, FINALIZER],
                }
            }
            try:
                claim = await api.patch(claim, body, status=False)
            except PreBindError as exc:
                raise PreBindError(f"add finalizer to claim {_ref(claim)}: {exc}") from None
        current_allocation = allocation
        status["allocation"] = msgspec.to_builtins(allocation)
    status["reservedFor"] = [_consumer(r) for r in (*claim.status.reserved_for, reference)]
    if features.device_binding_and_status:
        if current_allocation is None:
            raise PreBindError(f"claim {_ref(claim)} got deallocated elsewhere in the meantime")
        if current_allocation.allocation_timestamp is None:
            stamped = msgspec.to_builtins(current_allocation)
            stamped["allocationTimestamp"] = _now()
            status["allocation"] = stamped
    body = {"metadata": {"resourceVersion": claim.metadata.resource_version}, "status": status}
    try:
        return await api.patch(claim, body, status=True)
    except PreBindError as exc:
        what = "add allocation and reservation to" if allocation is not None else "add reservation to"
        raise PreBindError(f"{what} claim {_ref(claim)}: {exc}") from None


async def bind_claims(api: ClaimApi, st: DRAState, pod: Pod, features: DRAFeatures) -> None:
    """Every claim not yet reserved for the pod is bound; the state keeps the updated claims. The
    in-memory extended-resource claim is created first and the pod's status records it."""
    extended_index = st.claims.extended_index
    for index, claim in st.claims.all():
        if is_reserved_for(pod, claim):
            continue
        allocation = st.infos[index].allocation
        if index != extended_index:
            st.claims.claims[index] = await bind_claim(api, claim, allocation, pod, features)
            continue
        if allocation is None and not claim.spec.devices.requests:
            continue  # the node's device plugin serves the pod's extended resources
        if extended_resources.is_special(claim):
            claim, allocation = await _create_extended_claim(api, claim, allocation, pod)
            st.claims.claims[index] = claim  # Unreserve deletes it should binding fail
        if not is_reserved_for(pod, claim):
            claim = await bind_claim(api, claim, allocation, pod, features)
            st.claims.claims[index] = claim
        await _record_extended_claim(api, pod, claim, st.mappings)


async def _create_extended_claim(
    api: ClaimApi, claim: ResourceClaim, allocation: Any, pod: Pod
) -> tuple[ResourceClaim, Any]:
    """Upstream ``createExtendedResourceClaimInAPI``: the claim with its generated name, and the
    allocation still to write (None when an earlier delivery of this placement already wrote it).

    A claim an earlier delivery created for the pod (its binder died after creating it) is taken
    over when it asks for the same devices and holds this allocation or none; any other left-over
    one fails the binding, and the next cycle's PostFilter deletes it (as upstream recovers)."""
    namespace = claim.metadata.namespace
    try:
        existing = extended_resources.find_extended_resource_claim(pod, await api.list(namespace))
    except _Conflict as exc:
        raise PreBindError(str(exc)) from None
    if existing is not None:
        same_requests = existing.spec.devices.requests == claim.spec.devices.requests
        held = existing.status.allocation
        if same_requests and held is None:
            return existing, allocation
        if same_requests and held is not None and _same_devices(held, allocation):
            return existing, None
        raise PreBindError(
            f"claim for extended resources {namespace}/{existing.metadata.name} left from an earlier "
            "attempt does not match this placement"
        )
    meta = msgspec.structs.replace(claim.metadata, name="", uid="", resource_version="")
    status = msgspec.structs.replace(claim.status, allocation=None)
    try:
        created = await api.create(msgspec.structs.replace(claim, metadata=meta, status=status))
    except (PreBindError, _Conflict) as exc:
        raise PreBindError(f"create claim for extended resources {namespace}/: {exc}") from None
    return created, allocation


def _same_devices(held: Any, allocation: Any) -> bool:
    if allocation is None:
        return False
    devices = [(r.request, r.driver, r.pool, r.device) for r in held.devices.results]
    return devices == [(r.request, r.driver, r.pool, r.device) for r in allocation.devices.results]


async def _record_extended_claim(
    api: ClaimApi, pod: Pod, claim: ResourceClaim, mappings: list[ContainerExtendedResourceRequest]
) -> None:
    """Upstream ``patchPodExtendedResourceClaimStatus``: ``status.extendedResourceClaimStatus``."""
    meta = pod.metadata
    if not mappings:
        raise PreBindError(
            f"nil or empty request mappings, no update of pod {meta.namespace}/{meta.name} "
            "ExtendedResourceClaimStatus"
        )
    status = {
        "requestMappings": [msgspec.to_builtins(m) for m in mappings],
        "resourceClaimName": claim.metadata.name,
    }
    try:
        await api.patch_pod_status(pod, {"status": {"extendedResourceClaimStatus": status}})
    except (PreBindError, _Conflict) as exc:
        raise PreBindError(
            f"update pod {meta.namespace}/{meta.name} ExtendedResourceClaimStatus: {exc}"
        ) from None


async def unreserve_claims(api: ClaimApi, st: DRAState, pod: Pod) -> list[str]:
    """Upstream Unreserve's API writes: the pod leaves ``reservedFor`` of every allocated claim the
    binding cycle reserved for it (a strategic merge patch deleting the entry by uid, with the
    claim's uid as precondition, so no resourceVersion is needed); the allocation stays. Returns
    the errors (upstream logs them: the pod's next attempt finds the claim as it is)."""
    errors = []
    for _, claim in st.claims.all_user_claims():
        if claim.status.allocation is None or not is_reserved_for(pod, claim):
            continue
        body = {
            "metadata": {"uid": claim.metadata.uid},
            "status": {"reservedFor": [{"$patch": "delete", "uid": pod.metadata.uid}]},
        }
        try:
            await api.patch(claim, body, status=True, content_type=STRATEGIC_MERGE_PATCH)
        except (PreBindError, _Conflict) as exc:
            errors.append(f"unreserve {_ref(claim)}: {exc}")
    extended = st.claims.extended()
    if extended is not None and not extended_resources.is_special(extended):
        try:
            await delete_claim(api, extended)
        except PreBindError as exc:
            errors.append(f"delete {_ref(extended)}: {exc}")
    return errors


async def delete_claim(api: ClaimApi, claim: ResourceClaim) -> None:
    """Upstream ``deleteClaim``: drop the delete-protection finalizer (re-reading the claim on a
    conflict), then delete the claim. A claim already gone is fine."""
    for attempt in range(CONFLICT_RETRIES):
        if attempt:
            await asyncio.sleep(CONFLICT_BACKOFF)
            try:
                claim = await api.get(claim.metadata.namespace, claim.metadata.name)
            except NotFound:
                return
        finalizers = claim.metadata.finalizers
        if FINALIZER not in finalizers:
            break
        body = {
            "metadata": {
                "resourceVersion": claim.metadata.resource_version,
                "finalizers": [f for f in finalizers if f != FINALIZER],
            }
        }
        try:
            claim = await api.patch(claim, body, status=False)
            break
        except _Conflict:
            continue
        except NotFound:
            return
        except PreBindError as exc:
            raise PreBindError(f"update resourceclaim {_ref(claim)}: {exc}") from None
    else:
        raise PreBindError(f"update resourceclaim {_ref(claim)}: conflict after {CONFLICT_RETRIES} tries")
    try:
        await api.delete(claim)
    except NotFound:
        pass
    except _Conflict as exc:
        raise PreBindError(str(exc)) from None


async def deallocate(api: ClaimApi, claim: ResourceClaim) -> ResourceClaim:
    """PostFilter's write: no allocation, no reservations, no device status (upstream ``UpdateStatus``
    of the claim as PostFilter saw it, hence the resourceVersion precondition)."""
    body = {
        "metadata": {"resourceVersion": claim.metadata.resource_version},
        "status": {"allocation": None, "reservedFor": None, "devices": None},
    }
    try:
        return await api.patch(claim, body, status=True)
    except _Conflict as exc:
        raise PreBindError(str(exc)) from None


# --- binding conditions (DRADeviceBindingConditions) -----------------------------------------------


def _device_status_conditions(
    claim: ResourceClaim, driver: str, pool: str, device: str
) -> dict[str, str] | None:
    for status in claim.status.devices:
        if (status.driver, status.pool, status.device) == (driver, pool, device):
            return {c.type: c.status for c in status.conditions}
    return None


def claim_ready_for_binding(claim: ResourceClaim) -> bool:
    """Upstream ``isClaimReadyForBinding``: all binding conditions true; BindingFailed when a failure
    condition is true."""
    allocation = claim.status.allocation
    if allocation is None:
        return False
    for result in allocation.devices.results:
        if not result.binding_conditions:
            continue
        conditions = _device_status_conditions(claim, result.driver, result.pool, result.device)
        if conditions is None:
            return False
        for name in result.binding_failure_conditions:
            if conditions.get(name) == "True":
                failed = next(
                    c
                    for s in claim.status.devices
                    for c in s.conditions
                    if c.type == name and s.device == result.device
                )
                raise BindingFailed(
                    f"device binding failed: claim={claim.metadata.name}, reason={failed.reason or ''}, "
                    f'message="{failed.message or ""}"'
                )
        if any(conditions.get(name) != "True" for name in result.binding_conditions):
            return False
    return True


def claim_timed_out(claim: ResourceClaim, binding_timeout: float, now: float | None = None) -> bool:
    """Upstream ``isClaimTimeout``: allocated longer than the binding timeout ago with devices that
    have binding conditions."""
    allocation = claim.status.allocation
    if allocation is None or allocation.allocation_timestamp is None:
        return False
    if not any(r.binding_conditions for r in allocation.devices.results):
        return False
    stamp = datetime.datetime.fromisoformat(
        allocation.allocation_timestamp.replace("Z", "+00:00")
    ).timestamp()
    return stamp + binding_timeout < (time.time() if now is None else now)


def has_binding_conditions(claims: Sequence[ResourceClaim]) -> bool:
    return any(
        r.binding_conditions
        for c in claims
        if c.status.allocation is not None
        for r in c.status.allocation.devices.results
    )


async def wait_for_binding_conditions(api: ClaimApi, st: DRAState, timeout: float, interval: float) -> None:
    """Poll the claims until every binding condition is true (upstream ``isPodReadyForBinding``)."""
    deadline = time.monotonic() + timeout
    while True:
        ready = True
        for index, claim in st.claims.all():
            if extended_resources.is_special(claim):
                continue  # never created: the node's device plugin serves the extended resources
            current = await api.get(claim.metadata.namespace, claim.metadata.name)
            st.claims.claims[index] = current
            if not claim_ready_for_binding(current):
                if claim_timed_out(current, timeout):
                    raise PreBindError(f"device binding timeout: claim={current.metadata.name}")
                ready = False
                break
        if ready:
            return
        if time.monotonic() + interval > deadline:
            raise PreBindError("device binding timeout: context deadline exceeded")
        await asyncio.sleep(interval)
