"""One Kubernetes API request, straight to a kubernetes_asyncio client's connection pool.

Every layer that writes to the API server on the hot path (the binder's Binding, Events, status
patches) goes through :func:`raw_request`.
"""

from __future__ import annotations

from typing import Any

import aiohttp
import msgspec
from kubernetes_asyncio.client import ApiClient

_JSON = msgspec.json.Encoder()


async def raw_request(
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

    Straight to the client's aiohttp session with what ``call_api`` would send (its default headers
    such as the User-Agent, the bearer token, refreshed as the configuration does, the proxy and
    TLS server name): the generic parameter handling of ``call_api`` cost the binder about a tenth of
    its CPU per binding and Event."""
    headers = {**api.default_headers, "Content-Type": content_type, "Accept": "application/json"}
    for setting in (await api.configuration.auth_settings()).values():
        headers[setting["key"]] = setting["value"]
    rest = api.rest_client
    extra: dict[str, Any] = {}
    if rest.proxy:
        extra["proxy"] = rest.proxy
    if rest.proxy_headers:
        extra["proxy_headers"] = rest.proxy_headers
    if getattr(rest, "server_hostname", None):
        extra["server_hostname"] = rest.server_hostname
    data = body if body is None or isinstance(body, bytes) else _JSON.encode(body)
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
