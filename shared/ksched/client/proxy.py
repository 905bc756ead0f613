"""The proxy a request goes through, from the environment, as Go's ``http.ProxyFromEnvironment``.

One policy for every HTTP client of ksched: the API client (:class:`ksched.client.rest.Client`,
resolved once when it is made) and the extenders' session (resolved once per extender URL): client-go
and kube-scheduler's extender transport both use ``ProxyFromEnvironment``. Neither reads ``~/.netrc``
(aiohttp's ``trust_env`` reads it, on every request, in a worker thread).

Go's rules (golang.org/x/net/http/httpproxy): ``HTTPS_PROXY`` for https URLs, ``HTTP_PROXY`` for
http ones (upper case first, then lower case); none for ``localhost`` or a loopback address; none for
a host ``NO_PROXY`` names: ``*``, an IP address, a CIDR block, or a domain (``example.com`` and
``.example.com`` both match it and its subdomains), each optionally with a port. A proxy written
without a scheme is ``http://``.
"""

from __future__ import annotations

import base64
import ipaddress
import os
from collections.abc import Mapping

from yarl import URL


def _env(env: Mapping[str, str], name: str) -> str:
    return env.get(name.upper()) or env.get(name.lower()) or ""


def proxy_from_environment(url: str, env: Mapping[str, str] | None = None) -> str | None:
    """The proxy for a request to ``url`` (None: connect directly); ``env`` defaults to the process
    environment."""
    e = os.environ if env is None else env
    target = URL(url)
    if target.scheme == "https":
        proxy = _env(e, "https_proxy")
    elif target.scheme == "http" and not e.get("REQUEST_METHOD"):  # not in a CGI script (httpoxy)
        proxy = _env(e, "http_proxy")
    else:
        return None
    host = (target.host or "").lower()
    if not proxy or not host or not _use_proxy(host, target.port, _env(e, "no_proxy")):
        return None
    return proxy if "://" in proxy else f"http://{proxy}"


def _use_proxy(host: str, port: int | None, no_proxy: str) -> bool:
    if host == "localhost":
        return False
    ip = _ip(host)
    if ip is not None and ip.is_loopback:
        return False
    for raw in no_proxy.split(","):
        entry = raw.strip().lower()
        if not entry:
            continue
        if entry == "*":
            return False
        if ip is not None and "/" in entry:
            try:
                if ip in ipaddress.ip_network(entry, strict=False):
                    return False
            except ValueError:
                pass
            continue
        name, entry_port = _split_port(entry)
        if entry_port is not None and entry_port != port:
            continue
        entry_ip = _ip(name)
        if entry_ip is not None:
            if ip == entry_ip:
                return False
            continue
        domain = name.lstrip("*").lstrip(".")
        if domain and (host == domain or host.endswith("." + domain)):
            return False
    return True


def _ip(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(text.strip("[]"))
    except ValueError:
        return None


def _split_port(entry: str) -> tuple[str, int | None]:
    """``host:port`` (or ``[v6]:port``) into its parts; a bare IPv6 address has no port."""
    if entry.startswith("["):
        end = entry.find("]")
        rest = entry[end + 1 :]
        port = int(rest[1:]) if rest.startswith(":") and rest[1:].isdigit() else None
        return entry[: end + 1], port
    if entry.count(":") == 1:
        name, _, port_text = entry.partition(":")
        return name, int(port_text) if port_text.isdigit() else None
    return entry, None


def proxy_settings(proxy: str | None) -> tuple[str | None, dict[str, str]]:
    """``proxy`` without its user information, and the ``Proxy-Authorization`` header made of it
    (as Go's transport sends for a proxy URL with a user)."""
    if not proxy:
        return None, {}
    url = URL(proxy)
    if url.user is None:
        return proxy, {}
    credentials = base64.b64encode(f"{url.user}:{url.password or ''}".encode()).decode("ascii")
    return str(url.with_user(None)), {"Proxy-Authorization": f"Basic {credentials}"}
