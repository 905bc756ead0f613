"""PreBind's API half (upstream ``bindClaim`` and the binding-conditions wait), run in the binder
with a kubernetes_asyncio ``ApiClient``.

For each claim not yet reserved for the pod: add the delete-protection finalizer if needed, then
write ``status.allocation`` (when Reserve chose one) and append the pod to ``status.reservedFor``.
Writes are JSON merge patches carrying the ``resourceVersion`` the decision saw, so a claim changed
in between answers 409 Conflict, as upstream's Update does; on a conflict the claim is read again
and the write retried (upstream ``retry.RetryOnConflict``, 5 tries). Then, if a chosen device has
binding conditions, the claims are read every 5 s until all conditions are true, a failure
condition is true, or the binding timeout passes.
"""

from __future__ import annotations

import asyncio
import datetime
import json
import time
from collections.abc import Awaitable, Sequence
from typing import Any

import aiohttp
import msgspec
from kubernetes_asyncio.client import ApiClient, ResourceV1Api
from kubernetes_asyncio.client.exceptions import ApiException

from ksched.api.core import Pod
from ksched.api.resource import FINALIZER, ResourceClaim, ResourceClaimConsumerReference
from ksched.plugins.dynamicresources.claims import is_reserved_for, pod_reference
from ksched.plugins.dynamicresources.cyclestate import DRAState
from ksched.plugins.dynamicresources.features import DRAFeatures

MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
POLL_INTERVAL = 5.0
CONFLICT_RETRIES = 5
CONFLICT_BACKOFF = 0.01


class PreBindError(RuntimeError):
    """PreBind failed; the pod goes back to the queue."""


class BindingFailed(PreBindError):
    """A device's binding failure condition is true (upstream ``ErrDeviceBindingFailed``)."""


class _Conflict(Exception):
    pass


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _ref(claim: ResourceClaim) -> str:
    return f"{claim.metadata.namespace}/{claim.metadata.name}"


class ClaimApi:
    """Reads and merge patches of ResourceClaims, answering ksched's structs."""

    def __init__(self, client: ApiClient) -> None:
        self.api = ResourceV1Api(client)
        # typed without the ``_content_type`` keyword the generated client accepts
        self._patch: Any = self.api.patch_namespaced_resource_claim
        self._patch_status: Any = self.api.patch_namespaced_resource_claim_status

    @classmethod
    def of(cls, client: object | None) -> ClaimApi:
        if not isinstance(client, ApiClient):
            raise PreBindError(
                f"DynamicResources PreBind needs a kubernetes_asyncio ApiClient, got {type(client).__name__}"
            )
        return cls(client)

    async def get(self, namespace: str, name: str) -> ResourceClaim:
        return await _call(self.api.read_namespaced_resource_claim(name, namespace, _preload_content=False))

    async def patch(
        self, claim: ResourceClaim, body: dict[str, Any], status: bool, content_type: str = MERGE_PATCH
    ) -> ResourceClaim:
        call = self._patch_status if status else self._patch
        meta = claim.metadata
        return await _call(
            call(meta.name, meta.namespace, body, _content_type=content_type, _preload_content=False)
        )


async def _call(request: Awaitable[Any]) -> ResourceClaim:
    try:
        resp: aiohttp.ClientResponse = await request
    except (TimeoutError, aiohttp.ClientError, ApiException) as exc:
        raise PreBindError(str(exc)) from None
    try:
        body = await resp.read()
    except (TimeoutError, aiohttp.ClientError) as exc:
        raise PreBindError(str(exc)) from None
    finally:
        resp.release()
    if resp.status == 409:
        raise _Conflict(_message(body, resp))
    if not 200 <= resp.status < 300:
        raise PreBindError(_message(body, resp))
    try:
        return msgspec.json.decode(body, type=ResourceClaim)
    except msgspec.DecodeError as exc:
        raise PreBindError(f"cannot decode the API answer: {exc}") from None


def _message(body: bytes, resp: aiohttp.ClientResponse) -> str:
    try:
        status = json.loads(body)
        if isinstance(status, dict) and status.get("message"):
            return str(status["message"])
    except ValueError:
        pass
    return f"the server responded with {resp.status} {resp.reason or ''}".rstrip()


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
    """Every claim not yet reserved for the pod is bound; the state keeps the updated claims."""
    for index, claim in st.claims.all():
        if is_reserved_for(pod, claim):
            continue
        st.claims.claims[index] = await bind_claim(api, claim, st.infos[index].allocation, pod, features)


async def unreserve_claims(api: ClaimApi, st: DRAState, pod: Pod) -> list[str]:
    """Upstream Unreserve's API writes: the pod leaves ``reservedFor`` of every allocated claim the
    binding cycle reserved for it (a strategic merge patch deleting the entry by uid, with the
    claim's uid as precondition, so no resourceVersion is needed); the allocation stays. Returns
    the errors (upstream logs them: the pod's next attempt finds the claim as it is)."""
    errors = []
    for _, claim in st.claims.all():
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
    return errors


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
