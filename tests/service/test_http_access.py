"""Who may read a service's HTTP endpoints (issue 21 item 4): the probes are open; /metrics and
/debug need the bearer token when one is set (--http-token / KSCHED_HTTP_TOKEN), and without one
are served on a loopback address only. Every service passes the token from its command line."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

import aiohttp
import pytest
from ksched_binder import cli as binder_cli
from ksched_informer import cli as informer_cli
from ksched_queue import cli as queue_cli
from ksched_queue.server import QueueServer
from ksched_queue.settings import QueueSettings
from ksched_scheduler import cli as scheduler_cli

from ksched.config import default_config
from ksched.service import command, lifecycle
from ksched.service.http import HealthServer, is_loopback
from ksched.service.options import CommonOptions

PATHS = ["/metrics", "/debug", "/healthz", "/livez", "/readyz"]


async def statuses(port: int, headers: dict[str, str] | None = None) -> dict[str, int]:
    async with aiohttp.ClientSession(headers=headers or {}) as http:
        out = {}
        for path in PATHS:
            async with http.get(f"http://127.0.0.1:{port}{path}") as resp:
                out[path] = resp.status
        return out


@pytest.fixture
async def serve() -> AsyncIterator[Callable[..., Any]]:
    started: list[HealthServer] = []

    async def start(host: str, token: str | None = None) -> int:
        server = HealthServer(host, 0, debug=lambda: {"pods": ["team-a/secret-project"]}, token=token)
        started.append(server)
        return await server.start()

    yield start
    for server in started:
        await server.stop()


def test_loopback_addresses() -> None:
    assert all(is_loopback(h) for h in ("127.0.0.1", "127.8.9.1", "::1", "localhost"))
    assert not any(is_loopback(h) for h in ("0.0.0.0", "", "::", "10.0.0.7", "ksched-queue"))


async def test_loopback_without_a_token_serves_everything(serve: Callable[..., Any]) -> None:
    assert set((await statuses(await serve("127.0.0.1"))).values()) == {200}


async def test_every_address_without_a_token_serves_only_the_probes(serve: Callable[..., Any]) -> None:
    port = await serve("0.0.0.0")
    assert await statuses(port) == {
        "/metrics": 403,
        "/debug": 403,
        "/healthz": 200,
        "/livez": 200,
        "/readyz": 200,
    }


async def test_a_token_is_required_for_metrics_and_debug(serve: Callable[..., Any]) -> None:
    port = await serve("0.0.0.0", token="s3cret")
    probes = {"/healthz": 200, "/livez": 200, "/readyz": 200}
    for headers in (
        None,
        {"Authorization": "Bearer wrong"},
        {"Authorization": "Basic s3cret"},
        {"Authorization": "Bearer ünï"},
    ):
        assert await statuses(port, headers) == {"/metrics": 401, "/debug": 401, **probes}, headers
    assert set((await statuses(port, {"Authorization": "Bearer s3cret"})).values()) == {200}


@pytest.mark.parametrize(
    "cli", [informer_cli, scheduler_cli, binder_cli, queue_cli], ids=lambda c: c.COMMAND.name
)
def test_each_service_takes_the_token_from_the_environment(monkeypatch: pytest.MonkeyPatch, cli: Any) -> None:
    seen: list[HealthServer] = []

    async def serve(service: Any) -> int:
        seen.append(service.health)
        return 0

    monkeypatch.setattr(command, "serve", serve)
    monkeypatch.setenv("KSCHED_HTTP_TOKEN", "from-env")
    assert cli.main(["--http-host", "0.0.0.0"]) == 0
    assert [(h.host, h.token) for h in seen] == [("0.0.0.0", "from-env")]


def test_the_flag_beats_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[HealthServer] = []

    async def serve(service: Any) -> int:
        seen.append(service.health)
        return 0

    monkeypatch.setattr(command, "serve", serve)
    monkeypatch.setenv("KSCHED_HTTP_TOKEN", "from-env")
    assert queue_cli.main(["--http-token", "from-flag", "--no-leader-elect"]) == 0
    assert [h.token for h in seen] == ["from-flag"]


async def test_the_queue_serves_with_its_token(nats_url: str, bus_prefix: str) -> None:
    common = CommonOptions(
        identity="queue", nats=nats_url, subject_prefix=bus_prefix, http_host="0.0.0.0", http_token="q-token"
    )
    settings = QueueSettings(scheduler_config=default_config(), common=common, bootstrap_timeout=0.5)
    stop = asyncio.Event()
    server = QueueServer(settings)
    task = asyncio.create_task(lifecycle.serve(server, stop))
    try:
        await asyncio.wait_for(server.started.wait(), 15)
        port = server.port
        assert (await statuses(port))["/metrics"] == 401
        assert (await statuses(port, {"Authorization": "Bearer q-token"}))["/metrics"] == 200
    finally:
        stop.set()
        await asyncio.wait_for(task, 15)
