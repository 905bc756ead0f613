"""The health and metrics endpoint every service serves: /metrics, /healthz, /livez, /readyz,
and /debug (a JSON state dump). Read-only; binds to loopback unless configured otherwise.

Access (docs/metrics.md): the probes (/healthz, /livez, /readyz) are open, as kube-scheduler's
``--authorization-always-allow-paths``, so kubelet probes need no credentials. With a token
(``--http-token`` / ``KSCHED_HTTP_TOKEN``), /metrics and /debug need ``Authorization: Bearer
<token>`` (401 otherwise). Without one they are served on a loopback address only: bound anywhere
else, they answer 403, since anyone who can reach the port could read them.

A service may add its own routes (``ksched ui``'s page), guarded alike. With ``browser_login`` a
browser, which cannot send the header, opens ``/?token=<token>`` once: the server answers with an
HttpOnly, SameSite=Strict cookie holding the token and a redirect to the same page without it;
the cookie is then accepted as the credential.
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import logging
from collections.abc import Awaitable, Callable, Sequence

from aiohttp import web
from prometheus_client import REGISTRY, CollectorRegistry
from prometheus_client.aiohttp import make_aiohttp_handler

log = logging.getLogger(__name__)

ReadyCheck = Callable[[], tuple[bool, str]]
DebugDump = Callable[[], object]
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

PROBES = frozenset({"/healthz", "/livez", "/readyz"})
"""Paths served without credentials (kubelet probes)."""

TOKEN_COOKIE = "ksched_token"
"""The cookie that carries the token for a browser (``browser_login``)."""


def is_loopback(host: str) -> bool:
    """Whether ``host`` (what the server binds) is reachable from this machine only."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # "" (every address) or a host name, which may resolve anywhere


class HealthServer:
    """``ready_checks`` name -> check returning (ok, detail); /readyz is 200 only when all pass."""

    def __init__(
        self,
        host: str,
        port: int,
        *,
        registry: CollectorRegistry | None = None,
        debug: DebugDump | None = None,
        token: str | None = None,
        routes: Sequence[web.RouteDef] = (),
        browser_login: bool = False,
    ) -> None:
        self.host = host
        self.port = port
        self.token = token or None
        self.ready_checks: dict[str, ReadyCheck] = {}
        self.live_checks: dict[str, ReadyCheck] = {}
        self._debug = debug
        self._registry = registry or REGISTRY
        self._routes = list(routes)
        self._browser_login = browser_login
        self._runner: web.AppRunner | None = None

    async def start(self) -> int:
        if self.token is None and not is_loopback(self.host):
            log.warning(
                "HTTP on %s without --http-token / KSCHED_HTTP_TOKEN: /metrics and /debug answer 403 "
                "(the probes stay open)",
                self.host,
            )
        app = web.Application(middlewares=[self._guard])
        app.router.add_get("/metrics", make_aiohttp_handler(self._registry))
        app.router.add_get("/healthz", self._live)
        app.router.add_get("/livez", self._live)
        app.router.add_get("/readyz", self._ready)
        app.router.add_get("/debug", self._dump)
        app.router.add_routes(self._routes)
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

    @web.middleware
    async def _guard(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        if request.path in PROBES:
            return await handler(request)
        if self.token is not None:
            if self._browser_login and self._valid(request.query.get("token", "")):
                target = request.rel_url.without_query_params("token")
                response = web.Response(status=303, headers={"Location": str(target)})
                response.set_cookie(TOKEN_COOKIE, self.token, httponly=True, samesite="Strict")
                return response
            scheme, _, credential = request.headers.get("Authorization", "").partition(" ")
            bearer = scheme.lower() == "bearer" and self._valid(credential.strip())
            cookie = self._browser_login and self._valid(request.cookies.get(TOKEN_COOKIE, ""))
            if not (bearer or cookie):
                return web.Response(
                    status=401, text="Unauthorized\n", headers={"WWW-Authenticate": 'Bearer realm="ksched"'}
                )
        elif not is_loopback(self.host):
            return web.Response(status=403, text=f"Forbidden: {request.path} needs --http-token here\n")
        return await handler(request)

    def _valid(self, credential: str) -> bool:
        return (
            bool(credential)
            and self.token is not None
            and hmac.compare_digest(credential.encode(), self.token.encode())
        )

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
