"""A real extender HTTP server for tests, and a scripted fake extender served by it.

:class:`ExtenderServer` runs an aiohttp app on 127.0.0.1 (port 0) in its own thread and event
loop, so sync tests, async tests and subprocesses can all call it. Routes map a path
(``/<prefix>/<verb>``) to a handler taking the decoded JSON body and returning a :class:`Reply`;
every request is recorded.

:class:`FakeExtender` mirrors upstream's ``tf.FakeExtender``: predicates per node (filter),
weighted prioritizers (prioritize), a binder, and a preemption hook.
"""

from __future__ import annotations

import asyncio
import ssl
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import msgspec
from aiohttp import web

from ksched.config.types import Extender, ExtenderManagedResource


@dataclass
class Reply:
    body: Any = None
    status: int = 200
    delay: float = 0.0
    raw: bytes | None = None


Handler = Callable[[Any], Reply]


@dataclass
class Request:
    path: str
    body: Any
    raw: bytes
    headers: Mapping[str, str]
    #: the client's (host, port): one per TCP connection
    peer: tuple[str, int]


class ExtenderServer:
    """An HTTP(S) server on 127.0.0.1:0 in a background thread."""

    def __init__(self, ssl_context: ssl.SSLContext | None = None) -> None:
        self.routes: dict[str, Handler] = {}
        self.requests: list[Request] = []
        self.in_flight = 0
        self.most_in_flight = 0
        """The most delayed replies (``Reply.delay``) under way at once: calls made concurrently."""
        self._ssl = ssl_context
        self._loop = asyncio.new_event_loop()
        self._runner: web.AppRunner | None = None
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self.port = 0

    @property
    def url(self) -> str:
        scheme = "https" if self._ssl is not None else "http"
        return f"{scheme}://127.0.0.1:{self.port}"

    def start(self) -> ExtenderServer:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._start(), self._loop).result(timeout=10)
        return self

    async def _start(self) -> None:
        app = web.Application()
        app.router.add_post("/{tail:.*}", self._dispatch)
        self._runner = web.AppRunner(app, access_log=None)  # no log lines from a thread outliving the test
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0, ssl_context=self._ssl)
        await site.start()
        self.port = self._runner.addresses[0][1]

    async def _dispatch(self, request: web.Request) -> web.StreamResponse:
        raw = await request.read()
        try:
            body = msgspec.json.decode(raw) if raw else None
        except msgspec.DecodeError:
            body = None
        peer = request.transport.get_extra_info("peername") if request.transport else ("", 0)
        self.requests.append(Request(request.path, body, raw, dict(request.headers), tuple(peer[:2])))
        handler = self.routes.get(request.path)
        if handler is None:
            return web.Response(status=404, text="no such verb")
        reply = handler(body)
        if reply.delay:
            self.in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
            try:
                await asyncio.sleep(reply.delay)
            finally:
                self.in_flight -= 1
        data = reply.raw if reply.raw is not None else msgspec.json.encode(reply.body)
        return web.Response(status=reply.status, body=data, content_type="application/json")

    def stop(self) -> None:
        if self._runner is not None:
            asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop).result(timeout=10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)

    def paths(self) -> list[str]:
        return [r.path for r in self.requests]

    def serve(self, prefix: str, fake: FakeExtender) -> str:
        """Route ``/<prefix>/{filter,prioritize,bind,preempt}`` to ``fake``; returns the urlPrefix."""
        self.routes[f"/{prefix}/filter"] = fake.on_filter
        self.routes[f"/{prefix}/prioritize"] = fake.on_prioritize
        self.routes[f"/{prefix}/bind"] = fake.on_bind
        self.routes[f"/{prefix}/preempt"] = fake.on_preempt
        return f"{self.url}/{prefix}"


# --- the fake extender ---------------------------------------------------------------------------
OK = "ok"
UNSCHEDULABLE = "unschedulable"
UNRESOLVABLE = "unresolvable"
ERROR = "error"

Predicate = Callable[[Any, str], str]
"""(pod JSON, node name) -> OK / UNSCHEDULABLE / UNRESOLVABLE / ERROR"""
Prioritizer = Callable[[Any, Sequence[str]], "list[tuple[str, int]] | None"]
"""(pod JSON, node names) -> (node, score) pairs, or None for an error"""


def true_predicate(pod: Any, node: str) -> str:
    return OK


def false_predicate(pod: Any, node: str) -> str:
    return UNSCHEDULABLE


def error_predicate(pod: Any, node: str) -> str:
    return ERROR


def only(name: str) -> Predicate:
    """Upstream ``Node1PredicateExtender`` / ``Node2PredicateExtender``."""
    return lambda pod, node: OK if node == name else UNSCHEDULABLE


def error_prioritizer(pod: Any, nodes: Sequence[str]) -> list[tuple[str, int]] | None:
    return None


def favour(name: str) -> Prioritizer:
    """Upstream ``Node1PrioritizerExtender``: 10 for ``name``, 1 for the others."""
    return lambda pod, nodes: [(n, 10 if n == name else 1) for n in nodes]


def node_names_of(args: Any) -> list[str]:
    if args.get("NodeNames") is not None:
        return list(args["NodeNames"])
    return [item["metadata"]["name"] for item in args["Nodes"]["items"]]


@dataclass
class FakeExtender:
    """Upstream ``tf.FakeExtender`` over HTTP."""

    predicates: Sequence[Predicate] = ()
    prioritizers: Sequence[tuple[Prioritizer, int]] = ()
    weight: int = 1
    node_cache_capable: bool = False
    ignorable: bool = False
    managed_resources: Sequence[str] = ()
    preempt: bool = False
    bind: bool = False
    bind_error: str = ""
    bind_status: int = 200
    delay: float = 0.0
    #: a scripted ExtenderPreemptionResult for the preempt verb (instead of running the predicates)
    preempt_answer: Callable[[Any], Any] | None = None
    bound: list[tuple[str, str, str, str]] = field(default_factory=list)

    def config(self, url_prefix: str, **overrides: Any) -> Extender:
        fields: dict[str, Any] = {
            "url_prefix": url_prefix,
            "filter_verb": "filter" if self.predicates else "",
            "prioritize_verb": "prioritize" if self.prioritizers else "",
            "weight": self.weight if self.prioritizers else 0,
            "preempt_verb": "preempt" if self.preempt else "",
            "bind_verb": "bind" if self.bind else "",
            "node_cache_capable": self.node_cache_capable,
            "ignorable": self.ignorable,
            "managed_resources": [ExtenderManagedResource(name=r) for r in self.managed_resources],
        }
        fields.update(overrides)
        return Extender(**fields)

    def run_predicates(self, pod: Any, node: str) -> str:
        for predicate in self.predicates:
            verdict = predicate(pod, node)
            if verdict != OK:
                return verdict
        return OK

    def on_filter(self, args: Any) -> Reply:
        names = node_names_of(args)
        kept: list[str] = []
        failed: dict[str, str] = {}
        unresolvable: dict[str, str] = {}
        for name in names:
            verdict = self.run_predicates(args["Pod"], name)
            if verdict == OK:
                kept.append(name)
            elif verdict == UNSCHEDULABLE:
                failed[name] = f'FakeExtender: node "{name}" failed'
            elif verdict == UNRESOLVABLE:
                unresolvable[name] = f'FakeExtender: node "{name}" failed and unresolvable'
            else:
                return Reply({"Error": "some error"}, delay=self.delay)
        result: dict[str, Any] = {
            "FailedNodes": failed,
            "FailedAndUnresolvableNodes": unresolvable,
            "Error": "",
        }
        if self.node_cache_capable:
            result["NodeNames"] = kept
            result["Nodes"] = None
        else:
            by_name = {item["metadata"]["name"]: item for item in args["Nodes"]["items"]}
            result["Nodes"] = {"metadata": {}, "items": [by_name[n] for n in kept]}
            result["NodeNames"] = None
        return Reply(result, delay=self.delay)

    def on_prioritize(self, args: Any) -> Reply:
        names = node_names_of(args)
        combined: dict[str, int] = {}
        for prioritizer, weight in self.prioritizers:
            if weight == 0:
                continue
            scores = prioritizer(args["Pod"], names)
            if scores is None:
                return Reply("some error", status=500, delay=self.delay)
            for node, score in scores:
                combined[node] = combined.get(node, 0) + score * weight
        return Reply([{"Host": n, "Score": s} for n, s in combined.items()], delay=self.delay)

    def on_bind(self, args: Any) -> Reply:
        if self.bind_status != 200:
            return Reply("unavailable", status=self.bind_status)
        if self.bind_error:
            return Reply({"Error": self.bind_error})
        self.bound.append((args["PodNamespace"], args["PodName"], args["PodUID"], args["Node"]))
        return Reply({"Error": ""}, delay=self.delay)

    def on_preempt(self, args: Any) -> Reply:
        """Upstream's fake without a node cache: keep a candidate (and its victims) where the
        predicates pass after preemption, drop it where they reject, fail on an error."""
        if self.preempt_answer is not None:
            return Reply(self.preempt_answer(args), delay=self.delay)
        meta = args.get("NodeNameToMetaVictims")
        if meta is not None:
            return Reply({"NodeNameToMetaVictims": meta}, delay=self.delay)
        kept: dict[str, Any] = {}
        for node, v in (args.get("NodeNameToVictims") or {}).items():
            verdict = self.run_predicates(args["Pod"], node)
            if verdict == ERROR:
                return Reply("some error", status=500)
            if verdict == OK:
                kept[node] = {
                    "Pods": [{"UID": p["metadata"]["uid"]} for p in v["Pods"]],
                    "NumPDBViolations": v["NumPDBViolations"],
                }
        return Reply({"NodeNameToMetaVictims": kept}, delay=self.delay)
