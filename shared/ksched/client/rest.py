"""The one way ksched reaches the Kubernetes API server: :class:`Client`.

A request is sent on the client's :class:`~ksched.client.http1.Http1Pool` (keep-alive HTTP/1.1
connections of our own: docs/client.md measures it against kubernetes_asyncio's ``call_api``, an
aiohttp session and httpx with HTTP/2), read whole, and returned undecoded as (HTTP status, body);
the callers decode with msgspec. A watch streams on the client's aiohttp session (the pool reads
whole responses only), and so does every request when a proxy is configured (the pool speaks to
the API server directly). The proxy comes from the kubeconfig (``proxy-url``) or else from the
environment (:mod:`ksched.client.proxy`), resolved once when the client is made; netrc is never read.

The configuration (server, TLS, credentials) is kubernetes_asyncio's :class:`Configuration` as its
public loaders fill it (:mod:`ksched.client.config`); the bearer token is read from it for every
request, so the in-cluster token's refresh hook keeps working.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import ssl
from collections.abc import AsyncIterable, AsyncIterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

import aiohttp
import msgspec
from kubernetes_asyncio.client import Configuration
from yarl import URL

from ksched import __version__
from ksched.client.http1 import Http1Pool
from ksched.client.proxy import proxy_from_environment, proxy_settings

_JSON = msgspec.json.Encoder()
JSON = "application/json"
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
JSON_PATCH = "application/json-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"

READ_BUFFER_SIZE = 2**21
"""As kubernetes_asyncio's own session: watch events with large objects exceed aiohttp's default."""

TOO_MANY_REQUESTS_RETRIES = 10
"""client-go's rest client retries a request the API server refused with 429 Too Many Requests (not
processed: a write too) up to ten times, after its Retry-After (the max-in-flight filter says 1 s)."""
TOO_MANY_REQUESTS_WAIT = 1.0

Query = list[tuple[str, Any]] | dict[str, Any] | None


def ssl_context(cfg: Configuration) -> ssl.SSLContext | None:
    """The TLS settings of ``cfg`` (CA, client certificate, verification), as kubernetes_asyncio's
    own session has them; None for an http server."""
    if URL(cfg.host or "").scheme != "https":
        return None
    context = ssl.create_default_context(cafile=cfg.ssl_ca_cert)
    if cfg.cert_file:
        context.load_cert_chain(cfg.cert_file, keyfile=cfg.key_file)
    if not cfg.verify_ssl:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    if cfg.disable_strict_ssl_verification:
        context.verify_flags &= ~ssl.VERIFY_X509_STRICT
    return context


def with_query(path: str, query: Query) -> str:
    """``path`` with ``query`` (``None`` values left out) encoded after it."""
    if not query:
        return path
    items = query.items() if isinstance(query, dict) else query
    pairs = [(k, str(v).lower() if isinstance(v, bool) else v) for k, v in items if v is not None]
    if not pairs:
        return path
    return f"{path}{'&' if '?' in path else '?'}{urlencode(pairs)}"


class ApiError(Exception):
    """The API server answered a request with an error status (``status``; ``body`` undecoded)."""

    def __init__(self, method: str, path: str, status: int, body: bytes) -> None:
        super().__init__(f"{method} {path}: HTTP {status}: {body[:300]!r}")
        self.status = status
        self.body = body

    @property
    def reason(self) -> str:
        """The Status's reason (``AlreadyExists``, ``Conflict`` …), empty when the body is not one."""
        try:
            doc = msgspec.json.decode(self.body)
        except msgspec.DecodeError:
            return ""
        return str(doc.get("reason", "")) if isinstance(doc, dict) else ""


@dataclass
class Stream:
    """An open streaming response (a watch): its status, then its body as it arrives."""

    status: int
    response: aiohttp.ClientResponse

    async def read(self) -> bytes:
        """The whole body (an error's Status)."""
        return await self.response.read()

    def lines(self) -> AsyncIterator[bytes]:
        """The non-blank lines of the body (one JSON watch event each)."""
        return watch_lines(self.response.content.iter_any())


async def watch_lines(chunks: AsyncIterable[bytes]) -> AsyncIterator[bytes]:
    """The non-blank lines of a watch stream (one JSON event each), however the chunks cut them."""
    buffer = b""
    async for chunk in chunks:
        if b"\n" not in chunk:
            buffer += chunk
            continue
        *lines, buffer = (buffer + chunk).split(b"\n")
        for line in lines:
            if line.strip():
                yield line


class Client:
    """Reads, watches and writes to one API server with ``configuration``'s address and credentials.

    ``connections``: keep-alive connections at most (each carries one request at a time);
    ``component``: the User-Agent's name (``ksched-binder/0.4.0``), as kube-scheduler names itself, so
    the API server's audit log and field managers show which service made a call."""

    def __init__(
        self, configuration: Configuration, connections: int = 64, component: str = "ksched"
    ) -> None:
        self.configuration = configuration
        self.host = (configuration.host or "").rstrip("/")
        self.connections = connections
        self.user_agent = f"{component}/{__version__}"
        proxy = configuration.proxy or proxy_from_environment(self.host)
        self.proxy, proxy_headers = proxy_settings(proxy)
        self.proxy_headers: dict[str, str] = {**proxy_headers, **(configuration.proxy_headers or {})}
        self.server_hostname: str | None = configuration.tls_server_name or None
        self._ssl = ssl_context(configuration)
        self.http1 = None if self.proxy else self._pool()
        self._session: aiohttp.ClientSession | None = None

    def copy(self, connections: int | None = None) -> Client:
        """A client of the same configuration and User-Agent with connections of its own (for
        another event loop: connections belong to the loop that opened them)."""
        other = Client(self.configuration, connections or self.connections)
        other.user_agent = self.user_agent
        return other

    def _pool(self) -> Http1Pool | None:
        url = URL(self.host)
        if url.scheme not in ("http", "https") or not url.host:
            return None
        return Http1Pool(
            url.host,
            url.port or (443 if url.scheme == "https" else 80),
            self._ssl,
            self.server_hostname,
            max_connections=self.connections,
            path_prefix=url.raw_path.rstrip("/"),
        )

    def session(self) -> aiohttp.ClientSession:
        """The aiohttp session for watches and proxied requests (made in the running loop on first
        use; it does not trust the environment: the proxy is this client's)."""
        if self._session is None or self._session.closed:
            connector = aiohttp.TCPConnector(limit=self.connections, ssl=self._ssl or True)
            self._session = aiohttp.ClientSession(
                connector=connector, trust_env=False, read_bufsize=READ_BUFFER_SIZE
            )
        return self._session

    async def headers(self, content_type: str | None = JSON) -> dict[str, str]:
        """The headers of a request: User-Agent, Accept, Content-Type and the bearer token (read now
        from the configuration, refreshed as its loader arranged)."""
        headers = {"User-Agent": self.user_agent, "Accept": JSON}
        if content_type:
            headers["Content-Type"] = content_type
        for setting in (await self.configuration.auth_settings()).values():
            headers[setting["key"]] = setting["value"]
        return headers

    # --- requests read whole -----------------------------------------------------------------

    async def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        content_type: str = JSON,
        timeout: float | None = 10.0,
        query: Query = None,
    ) -> tuple[int, bytes]:
        """:meth:`request_once`, again after :data:`TOO_MANY_REQUESTS_WAIT` (with jitter) while the
        API server answers 429, as client-go does (up to :data:`TOO_MANY_REQUESTS_RETRIES` times): an
        overloaded API server slows a request down instead of failing it."""
        for _ in range(TOO_MANY_REQUESTS_RETRIES):
            status, data = await self.request_once(method, path, body, content_type, timeout, query)
            if status != 429:
                return status, data
            await asyncio.sleep(TOO_MANY_REQUESTS_WAIT * random.uniform(1.0, 1.5))
        return await self.request_once(method, path, body, content_type, timeout, query)

    async def request_once(
        self,
        method: str,
        path: str,
        body: Any = None,
        content_type: str = JSON,
        timeout: float | None = 10.0,
        query: Query = None,
    ) -> tuple[int, bytes]:
        """One request, read undecoded: (HTTP status, body). ``body``: bytes as they are, anything
        else JSON-encoded. ``timeout``: seconds for the whole request, None for none (a write whose
        outcome must not be guessed: a request that timed out may still have been applied). Errors
        of the connection raise; HTTP errors are the caller's."""
        headers = await self.headers(content_type)
        data = body if body is None or isinstance(body, bytes) else _JSON.encode(body)
        target = with_query(path, query)
        if self.http1 is not None:
            headers["Accept-Encoding"] = "gzip"  # as Go's transport (aiohttp asks by itself)
            return await self.http1.request(method, target, headers, data, timeout)
        async with self.session().request(
            method,
            self.host + target,
            data=data,
            headers=headers,
            timeout=aiohttp.ClientTimeout(total=timeout),  # total=None: none at all
            **self.request_options(),
        ) as resp:
            return resp.status, await resp.read()

    def request_options(self) -> dict[str, Any]:
        """The keyword arguments a request on :meth:`session` takes for this server: the proxy
        and its headers, the TLS server name."""
        extra: dict[str, Any] = {}
        if self.proxy:
            extra["proxy"] = self.proxy
        if self.proxy_headers:
            extra["proxy_headers"] = self.proxy_headers
        if self.server_hostname:
            extra["server_hostname"] = self.server_hostname
        return extra

    async def call(
        self,
        method: str,
        path: str,
        body: Any = None,
        content_type: str = JSON,
        timeout: float | None = 10.0,
        query: Query = None,
        ok: tuple[int, ...] = (200, 201),
    ) -> Any:
        """:meth:`request`, the answer decoded as JSON; a status outside ``ok`` raises :class:`ApiError`."""
        status, data = await self.request(method, path, body, content_type, timeout, query)
        if status not in ok:
            raise ApiError(method, path, status, data)
        return msgspec.json.decode(data) if data else None

    async def get(self, path: str, query: Query = None, timeout: float | None = 60.0) -> Any:
        """The object at ``path``, decoded as JSON (:class:`ApiError` for any status but 200)."""
        return await self.call("GET", path, timeout=timeout, query=query, ok=(200,))

    async def create(self, path: str, body: Any, timeout: float | None = 10.0) -> Any:
        """POST ``body`` to the collection at ``path``; the created object."""
        return await self.call("POST", path, body, timeout=timeout, ok=(200, 201, 202))

    async def patch(
        self, path: str, body: Any, content_type: str = MERGE_PATCH, timeout: float | None = 10.0
    ) -> Any:
        """PATCH the object at ``path`` (a merge patch unless ``content_type`` says otherwise)."""
        return await self.call("PATCH", path, body, content_type, timeout, ok=(200, 201))

    async def delete(self, path: str, body: Any = None, timeout: float | None = 10.0) -> Any:
        """DELETE the object at ``path`` (``body``: DeleteOptions)."""
        return await self.call("DELETE", path, body, timeout=timeout, ok=(200, 202))

    # --- streams -------------------------------------------------------------------------------

    @contextlib.asynccontextmanager
    async def stream(
        self, path: str, query: Query = None, timeout: float | None = None
    ) -> AsyncIterator[Stream]:
        """A GET whose body is read as it arrives (``watch=true``); released on leaving the block."""
        headers = await self.headers(None)
        async with self.session().get(
            self.host + with_query(path, query),
            headers=headers,
            timeout=aiohttp.ClientTimeout(total=timeout),
            **self.request_options(),
        ) as resp:
            yield Stream(resp.status, resp)

    async def __aenter__(self) -> Client:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        """Close every connection."""
        if self.http1 is not None:
            await self.http1.close()
        if self._session is not None:
            await self._session.close()
