"""PreBind's API half (upstream ``BindPodVolumes``): write the assumed bindings to the API server
and wait until the PV controller has completed them.

Runs in the binder process, with its API client (:class:`ksched.client.rest.Client`):

* each static binding becomes a JSON merge patch of the PV (``spec.claimRef`` and the
  ``bound-by-controller`` annotation) carrying the assumed ``metadata.resourceVersion``, so a PV
  that changed since the scheduling cycle makes the update fail with 409 Conflict, as upstream's
  ``Update`` of the whole object does (a patch keeps fields ksched's structs do not model);
* each dynamic provisioning becomes a merge patch setting the PVC's selected-node annotation,
  with the same resourceVersion precondition;
* then the objects are read back from the API every ``poll_interval`` seconds (upstream polls its
  informer caches every second) until every claim is fully bound, a check fails, or
  ``timeout`` (VolumeBindingArgs.bindTimeoutSeconds) passes.
"""

from __future__ import annotations

import asyncio
import json
import time
from http import HTTPStatus
from typing import Any, TypeVar

import aiohttp
import msgspec

from ksched.api.base import DECODE_ERRORS
from ksched.api.core import Node, PersistentVolume, PersistentVolumeClaim, Pod
from ksched.api.kinds import CSI_NODE, NODE, PERSISTENT_VOLUME, PERSISTENT_VOLUME_CLAIM, POD, decode_lenient
from ksched.api.storage import CSINode
from ksched.client.rest import MERGE_PATCH, Client
from ksched.plugins.helper.storage import (
    ANN_BOUND_BY_CONTROLLER,
    ANN_SELECTED_NODE,
    check_node_affinity,
    claim_key,
    is_pvc_fully_bound,
)
from ksched.plugins.volumebinding.binder import (
    BinderError,
    BindingInfo,
    PodVolumes,
    try_translate_pv_to_csi,
)

DEFAULT_POLL_INTERVAL = 1.0

T = TypeVar("T")


class PreBindError(RuntimeError):
    """Binding volumes failed; the pod goes back to the scheduling queue."""


class ApiCallError(RuntimeError):
    """An API call answered with an error status; ``str()`` is the API's message."""

    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = code

    @property
    def not_found(self) -> bool:
        return self.code == 404


async def _call(
    client: Client, method: str, path: str, what: str, body: Any = None, content_type: str = MERGE_PATCH
) -> bytes:
    """One request (no timeout, as the generated client had); the body, or ApiCallError for 4xx/5xx."""
    try:
        code, data = await client.request(method, path, body, content_type, timeout=None)
    except (TimeoutError, aiohttp.ClientError, OSError) as exc:
        raise ApiCallError(f"{what}: {exc}", 0) from None
    if 200 <= code < 300:
        return data
    message = ""
    try:
        status = json.loads(data)
        if isinstance(status, dict):
            message = str(status.get("message") or "")
    except ValueError:
        pass
    if not message:
        message = f"the server responded with {code} {_phrase(code)}".rstrip()
    raise ApiCallError(message, code)


def _phrase(code: int) -> str:
    try:
        return HTTPStatus(code).phrase
    except ValueError:
        return ""


def _decode(body: bytes, kind: type[T], what: str) -> T:
    """``body`` as ``kind``; a ``null`` the API server writes for an empty list (a CSINode driver's
    ``topologyKeys``) taken as absent, as the informer does."""
    try:
        return decode_lenient(body, kind)  # type: ignore[no-any-return]
    except DECODE_ERRORS as exc:
        raise ApiCallError(f"{what}: cannot decode the API answer: {exc}", 0) from None


def pv_patch(pv: PersistentVolume) -> dict[str, Any]:
    """The merge patch that makes the API PV look like the assumed ``pv`` (claimRef + annotation)."""
    ref = pv.spec.claim_ref
    claim_ref: dict[str, Any] | None = None
    if ref is not None:
        claim_ref = msgspec.to_builtins(ref)
        claim_ref.setdefault("fieldPath", None)  # drop a stale fieldPath of an older claimRef
    meta: dict[str, Any] = {}
    if pv.metadata.resource_version:
        meta["resourceVersion"] = pv.metadata.resource_version
    bound_by = pv.metadata.annotations.get(ANN_BOUND_BY_CONTROLLER)
    if bound_by is not None:
        meta["annotations"] = {ANN_BOUND_BY_CONTROLLER: bound_by}
    return {"metadata": meta, "spec": {"claimRef": claim_ref}}


def pvc_patch(pvc: PersistentVolumeClaim) -> dict[str, Any]:
    """The merge patch that sets the assumed PVC's selected-node annotation."""
    meta: dict[str, Any] = {"annotations": {ANN_SELECTED_NODE: pvc.metadata.annotations[ANN_SELECTED_NODE]}}
    if pvc.metadata.resource_version:
        meta["resourceVersion"] = pvc.metadata.resource_version
    return {"metadata": meta}


class VolumeApi:
    """The reads and writes PreBind needs, answering ksched's API structs."""

    def __init__(self, client: Client) -> None:
        self.client = client

    async def _get(self, path: str, what: str) -> bytes:
        return await _call(self.client, "GET", path, what)

    async def patch_pv(self, pv: PersistentVolume) -> PersistentVolume:
        name = pv.metadata.name
        body = await _call(
            self.client,
            "PATCH",
            PERSISTENT_VOLUME.object_path("", name),
            f'updating PersistentVolume "{name}"',
            pv_patch(pv),
        )
        return _decode(body, PersistentVolume, f'PersistentVolume "{name}"')

    async def patch_pvc(self, pvc: PersistentVolumeClaim) -> PersistentVolumeClaim:
        meta = pvc.metadata
        body = await _call(
            self.client,
            "PATCH",
            PERSISTENT_VOLUME_CLAIM.object_path(meta.namespace, meta.name),
            f'updating PersistentVolumeClaim "{claim_key(pvc)}"',
            pvc_patch(pvc),
        )
        return _decode(body, PersistentVolumeClaim, f'PersistentVolumeClaim "{claim_key(pvc)}"')

    async def get_pv(self, name: str) -> PersistentVolume:
        body = await self._get(PERSISTENT_VOLUME.object_path("", name), f"reading PV {name}")
        return _decode(body, PersistentVolume, f'PersistentVolume "{name}"')

    async def get_pvc(self, namespace: str, name: str) -> PersistentVolumeClaim:
        body = await self._get(
            PERSISTENT_VOLUME_CLAIM.object_path(namespace, name),
            f"reading PVC {namespace}/{name}",
        )
        return _decode(body, PersistentVolumeClaim, f'PersistentVolumeClaim "{namespace}/{name}"')

    async def get_node(self, name: str) -> Node:
        body = await self._get(NODE.object_path("", name), f"reading node {name}")
        return _decode(body, Node, f'Node "{name}"')

    async def get_csi_node(self, name: str) -> CSINode | None:
        try:
            body = await self._get(CSI_NODE.object_path("", name), f"reading CSINode {name}")
        except ApiCallError:
            return None  # upstream tolerates a missing CSINode ("TODO: return the error ...")
        return _decode(body, CSINode, f'CSINode "{name}"')

    async def pod_exists(self, namespace: str, name: str) -> None:
        """Raise when the pod is gone (binding is cancelled); other read errors are ignored."""
        try:
            await self._get(POD.object_path(namespace, name), "reading pod")
        except ApiCallError as exc:
            if exc.not_found:
                raise PreBindError(f"pod does not exist any more: {exc}") from None


async def bind_api_update(api: VolumeApi, pod: Pod, pod_volumes: PodVolumes) -> PodVolumes:
    """Upstream ``bindAPIUpdate``: the PV and PVC updates; returns the objects the API answered."""
    key = f"{pod.metadata.namespace}/{pod.metadata.name}"
    if pod_volumes.static_bindings is None:
        raise PreBindError(f'failed to get cached bindings for pod "{key}"')
    if pod_volumes.dynamic_provisions is None:
        raise PreBindError(f'failed to get cached claims to provision for pod "{key}"')
    bindings: list[BindingInfo] = []
    for binding in pod_volumes.static_bindings:
        new_pv = await api.patch_pv(binding.pv)
        bindings.append(BindingInfo(pvc=binding.pvc, pv=new_pv))
    claims: list[PersistentVolumeClaim] = []
    for provision in pod_volumes.dynamic_provisions:
        claims.append(await api.patch_pvc(provision.pvc))
    return PodVolumes(
        static_bindings=bindings,
        dynamic_provisions=[
            msgspec.structs.replace(p, pvc=c)
            for p, c in zip(pod_volumes.dynamic_provisions, claims, strict=True)
        ],
    )


async def check_bindings(api: VolumeApi, pod: Pod, node_name: str, pod_volumes: PodVolumes) -> bool:
    """Upstream ``checkBindings`` on fresh API objects: True when every claim is fully bound,
    PreBindError when binding must be retried by scheduling again."""
    try:
        node = await api.get_node(node_name)
    except ApiCallError as exc:
        raise PreBindError(f'failed to get node "{node_name}": {exc}') from None
    csi_node = await api.get_csi_node(node_name)
    await api.pod_exists(pod.metadata.namespace, pod.metadata.name)
    labels = node.metadata.labels
    for binding in pod_volumes.static_bindings or []:
        try:
            pv = await api.get_pv(binding.pv.metadata.name)
            pvc = await api.get_pvc(binding.pvc.metadata.namespace, binding.pvc.metadata.name)
        except ApiCallError as exc:
            raise PreBindError(f"failed to check binding: {exc}") from None
        _check_affinity(pv, csi_node, labels, node_name)
        if pv.spec.claim_ref is None or not pv.spec.claim_ref.uid:
            raise PreBindError(f'ClaimRef got reset for pv "{pv.metadata.name}"')
        if not is_pvc_fully_bound(pvc):
            return False
    for provision in pod_volumes.dynamic_provisions or []:
        claim = provision.pvc
        try:
            pvc = await api.get_pvc(claim.metadata.namespace, claim.metadata.name)
        except ApiCallError as exc:
            raise PreBindError(f"failed to check provisioning pvc: {exc}") from None
        if not pvc.metadata.annotations:
            raise PreBindError(f'selectedNode annotation reset for PVC "{pvc.metadata.name}"')
        if pvc.metadata.annotations.get(ANN_SELECTED_NODE) != node_name:
            raise PreBindError(f'provisioning failed for PVC "{pvc.metadata.name}"')
        if pvc.spec.volume_name:
            try:
                pv = await api.get_pv(pvc.spec.volume_name)
            except ApiCallError as exc:
                if exc.not_found:
                    return False  # the PV may not be visible yet
                raise PreBindError(f'failed to get pv "{pvc.spec.volume_name}" from cache: {exc}') from None
            _check_affinity(pv, csi_node, labels, node_name)
        if not is_pvc_fully_bound(pvc):
            return False
    return True


def _check_affinity(
    pv: PersistentVolume, csi_node: CSINode | None, labels: dict[str, str], node: str
) -> None:
    try:
        translated = try_translate_pv_to_csi(pv, csi_node)
    except BinderError as exc:
        raise PreBindError(f"failed to translate pv to csi: {exc}") from None
    if not check_node_affinity(translated, labels):
        mismatch = f'node affinity doesn\'t match node "{node}": no matching NodeSelectorTerms'
        raise PreBindError(f'pv "{pv.metadata.name}" {mismatch}')


async def bind_pod_volumes(
    api: VolumeApi,
    pod: Pod,
    node_name: str,
    pod_volumes: PodVolumes,
    *,
    timeout: float,
    poll_interval: float = DEFAULT_POLL_INTERVAL,
) -> None:
    """Upstream ``BindPodVolumes``: update, then poll until bound (PreBindError on failure/timeout)."""
    try:
        updated = await bind_api_update(api, pod, pod_volumes)
    except ApiCallError as exc:
        raise PreBindError(str(exc)) from None
    deadline = time.monotonic() + timeout
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise PreBindError("binding volumes: context deadline exceeded")
        await asyncio.sleep(min(poll_interval, remaining))
        if time.monotonic() > deadline:
            raise PreBindError("binding volumes: context deadline exceeded")
        try:
            if await check_bindings(api, pod, node_name, updated):
                return
        except PreBindError as exc:
            raise PreBindError(f"binding volumes: {exc}") from None
