"""One Kubernetes API request, straight to the connections of a kubernetes_asyncio client.

Every layer that writes to the API server on the hot path (the binder's Binding, Events, status
patches) goes through :func:`raw_request`: on the client's :class:`~ksched.apimachinery.http1.Http1Pool`
when it is a :class:`WriteClient` (what the services use) and no proxy is configured, else on the
client's aiohttp session.
"""

from __future__ import annotations

import asyncio
import random
import ssl
from typing import Any

import aiohttp
import msgspec
from kubernetes_asyncio.client import ApiClient, Configuration
from yarl import URL

from ksched.apimachinery.http1 import Http1Pool

_JSON = msgspec.json.Encoder()


class WriteClient(ApiClient):
    """kubernetes_asyncio's ApiClient with an :class:`Http1Pool` to the same server for
    :func:`raw_request` (``http1``; None for a server address it cannot reach: not http(s))."""

    def __init__(self, configuration: Configuration) -> None:
        super().__init__(configuration=configuration)
        self.http1 = http1_pool(configuration)

    async def close(self) -> None:
        if self.http1 is not None:
            await self.http1.close()
        await super().close()


def http1_pool(cfg: Configuration) -> Http1Pool | None:
    """A pool to ``cfg``'s server with the TLS settings kubernetes_asyncio's own session uses (CA,
    client certificate, server name, verification); None unless the host is an http(s) URL."""
    url = URL(cfg.host or "")
    if url.scheme not in ("http", "https") or not url.host:
        return None
    context: ssl.SSLContext | None = None
    if url.scheme == "https":
        context = ssl.create_default_context(cafile=cfg.ssl_ca_cert)
        if cfg.cert_file:
            context.load_cert_chain(cfg.cert_file, keyfile=cfg.key_file)
        if not cfg.verify_ssl:
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        if cfg.disable_strict_ssl_verification:
            context.verify_flags &= ~ssl.VERIFY_X509_STRICT
    port = url.port or (443 if url.scheme == "https" else 80)
    return Http1Pool(
        url.host,
        port,
        context,
        cfg.tls_server_name or None,
        max_connections=cfg.connection_pool_maxsize,
        path_prefix=url.raw_path.rstrip("/"),
    )


TOO_MANY_REQUESTS_RETRIES = 10
"""client-go's rest client retries a request the API server refused with 429 Too Many Requests (not
processed: a write too) up to ten times, after its Retry-After (the max-in-flight filter says 1 s)."""
TOO_MANY_REQUESTS_WAIT = 1.0


async def raw_request(
    api: ApiClient,
    method: str,
    path: str,
    body: Any = None,
    content_type: str = "application/json",
    timeout: float | None = 10.0,
) -> tuple[int, bytes]:
    """:func:`raw_request_once`, again after :data:`TOO_MANY_REQUESTS_WAIT` (with jitter) while the
    API server answers 429, as client-go does (up to :data:`TOO_MANY_REQUESTS_RETRIES` times): an
    overloaded API server slows a binding down instead of failing it."""
    for _ in range(TOO_MANY_REQUESTS_RETRIES):
        status, data = await raw_request_once(api, method, path, body, content_type, timeout)
        if status != 429:
            return status, data
        await asyncio.sleep(TOO_MANY_REQUESTS_WAIT * random.uniform(1.0, 1.5))
    return await raw_request_once(api, method, path, body, content_type, timeout)


async def raw_request_once(
    api: ApiClient,
    method: str,
    path: str,
    body: Any = None,
    content_type: str = "application/json",
    timeout: float | None = 10.0,
) -> tuple[int, bytes]:
    """One API request through ``api``'s connection pool and credentials, read undecoded: (HTTP
    status, body). ``body``: bytes as they are, anything else JSON-encoded. ``timeout``: seconds for
    the whole request, None for none (a write whose outcome must not be guessed: a request that timed
    out may still have been applied). Errors of the connection raise; HTTP errors are the caller's.

    It sends what ``call_api`` would (the client's default headers such as the User-Agent, the bearer
    token, refreshed as the configuration does, the TLS server name), on the client's
    :class:`Http1Pool` (a :class:`WriteClient` without a proxy) or else straight on its aiohttp
    session with the proxy: ``call_api``'s generic parameter handling cost the binder about a tenth of
    its CPU per binding and Event, and aiohttp's request machinery about half of what was left."""
    headers = {**api.default_headers, "Content-Type": content_type, "Accept": "application/json"}
    for setting in (await api.configuration.auth_settings()).values():
        headers[setting["key"]] = setting["value"]
    data = body if body is None or isinstance(body, bytes) else _JSON.encode(body)
    rest = api.rest_client
    pool: Http1Pool | None = getattr(api, "http1", None)
    if pool is not None and not rest.proxy:
        return await pool.request(method, path, headers, data, timeout)
    extra: dict[str, Any] = {}
    if rest.proxy:
        extra["proxy"] = rest.proxy
    if rest.proxy_headers:
        extra["proxy_headers"] = rest.proxy_headers
    if getattr(rest, "server_hostname", None):
        extra["server_hostname"] = rest.server_hostname
    session: aiohttp.ClientSession = rest.pool_manager
    async with session.request(
        method,
        (api.configuration.host or "") + path,
        data=data,
        headers=headers,
        timeout=aiohttp.ClientTimeout(total=timeout),  # total=None: none at all
        **extra,
    ) as resp:
        return resp.status, await resp.read()
