"""DefaultBinder against a loopback HTTP server that answers like the real kube-apiserver 1.36.2
(bodies from the captures in ``../shared/apiserver-1.36`` beside the repository, copied to
``tests/kubesim/captures``: 05b binding 201, 05h same-node 409).

Upstream ``default_binder_test.go`` checks the Binding sent and that an API error becomes an error
status; the same two cases are here, over real HTTP through ksched's API client (``ksched.client``).
The end-to-end test against kubesim belongs to the binder service.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from aiohttp import web
from kubernetes_asyncio.client import Configuration

from ksched.client.rest import Client
from ksched.framework.cycle_state import CycleState
from ksched.framework.podinfo import PodInfo
from ksched.framework.status import Code
from ksched.framework.testing import FakeHandle, make_pod
from ksched.plugins import defaultbinder
from ksched.plugins.defaultbinder import BindError, DefaultBinder, binding_body, new

BINDING_201 = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}
BINDING_409 = {
    "kind": "Status",
    "apiVersion": "v1",
    "metadata": {},
    "status": "Failure",
    "message": (
        'Operation cannot be fulfilled on pods/binding "foo": pod foo is already assigned to node "node-a"'
    ),
    "reason": "Conflict",
    "details": {"name": "foo", "kind": "pods/binding"},
    "code": 409,
}
TEST_NODE = "foohost.kubernetes.mydomain.com"


@dataclass
class FakeAPIServer:
    """Answers POST .../pods/{name}/binding with a scripted (status, body) and records requests."""

    url: str = ""
    reply: tuple[int, bytes] = (201, json.dumps(BINDING_201).encode())
    requests: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    delay: float = 0.0
    """Seconds before answering (a loaded API server)."""

    drop_first: int = 0
    """Requests answered by closing the connection (an API server going away mid-request)."""

    async def handle(self, request: web.Request) -> web.Response:
        self.requests.append((request.path, await request.json()))
        if len(self.requests) <= self.drop_first:
            assert request.transport is not None
            request.transport.close()
            raise ConnectionResetError("dropped")
        await asyncio.sleep(self.delay)
        status, body = self.reply
        return web.Response(status=status, body=body, content_type="application/json")


@pytest.fixture
async def apiserver() -> AsyncIterator[FakeAPIServer]:
    server = FakeAPIServer()
    app = web.Application()
    app.router.add_post("/api/v1/namespaces/{namespace}/pods/{name}/binding", server.handle)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    server.url = f"http://127.0.0.1:{port}"
    try:
        yield server
    finally:
        await runner.cleanup()


@pytest.fixture
async def api_client(apiserver: FakeAPIServer) -> AsyncIterator[Client]:
    async with Client(Configuration(host=apiserver.url)) as client:
        yield client


def pod_foo() -> PodInfo:
    return PodInfo(make_pod("foo", "ns", uid="foo-uid"))


async def test_successful(apiserver: FakeAPIServer, api_client: Client) -> None:
    binder = new(None, FakeHandle(client=api_client))
    status = await binder.bind(CycleState(), pod_foo(), TEST_NODE)
    assert status is None
    assert apiserver.requests == [
        (
            "/api/v1/namespaces/ns/pods/foo/binding",
            {
                "apiVersion": "v1",
                "kind": "Binding",
                "metadata": {"name": "foo", "namespace": "ns", "uid": "foo-uid"},
                "target": {"kind": "Node", "name": TEST_NODE},
            },
        )
    ]


async def test_binding_error_carries_the_api_status(apiserver: FakeAPIServer, api_client: Client) -> None:
    apiserver.reply = (409, json.dumps(BINDING_409).encode())
    status = await DefaultBinder(FakeHandle(client=api_client)).bind(CycleState(), pod_foo(), "node-a")
    assert status is not None and status.code == Code.ERROR
    assert status.message == BINDING_409["message"]
    assert isinstance(status.error, BindError)
    assert (status.error.code, status.error.reason) == (409, "Conflict")


async def test_non_status_error_body(apiserver: FakeAPIServer, api_client: Client) -> None:
    apiserver.reply = (503, b"upstream connect error")
    status = await DefaultBinder(FakeHandle(client=api_client)).bind(CycleState(), pod_foo(), "node-a")
    assert status is not None and status.code == Code.ERROR
    assert isinstance(status.error, BindError) and status.error.code == 503
    assert status.message == "the server responded with 503 Service Unavailable: upstream connect error"


async def test_unreachable_server_is_an_error_status(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(defaultbinder, "BIND_RETRY_SECONDS", 0.5)
    async with Client(Configuration(host="http://127.0.0.1:9")) as client:
        status = await DefaultBinder(FakeHandle(client=client)).bind(CycleState(), pod_foo(), "node-a")
    assert status is not None and status.code == Code.ERROR
    assert "binding ns/foo to node-a" in status.message


async def test_a_binding_whose_connection_failed_is_sent_again_until_answered(
    apiserver: FakeAPIServer, api_client: Client
) -> None:
    """The API server closes the connection without an answer (it may have applied the Binding: a
    restart) on the first two requests, the client's own resend included: the Binding is sent again
    until it answers, here 409 "already assigned" to this very node, which the binder takes as bound
    (before, the binding failed, the informer forgot the placement and the pod was decided again)."""
    apiserver.drop_first = 2
    apiserver.reply = (409, json.dumps(BINDING_409).encode())
    status = await DefaultBinder(FakeHandle(client=api_client)).bind(CycleState(), pod_foo(), "node-a")
    assert len(apiserver.requests) == 3
    assert status is not None and isinstance(status.error, BindError) and status.error.code == 409
    assert 'already assigned to node "node-a"' in status.message


async def test_without_api_client_is_an_error_status() -> None:
    status = await DefaultBinder(FakeHandle()).bind(CycleState(), pod_foo(), "node-a")
    assert status is not None and status.code == Code.ERROR
    assert "needs a ksched.client Client" in status.message


async def test_a_slow_binding_is_awaited(apiserver: FakeAPIServer, api_client: Client) -> None:
    """The server may apply a binding the client stopped waiting for; the pod decided again would meet
    "already assigned" (make chaos saw it with a 10 s timeout), so no timeout, as client-go's."""
    apiserver.delay = 10.5  # past Client.request's default timeout
    status = await DefaultBinder(FakeHandle(client=api_client)).bind(CycleState(), pod_foo(), "node-a")
    assert status is None


def test_binding_body_omits_an_empty_uid() -> None:
    pod = PodInfo(make_pod("foo", "ns", uid="x"))
    pod.pod.metadata.uid = ""
    assert binding_body(pod, "n")["metadata"] == {"name": "foo", "namespace": "ns"}
