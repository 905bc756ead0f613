"""The health and metrics endpoint every service serves: /metrics, /healthz, /livez, /readyz,
and /debug (a JSON state dump). Read-only; binds to loopback unless configured otherwise."""

from __future__ import annotations

import json
from collections.abc import Callable

from aiohttp import web
from prometheus_client import REGISTRY, CollectorRegistry
from prometheus_client.aiohttp import make_aiohttp_handler

ReadyCheck = Callable[[], tuple[bool, str]]
DebugDump = Callable[[], object]


class HealthServer:
    """``ready_checks`` name -> check returning (ok, detail); /readyz is 200 only when all pass."""

    def __init__(
        self,
        host: str,
        port: int,
        *,
        registry: CollectorRegistry | None = None,
        debug: DebugDump | None = None,
    ) -> None:
        self.host = host
        self.port = port
        self.ready_checks: dict[str, ReadyCheck] = {}
        self.live_checks: dict[str, ReadyCheck] = {}
        self._debug = debug
        self._registry = registry or REGISTRY
        self._runner: web.AppRunner | None = None

    async def start(self) -> int:
        app = web.Application()
        app.router.add_get("/metrics", make_aiohttp_handler(self._registry))
        app.router.add_get("/healthz", self._live)
        app.router.add_get("/livez", self._live)
        app.router.add_get("/readyz", self._ready)
        app.router.add_get("/debug", self._dump)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port)
        await site.start()
        server = site._server
        if server is not None and self.port == 0:
            sockets = getattr(server, "sockets", None) or []
            if sockets:
                self.port = sockets[0].getsockname()[1]
        return self.port

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    def _report(self, checks: dict[str, ReadyCheck]) -> web.Response:
        results = {name: check() for name, check in checks.items()}
        ok = all(r[0] for r in results.values())
        lines = [
            f"[{'+' if r[0] else '-'}]{name} {'ok' if r[0] else 'failed: ' + r[1]}"
            for name, r in results.items()
        ]
        lines.append("ok" if ok else "not ready")
        return web.Response(status=200 if ok else 503, text="\n".join(lines) + "\n")

    async def _live(self, request: web.Request) -> web.Response:
        return self._report(self.live_checks)

    async def _ready(self, request: web.Request) -> web.Response:
        return self._report(self.ready_checks)

    async def _dump(self, request: web.Request) -> web.Response:
        body = self._debug() if self._debug is not None else {}
        return web.Response(text=json.dumps(body, default=str, indent=1), content_type="application/json")
