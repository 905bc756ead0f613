"""The ``ksched ui`` process: follows the informer's snapshot deltas with the scheduler's replica
follower, the trace stream with ``ksched trace``'s reader, and asks the queue for its listing
(``P.queue.list``) whenever a trace event says something moved; serves the page, its JSON and a
server-sent-event stream on the service's HTTP port, guarded like /metrics."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections import OrderedDict
from importlib import resources
from typing import Any

import nats.errors
from aiohttp import web

from ksched.bus import endpoints
from ksched.bus.codec import BadMessage
from ksched.bus.connect import Bus, connect
from ksched.bus.messages import QueueListEntry, QueueListReply, QueueListRequest
from ksched.bus.rpc import RequestError
from ksched.bus.subjects import Subjects
from ksched.cache.follower import ReplicaFollower
from ksched.config.types import KubeSchedulerConfiguration
from ksched.service.http import HealthServer
from ksched.service.tasks import TaskGroup
from ksched.tracing import reader

from . import views
from .hub import Hub, Subscriber
from .options import UiOptions

log = logging.getLogger(__name__)

STATIC_FILES = {"ui.js": "application/javascript", "ui.css": "text/css", "index.html": "text/html"}
RECENT_PODS = 10_000
"""Pods with trace events since the UI started, remembered for search (oldest forgotten first)."""
QUEUE_LIMIT = 500
"""Queue entries on the overview (the counts cover every pod)."""
STREAM_PAUSE = 0.1
"""Seconds an event stream waits after a write (a busy cluster's trace keys are sent ~10 times a
second, not once per event)."""
KEEPALIVE = 15.0
"""Seconds between comment lines on an idle event stream (keeps proxies from closing it)."""


def static_file(name: str) -> bytes:
    """A file of the page, from the installed package (package data)."""
    return (resources.files(__package__) / "static" / name).read_bytes()


class UiService:
    def __init__(self, options: UiOptions, config: KubeSchedulerConfiguration | None = None) -> None:
        self.options = options
        self.common = common = options.common
        self.subjects = Subjects(common.subject_prefix)
        self.tasks = TaskGroup()
        self.hub = Hub()
        self.bus: Bus | None = None
        self.follower: ReplicaFollower | None = None
        self.recent: OrderedDict[str, None] = OrderedDict()
        self._cluster_dirty = asyncio.Event()
        self._queue_dirty = asyncio.Event()
        self.port = 0
        self.health = HealthServer(
            common.http_host,
            common.http_port,
            debug=self.debug_state,
            token=common.http_token,
            routes=self.routes(),
            browser_login=True,
        )

    def routes(self) -> list[web.RouteDef]:
        return [
            web.get("/", self._index),
            web.get("/static/{name}", self._static),
            web.get("/api/cluster", self._cluster),
            web.get("/api/queue", self._queue),
            web.get("/api/pod", self._pod),
            web.get("/api/search", self._search),
            web.get("/events", self._events),
        ]

    async def start(self) -> None:
        self.port = await self.health.start()
        log.info("ui %s: http://%s:%d/", self.common.identity, self.common.http_host, self.port)
        self.health.live_checks["tasks"] = lambda: (not self.tasks.failed.is_set(), str(self.tasks.failure))
        self.health.ready_checks["nats"] = lambda: (self.bus is not None and self.bus.ready, "not connected")
        self.health.ready_checks["snapshot"] = lambda: (
            self.follower is not None and self.follower.synced.is_set(),
            "not following the informer's snapshot yet",
        )
        self.bus = await connect(
            self.common.nats,
            name=f"ui:{self.common.identity}",
            subjects=self.subjects,
            **self.common.nats_credentials.connect_kwargs(),
        )
        self.follower = ReplicaFollower(
            self.bus, f"ui-{self.common.identity}", on_change=self._cluster_dirty.set
        )
        self._queue_dirty.set()
        self.tasks.spawn("replica", self.follower.run, restart=True)
        self.tasks.spawn("cluster-view", self._cluster_loop, restart=True)
        self.tasks.spawn("queue-view", self._queue_loop, restart=True)
        self.tasks.spawn("traces", self._trace_loop, restart=True, pause=2.0)

    async def stop(self) -> None:
        self.hub.close()
        await self.tasks.cancel_all()
        if self.bus is not None:
            await self.bus.close()
        await self.health.stop()

    # --- following the bus ------------------------------------------------------------------------------
    async def _cluster_loop(self) -> None:
        """Push the cluster view after each change of the replica while a page is open, at most every
        ``min_interval`` (times the thousands of nodes: a big view is sent less often)."""
        while True:
            await self._cluster_dirty.wait()
            await self.hub.watched.wait()
            self._cluster_dirty.clear()
            view = self.cluster_view()
            self.hub.publish("cluster", json.dumps(view))
            await asyncio.sleep(self.options.min_interval * max(1.0, int(view["nodes"]) / 1000))

    async def _queue_loop(self) -> None:
        """Ask the queue for its listing whenever a trace event (or a new page) says it may have
        changed and a page is open, at most every ``min_interval`` (times the pods it holds per
        2,500), at least every ``queue_refresh``; retry each second while the queue does not answer.
        No page open: not at all."""
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._queue_dirty.wait(), self.options.queue_refresh)
            await self.hub.watched.wait()
            self._queue_dirty.clear()
            view = await self.fetch_queue()
            self.hub.publish("queue", json.dumps(view))
            if not view["available"]:
                self._queue_dirty.set()
                await asyncio.sleep(1.0)
            held = sum(view["counts"].values())  # a listing walks them all: ask a big queue less often
            await asyncio.sleep(self.options.min_interval * max(1.0, held / 2500))

    async def _trace_loop(self) -> None:
        """New trace events: remember the pod (search), tell the pages, re-list the queue."""
        assert self.bus is not None
        async for traced in reader.follow(self.bus, self.subjects.trace_all, new_only=True):
            event = traced.event
            key = f"{event.namespace}/{event.name}"
            self.recent[key] = None
            self.recent.move_to_end(key)
            while len(self.recent) > RECENT_PODS:
                self.recent.popitem(last=False)
            self.hub.notify([key])
            self._queue_dirty.set()

    async def list_queue(self, name_contains: str = "", limit: int = QUEUE_LIMIT) -> QueueListReply:
        assert self.bus is not None
        request = QueueListRequest(requester=self.common.identity, name_contains=name_contains, limit=limit)
        return await self.bus.request(endpoints.QUEUE_LIST, request, timeout=2.0)

    async def fetch_queue(self) -> dict[str, Any]:
        try:
            reply = await self.list_queue()
        except (nats.errors.Error, RequestError, BadMessage, TimeoutError) as exc:
            return views.queue_view(None, f"the queue did not answer ({type(exc).__name__}: {exc})")
        return views.queue_view(reply)

    # --- views --------------------------------------------------------------------------------------
    def cluster_view(self) -> dict[str, Any]:
        follower = self.follower
        if follower is None:
            return {"generation": -1, "synced": False, "nodes": 0, "totals": {}, "zones": []}
        replica = follower.replica
        return views.cluster_view(
            replica.snapshot, generation=replica.generation, synced=follower.synced.is_set()
        )

    def placed_on(self, key: str) -> str:
        """The node ``key`` is bound or assumed on in the replica ("" when it is on none)."""
        if self.follower is None:
            return ""
        for pi, node in self.follower.replica.snapshot.pod_locations.values():
            if pi.key == key:
                return node
        return ""

    async def pod_view(self, namespace: str, name: str) -> dict[str, Any]:
        assert self.bus is not None
        key = f"{namespace}/{name}"
        try:
            history = [t.event for t in await reader.pod_history(self.bus, namespace, name)]
        except reader.NoTraceStream:
            history = []
        queued: QueueListEntry | None = None
        with contextlib.suppress(nats.errors.Error, RequestError, BadMessage, TimeoutError):
            reply = await self.list_queue(name_contains=key, limit=50)
            queued = next((e for e in reply.pods if f"{e.namespace}/{e.name}" == key), None)
        return views.pod_view(namespace, name, history, queued, placed_on=self.placed_on(key))

    def debug_state(self) -> dict[str, object]:
        follower = self.follower
        return {
            "streams": len(self.hub.subscribers),
            "recent_pods": len(self.recent),
            "replica_generation": follower.replica.generation if follower else None,
            "bootstraps": follower.bootstraps if follower else 0,
        }

    # --- HTTP ---------------------------------------------------------------------------------------
    async def _index(self, request: web.Request) -> web.Response:
        return web.Response(body=static_file("index.html"), content_type="text/html", charset="utf-8")

    async def _static(self, request: web.Request) -> web.Response:
        name = request.match_info["name"]
        if name not in STATIC_FILES or name == "index.html":
            raise web.HTTPNotFound()
        return web.Response(body=static_file(name), content_type=STATIC_FILES[name], charset="utf-8")

    async def _cluster(self, request: web.Request) -> web.Response:
        return web.json_response(self.cluster_view())

    async def _queue(self, request: web.Request) -> web.Response:
        return web.json_response(await self.fetch_queue())

    async def _pod(self, request: web.Request) -> web.Response:
        key = request.query.get("key", "")
        namespace, _, name = key.rpartition("/")
        if not name:
            raise web.HTTPBadRequest(text="key: expected namespace/name (or name, for namespace default)\n")
        return web.json_response(await self.pod_view(namespace or "default", name))

    async def _search(self, request: web.Request) -> web.Response:
        needle = request.query.get("q", "")
        queued: list[str] = []
        with contextlib.suppress(nats.errors.Error, RequestError, BadMessage, TimeoutError):
            reply = await self.list_queue(name_contains=needle, limit=50)
            queued = [f"{e.namespace}/{e.name}" for e in reply.pods]
        placed: list[str] = []
        if self.follower is not None:
            placed = [pi.key for pi, _ in self.follower.replica.snapshot.pod_locations.values()]
        return web.json_response(views.search(needle, queued, self.recent, placed))

    async def _events(self, request: web.Request) -> web.StreamResponse:
        """Server-sent events: ``cluster`` and ``queue`` (whole views), ``trace`` (pod keys)."""
        response = web.StreamResponse(
            headers={
                "Content-Type": "text/event-stream",
                "Cache-Control": "no-cache",
                "X-Accel-Buffering": "no",
            }
        )
        await response.prepare(request)
        sub = self.hub.subscribe()
        self._queue_dirty.set()  # a fresh listing for the new page
        try:
            await self._stream(response, sub)
        except ConnectionResetError:
            pass  # the page went away
        finally:
            self.hub.unsubscribe(sub)
        return response

    async def _stream(self, response: web.StreamResponse, sub: Subscriber) -> None:
        last_write = time.monotonic()
        while not sub.closed:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(sub.ready.wait(), KEEPALIVE)
            if sub.closed:
                return
            chunks = [f"event: {name}\ndata: {data}\n\n" for name, data in sub.take()]
            if not chunks and time.monotonic() - last_write >= KEEPALIVE:
                chunks = [": keepalive\n\n"]
            if chunks:
                await response.write("".join(chunks).encode())
                last_write = time.monotonic()
                await asyncio.sleep(STREAM_PAUSE)  # what arrives meanwhile goes out in one write
