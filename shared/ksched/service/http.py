"""The health and metrics endpoint every service serves: /metrics, /healthz, /livez, /readyz,
/debug (a JSON state dump) and /configz (the effective configuration, as kube-scheduler's).
Read-only; the plain-HTTP port binds to loopback unless configured otherwise.

The secure port (``--secure-port``, docs/operations.md) serves the same over HTTPS as kube-scheduler
does: a caller is authenticated by a TokenReview and authorized by a SubjectAccessReview of the API
server (:mod:`ksched.secureport.delegated`); the always-allow paths (the probes by default) are open.

Access to the plain port (docs/metrics.md): the probes (/healthz, /livez, /readyz) are open, so
kubelet probes need no credentials. With a token (``--http-token`` / ``KSCHED_HTTP_TOKEN``),
/metrics, /debug and /configz need ``Authorization: Bearer
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

import msgspec
from aiohttp import web
from prometheus_client import REGISTRY, CollectorRegistry
from prometheus_client.aiohttp import make_aiohttp_handler

from ksched.client.rest import Client
from ksched.client.reviews import access_review, review_client, token_review
from ksched.config import KubeSchedulerConfiguration
from ksched.secureport.delegated import Authenticator, Authorizer, Unauthorized
from ksched.secureport.selfsigned import server_context
from ksched.service.options import CommonOptions, SecureServing

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
        secure: SecureServing | None = None,
        component: str = "ksched",
        config: KubeSchedulerConfiguration | None = None,
        routes: Sequence[web.RouteDef] = (),
        browser_login: bool = False,
    ) -> None:
        self.host = host
        self.port = port
        self.token = token or None
        self.secure = secure
        self.secure_port: int | None = None
        """The HTTPS port once started (None: no secure serving)."""
        self.configz: dict[str, object] = {}
        """/configz's body: name → JSON-ready configuration (``componentconfig``, as kube-scheduler)."""
        if config is not None:
            self.configz["componentconfig"] = componentconfig(config)
        self._component = component
        self._clients: list[Client] = []
        self._authenticator = Authenticator(None)
        self._authorizer = Authorizer(None)
        self.ready_checks: dict[str, ReadyCheck] = {}
        self.live_checks: dict[str, ReadyCheck] = {}
        self.before_metrics: Callable[[], Awaitable[None]] | None = None
        """Awaited before each /metrics answer (``ksched kube-scheduler`` scrapes its services)."""
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
        app.router.add_get("/metrics", self._metrics(make_aiohttp_handler(self._registry)))
        app.router.add_get("/healthz", self._live)
        app.router.add_get("/livez", self._live)
        app.router.add_get("/readyz", self._ready)
        app.router.add_get("/debug", self._dump)
        app.router.add_get("/configz", self._configz)
        app.router.add_routes(self._routes)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        self.port = await _serve(web.TCPSite(self._runner, self.host, self.port), self.port)
        if self.secure is not None:
            await self._start_secure(self.secure)
        return self.port

    async def _start_secure(self, secure: SecureServing) -> None:
        assert self._runner is not None
        authn = await review_client(secure.authentication_kubeconfig, self._component)
        authz = await review_client(secure.authorization_kubeconfig, self._component)
        self._clients = [c for c in (authn, authz) if c is not None]
        if authn is None:
            log.warning(
                "no --authentication-kubeconfig and not in a cluster: every caller of the secure port "
                "is anonymous"
            )
        if authz is None:
            log.warning(
                "no --authorization-kubeconfig and not in a cluster: the secure port serves only %s",
                ", ".join(secure.always_allow_paths) or "nothing",
            )
        self._authenticator = Authenticator(token_review(authn) if authn else None)
        self._authorizer = Authorizer(access_review(authz) if authz else None, secure.always_allow_paths)
        ctx = server_context(secure.cert_file, secure.key_file, secure.bind_address)
        site = web.TCPSite(self._runner, secure.bind_address, secure.port, ssl_context=ctx)
        self.secure_port = await _serve(site, secure.port)
        log.info(
            "%s: HTTPS on %s:%d (%s certificate; /metrics, /debug, /configz reviewed by the API server)",
            self._component,
            secure.bind_address,
            self.secure_port,
            "given" if secure.cert_file else "self-signed",
        )

    @web.middleware
    async def _guard(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        if request.secure:
            return await self._delegated(request, handler)
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

    async def _delegated(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        """The secure port: authenticate, then authorize the non-resource path and verb."""
        try:
            user = await self._authenticator.authenticate(request.headers.get("Authorization"))
        except Unauthorized as exc:
            log.debug("unauthorized %s: %s", request.path, exc)
            return _status(401, "Unauthorized", "Unauthorized")
        verb = request.method.lower()
        allowed, reason = await self._authorizer.authorize(user, request.path, verb)
        if not allowed:
            return _status(
                403, "Forbidden", forbidden_message(user.name, verb, request.path, reason), details=True
            )
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
        for client in self._clients:
            await client.close()
        self._clients = []

    def _report(self, checks: dict[str, ReadyCheck]) -> web.Response:
        results = {name: check() for name, check in checks.items()}
        ok = all(r[0] for r in results.values())
        lines = [
            f"[{'+' if r[0] else '-'}]{name} {'ok' if r[0] else 'failed: ' + r[1]}"
            for name, r in results.items()
        ]
        lines.append("ok" if ok else "not ready")
        return web.Response(status=200 if ok else 503, text="\n".join(lines) + "\n")

    def _metrics(self, exposition: Handler) -> Handler:
        async def metrics(request: web.Request) -> web.StreamResponse:
            if self.before_metrics is not None:
                await self.before_metrics()
            return await exposition(request)

        return metrics

    async def _live(self, request: web.Request) -> web.Response:
        return self._report(self.live_checks)

    async def _ready(self, request: web.Request) -> web.Response:
        return self._report(self.ready_checks)

    async def _configz(self, request: web.Request) -> web.Response:
        return web.Response(
            text=json.dumps(self.configz),
            content_type="application/json",
            headers={"X-Content-Type-Options": "nosniff"},
        )

    async def _dump(self, request: web.Request) -> web.Response:
        body = self._debug() if self._debug is not None else {}
        return web.Response(text=json.dumps(body, default=str, indent=1), content_type="application/json")


def service_health_server(
    common: CommonOptions, component: str, config: KubeSchedulerConfiguration, debug: DebugDump
) -> HealthServer:
    """The HTTP server of a pipeline service (``ksched-<service>``): ``--http-host``/``--http-port`` with
    ``--http-token``, the secure port, ``config`` on /configz and ``debug`` on /debug."""
    return HealthServer(
        common.http_host,
        common.http_port,
        debug=debug,
        token=common.http_token,
        secure=common.secure,
        component=component,
        config=config,
    )


def forbidden_message(user: str, verb: str, path: str, reason: str) -> str:
    """The API server's message for a denied non-resource request (Go-quoted names, ``&<>`` as HTML
    entities, then the authorizer's reason if it gave one)."""
    who, where = json.dumps(user, ensure_ascii=False), json.dumps(path, ensure_ascii=False)
    quoted = f"User {who} cannot {verb} path {where}"
    text = quoted.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return f"forbidden: {text}: {reason}" if reason else f"forbidden: {text}"


def componentconfig(config: KubeSchedulerConfiguration) -> dict[str, object]:
    """The effective configuration as kube-scheduler's /configz shows it (kind first, capture 16n)."""
    body = msgspec.to_builtins(config)
    return {"kind": body.pop("kind"), "apiVersion": body.pop("apiVersion"), **body}


async def _serve(site: web.TCPSite, port: int) -> int:
    """Start ``site``; the port it listens on (the one picked when ``port`` is 0)."""
    await site.start()
    server = site._server
    if server is not None and port == 0:
        sockets = getattr(server, "sockets", None) or []
        if sockets:
            return int(sockets[0].getsockname()[1])
    return port


def _status(code: int, reason: str, message: str, *, details: bool = False) -> web.Response:
    """A ``v1 Status`` failure as the API server's filters write it (captures 16h-16j)."""
    body: dict[str, object] = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
    }
    if details:
        body["details"] = {}
    body["code"] = code
    headers = {"Cache-Control": "no-cache, private"}
    if code == 403:
        headers["X-Content-Type-Options"] = "nosniff"
    return web.Response(status=code, text=json.dumps(body), content_type="application/json", headers=headers)
