"""The ``ksched ui`` process's plumbing over a real nats-server and real HTTP: the queue's listing
through ``P.queue.list`` (a real queue service fed by a fake informer), trace events turned into
server-sent events, the page's files from the package, and the token guard of its HTTP port."""

from __future__ import annotations

import asyncio
import fnmatch
import json
import tomllib
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest
from ksched_queue.clock import SystemClock
from ksched_queue.service import QueueService
from ksched_queue.settings import QueueSettings, build_core
from ksched_ui.hub import Hub
from ksched_ui.options import UiOptions
from ksched_ui.service import UiService, static_file

from ksched.aio import cancel_and_wait
from ksched.bus.messages import PendingPodAction
from ksched.service.http import TOKEN_COOKIE, HealthServer
from ksched.service.options import CommonOptions
from ksched.tracing import Tracer
from tests.fixtures.nats import BusFactory
from tests.queue.fake_informer import FakeInformer
from tests.queue.testing import pod, settings


def test_hub_keeps_the_latest_view_and_every_traced_pod() -> None:
    hub = Hub()
    hub.publish("cluster", "c1")
    assert not hub.watched.is_set()  # no page: nothing is built, the queue is not asked
    early = hub.subscribe()
    assert hub.watched.is_set()
    assert early.ready.is_set() and early.take() == [("cluster", "c1")]  # the latest on subscribe
    hub.publish("queue", "q1")
    hub.publish("queue", "q2")  # a slow page gets the newest only
    hub.notify(["default/a"])
    hub.notify(["default/b", "default/a"])  # keys accumulate
    assert early.take() == [("queue", "q2"), ("trace", '["default/a", "default/b"]')]
    assert not early.ready.is_set() and early.take() == []
    other = hub.subscribe()
    hub.unsubscribe(other)
    assert hub.watched.is_set()  # one page is still open
    hub.close()
    assert early.closed and early.ready.is_set() and not hub.subscribers and not hub.watched.is_set()


@pytest.fixture
async def informer(bus_factory: BusFactory) -> FakeInformer:
    fake = FakeInformer(await bus_factory(name="informer"))
    await fake.start()
    return fake


@pytest.fixture
async def ui(bus_factory: BusFactory, nats_url: str, informer: FakeInformer) -> AsyncIterator[UiService]:
    """A UI on a free loopback port (the queue listed at least every 0.5 s), a real queue holding
    two pods, fed by a fake informer, and no trace stream."""
    prefix = (await bus_factory(name="probe")).subjects.prefix
    informer.list_pending(pod("web-1"), pod("gated", gates=["example.com/wait"]))
    base = settings()
    queue_settings = QueueSettings(
        scheduler_config=base.scheduler_config, bootstrap_timeout=2.0, bootstrap_retry=0.05
    )
    queue = QueueService(
        queue_settings, build_core(queue_settings, SystemClock()), await bus_factory(name="queue")
    )
    await queue.start()
    options = UiOptions(
        CommonOptions(identity="ui-test", nats=nats_url, http_port=0, subject_prefix=prefix),
        queue_refresh=0.5,
    )
    service = UiService(options)
    await service.start()
    try:
        yield service
    finally:
        await service.stop()
        await queue.stop()


async def test_queue_listing_and_page_files_over_http(ui: UiService) -> None:
    base = f"http://127.0.0.1:{ui.port}"
    async with aiohttp.ClientSession() as http:
        for _ in range(50):
            async with http.get(f"{base}/api/queue") as r:
                view = await r.json()
            if view["available"] and view["matched"] == 2:
                break
            await asyncio.sleep(0.1)
        assert {(p["key"], p["queue"]) for p in view["pods"]} == {
            ("default/web-1", "active"),
            ("default/gated", "gated"),
        }
        assert view["counts"]["gated"] == 1
        async with http.get(f"{base}/") as r:
            assert r.status == 200 and r.content_type == "text/html"
            assert await r.read() == static_file("index.html")
        async with http.get(f"{base}/static/ui.js") as r:
            assert r.status == 200 and r.content_type == "application/javascript"
        async with http.get(f"{base}/static/secret.txt") as r:
            assert r.status == 404
        async with http.get(f"{base}/api/search", params={"q": "WEB"}) as r:
            assert await r.json() == ["default/web-1"]
        async with http.get(f"{base}/api/pod", params={"key": "default/gated"}) as r:
            page = await r.json()
        assert page["queue"]["queue"] == "gated" and page["reason"] == "gated by SchedulingGates"
        assert page["attempts"] == []  # no trace stream yet
        async with http.get(f"{base}/api/pod", params={"key": ""}) as r:
            assert r.status == 400 and "namespace/name" in await r.text()
        async with http.get(f"{base}/api/cluster") as r:
            assert (await r.json())["synced"] is False  # no informer to follow


async def read_events(response: aiohttp.ClientResponse, want: str) -> list[object]:
    """Server-sent events until one named ``want`` arrives; its data, and the names before."""
    name = ""
    async for raw in response.content:
        line = raw.decode().rstrip("\n")
        if line.startswith("event: "):
            name = line[len("event: ") :]
        elif line.startswith("data: ") and name == want:
            return [json.loads(line[len("data: ") :])]
    raise AssertionError(f"the stream ended before a {want!r} event")


async def test_the_queue_view_is_pushed_again_without_trace_events(
    ui: UiService, informer: FakeInformer
) -> None:
    """A pod whose moves were not traced (sampling, a missed event) still shows within
    ``--queue-refresh``: the page gets a fresh listing without any trace event."""
    async with aiohttp.ClientSession() as http, http.get(f"http://127.0.0.1:{ui.port}/events") as stream:

        async def listed() -> set[str]:
            (view,) = await read_events(stream, "queue")
            assert isinstance(view, dict)
            return {p["key"] for p in view["pods"]}

        async def until(keys: set[str]) -> None:
            while await listed() != keys:
                pass

        await asyncio.wait_for(until({"default/web-1", "default/gated"}), 10)
        await informer.pod(PendingPodAction.ADD, pod("late"))
        await asyncio.wait_for(until({"default/web-1", "default/gated", "default/late"}), 10)


async def test_trace_events_reach_the_page_as_server_sent_events(
    ui: UiService, bus_factory: BusFactory
) -> None:
    tracer = Tracer("queue", "queue-test", enabled=True)
    bus = await bus_factory(name="tracer")
    tracer.start(bus)
    async with aiohttp.ClientSession() as http, http.get(f"http://127.0.0.1:{ui.port}/events") as stream:
        assert stream.headers["Content-Type"] == "text/event-stream"
        (queue,) = await asyncio.wait_for(read_events(stream, "queue"), 10)
        assert isinstance(queue, dict) and "counts" in queue

        # the UI follows the trace stream once it exists: emit until the event comes through
        async def emit() -> None:
            while True:
                tracer.emit(
                    "queued", "t1", "uid-web-1", "default", "web-1", ts=1.0, details={"queue": "active"}
                )
                await asyncio.sleep(0.5)

        emitter = asyncio.create_task(emit())
        try:
            (keys,) = await asyncio.wait_for(read_events(stream, "trace"), 20)
        finally:
            await cancel_and_wait(emitter)
    assert keys == ["default/web-1"]
    assert "default/web-1" in ui.recent
    await tracer.close()


async def test_a_browser_logs_in_once_with_the_token() -> None:
    async def page(request: aiohttp.web.Request) -> aiohttp.web.Response:
        return aiohttp.web.Response(text="the page")

    server = HealthServer(
        "127.0.0.1", 0, token="s3cret", routes=[aiohttp.web.get("/", page)], browser_login=True
    )
    port = await server.start()
    base = f"http://127.0.0.1:{port}"
    try:
        async with aiohttp.ClientSession() as http:
            async with http.get(f"{base}/") as r:
                assert r.status == 401
            async with http.get(f"{base}/?token=wrong", allow_redirects=False) as r:
                assert r.status == 401
            async with http.get(f"{base}/readyz") as r:
                assert r.status == 200  # probes stay open
            async with http.get(f"{base}/?token=s3cret&x=1", allow_redirects=False) as r:
                assert r.status == 303 and r.headers["Location"] == "/?x=1"
                cookie = r.cookies[TOKEN_COOKIE]
                assert cookie.value == "s3cret" and cookie["httponly"] and cookie["samesite"] == "Strict"
            async with http.get(f"{base}/", cookies={TOKEN_COOKIE: "s3cret"}) as r:
                assert r.status == 200 and await r.text() == "the page"
            async with http.get(f"{base}/metrics", cookies={TOKEN_COOKIE: "wrong"}) as r:
                assert r.status == 401
            async with http.get(f"{base}/", headers={"Authorization": "Bearer s3cret"}) as r:
                assert r.status == 200
    finally:
        await server.stop()


async def test_without_browser_login_the_cookie_is_no_credential() -> None:
    server = HealthServer("127.0.0.1", 0, token="s3cret")
    port = await server.start()
    try:
        async with aiohttp.ClientSession() as http:
            async with http.get(f"http://127.0.0.1:{port}/metrics", cookies={TOKEN_COOKIE: "s3cret"}) as r:
                assert r.status == 401
            async with http.get(f"http://127.0.0.1:{port}/metrics?token=s3cret", allow_redirects=False) as r:
                assert r.status == 401
    finally:
        await server.stop()


def test_static_files_are_package_data() -> None:
    html = static_file("index.html").decode()
    assert 'src="static/ui.js"' in html and 'href="static/ui.css"' in html
    assert b"EventSource" in static_file("ui.js")


def test_pip_install_carries_the_page() -> None:
    """Every file of the page is package data in pyproject.toml (a wheel holds it, not only a checkout)."""
    root = Path(__file__).resolve().parents[2]
    patterns = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    static = root / "services/ui/ksched_ui/static"
    names = sorted(p.name for p in static.iterdir())
    assert {"index.html", "ui.css", "ui.js"} <= set(names)
    for name in names:
        assert any(fnmatch.fnmatch(f"static/{name}", pattern) for pattern in patterns["ksched_ui"]), name
