"""DefaultBinder: bind the pod by POSTing a Binding to ``pods/<name>/binding`` (upstream
``defaultbinder``), with the handle's API client (:class:`ksched.client.rest.Client`).

The body is sent as JSON bytes and the HTTP status checked here, with :meth:`Client.request
<ksched.client.rest.Client.request>` (429 retried as client-go does).
An API failure comes back as an Error status whose error is a :class:`BindError` carrying the HTTP
code, the API reason and message, so the binder service can decide what a 409 means.
"""

from __future__ import annotations

import asyncio
import json
import time
from http import HTTPStatus
from typing import Any

import aiohttp
import msgspec

from ksched.api.kinds import POD
from ksched.client.rest import Client
from ksched.framework.cycle_state import CycleState
from ksched.framework.handle import Handle
from ksched.framework.interfaces import BindPlugin
from ksched.framework.podinfo import PodInfo
from ksched.framework.status import Status

NAME = "DefaultBinder"


class BindError(RuntimeError):
    """The API server refused the binding; ``str()`` is the API message (as client-go's StatusError)."""

    def __init__(self, message: str, *, code: int = 0, reason: str = "") -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason

    @classmethod
    def from_response(cls, code: int, http_reason: str, body: bytes) -> BindError:
        """From an error response: the Status object's message and reason when the body is one."""
        try:
            status = json.loads(body)
        except ValueError:
            status = None
        if isinstance(status, dict) and status.get("message"):
            return cls(
                str(status["message"]),
                code=int(status.get("code") or code),
                reason=str(status.get("reason", "")),
            )
        text = body.decode(errors="replace").strip()
        detail = f": {text}" if text else ""
        return cls(f"the server responded with {code} {http_reason}{detail}", code=code, reason=http_reason)


def binding_body(pod: PodInfo, node_name: str) -> dict[str, Any]:
    """The v1 Binding upstream sends: the pod's namespace, name and uid, and the target node."""
    meta: dict[str, Any] = {"name": pod.name, "namespace": pod.namespace}
    if pod.uid:
        meta["uid"] = pod.uid
    return {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": meta,
        "target": {"kind": "Node", "name": node_name},
    }


_BINDING = msgspec.json.Encoder()
BIND_RETRY_SECONDS = 30.0
"""How long a Binding whose connection failed is sent again (with backoff, 0.1 s up to 2 s) before the
binding fails: its outcome is unknown until the API server answers."""


def binding_path(namespace: str, name: str) -> str:
    """The pods/binding subresource of ``namespace/name`` (path segments escaped as the typed client does)."""
    return POD.object_path(namespace, name, "binding")


class DefaultBinder:
    name = NAME

    def __init__(self, handle: Handle) -> None:
        self._handle = handle

    def _api_client(self) -> Client:
        client = self._handle.client
        if not isinstance(client, Client):
            raise RuntimeError(f"{NAME} needs a ksched.client Client, the handle has {type(client).__name__}")
        return client

    async def bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        """POST the Binding; None on 2xx, else an Error status with the API error text."""
        try:
            api = self._api_client()
        except RuntimeError as exc:
            return Status.as_error(exc)
        # no timeout, as client-go's: a binding given up on may still be applied by the server, and
        # the pod decided again would then meet "already assigned" (seen in make chaos)
        path = binding_path(pod.namespace, pod.name)
        binding = _BINDING.encode(binding_body(pod, node_name))
        deadline = time.monotonic() + BIND_RETRY_SECONDS
        pause = 0.1
        while True:
            try:
                code, body = await api.request("POST", path, binding, timeout=None)
                break
            except (TimeoutError, aiohttp.ClientError, OSError) as exc:
                # The connection failed: the Binding may have been applied with its answer lost (the
                # API server restarting). Sent again until the server answers: a second Binding of a
                # pod bound to this node answers 409 naming it, which the binder takes as bound.
                if time.monotonic() + pause > deadline:
                    return Status.as_error(BindError(f"binding {pod.key} to {node_name}: {exc}"))
                await asyncio.sleep(pause)
                pause = min(2.0, pause * 2)
        if 200 <= code < 300:
            return None
        return Status.as_error(BindError.from_response(code, _phrase(code), body))


def _phrase(code: int) -> str:
    """The HTTP reason phrase of ``code`` ("" for one HTTP does not define)."""
    try:
        return HTTPStatus(code).phrase
    except ValueError:
        return ""


# The extension points DefaultBinder implements, checked by mypy against ksched.framework.interfaces
# (upstream's ``var _ fwk.<Point>Plugin = &DefaultBinder{}`` lines).
_BIND: type[BindPlugin] = DefaultBinder


def new(args: Any, handle: Handle) -> DefaultBinder:
    return DefaultBinder(handle)
