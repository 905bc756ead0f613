"""HTTP(S) scheduler extenders (upstream ``HTTPExtender``), over one shared aiohttp session.

Each verb is a ``POST {urlPrefix}/{verb}`` with a JSON body (:mod:`ksched.extenders.wire`),
bounded by the extender's ``httpTimeout`` (default 5s) for the whole exchange. A reply other than
200, a transport failure, a timeout, an undecodable body or an ``Error`` the extender reports
raises :class:`ExtenderError`; :mod:`ksched.framework.extender_calls` decides what that means.
Connections are pooled and reused across calls and extenders (keep-alive). The proxy is the
environment's, resolved once per extender as Go's ``ProxyFromEnvironment`` (kube-scheduler's extender
transport; :mod:`ksched.client.proxy`, the API client's policy too); netrc is not read.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

import aiohttp

from ksched.api.core import Container, Pod
from ksched.client.proxy import proxy_from_environment, proxy_settings
from ksched.config.types import Extender as ExtenderConfig
from ksched.extenders import wire
from ksched.extenders.tls import tls_settings
from ksched.framework.extender import Extender, ExtenderError, FilterVerdict, Victims
from ksched.framework.nodeinfo import NodeInfo

_HEADERS: Final = {"Content-Type": "application/json"}
#: connections kept per session (all extenders share it)
CONNECTION_LIMIT: Final = 100


class ExtenderConfigError(ExtenderError):
    """An extender cannot be built from its configuration (upstream: the scheduler does not start)."""


class HTTPExtenders:
    """The configured extenders in upstream's order (ignorable ones last) and their HTTP session.

    The session is created on first use, in the running event loop; :meth:`close` releases it.
    """

    def __init__(self, configs: Sequence[ExtenderConfig]) -> None:
        try:
            built = [HTTPExtender(c, self) for c in configs]
        except ExtenderError as exc:
            raise ExtenderConfigError(f"couldn't build extenders: {exc}") from exc
        self.extenders: list[HTTPExtender] = [e for e in built if not e.is_ignorable()]
        self.extenders += [e for e in built if e.is_ignorable()]
        self._session: aiohttp.ClientSession | None = None

    def __bool__(self) -> bool:
        return bool(self.extenders)

    def session(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=CONNECTION_LIMIT), trust_env=False
            )
        return self._session

    async def close(self) -> None:
        session, self._session = self._session, None
        if session is not None:
            await session.close()


def _uses(containers: Sequence[Container], managed: frozenset[str]) -> bool:
    for c in containers:
        res = c.resources
        if res is not None and (
            any(r in managed for r in res.requests) or any(r in managed for r in res.limits)
        ):
            return True
    return False


class HTTPExtender:
    """One extender (its ``name`` is its ``urlPrefix``, as upstream's)."""

    def __init__(self, config: ExtenderConfig, owner: HTTPExtenders) -> None:
        self.config = config
        self._owner = owner
        self._url = config.url_prefix.rstrip("/")
        self._managed = frozenset(r.name for r in config.managed_resources)
        self._timeout_seconds = config.http_timeout_seconds()
        self._timeout = aiohttp.ClientTimeout(total=self._timeout_seconds)
        tls = tls_settings(config)
        self._request_options: dict[str, Any] = {}
        if tls.context is not None:
            self._request_options["ssl"] = tls.context
        if tls.server_name:
            self._request_options["server_hostname"] = tls.server_name
        proxy, proxy_headers = proxy_settings(proxy_from_environment(self._url))
        if proxy:
            self._request_options["proxy"] = proxy
        if proxy_headers:
            self._request_options["proxy_headers"] = proxy_headers

    def __repr__(self) -> str:
        return f"HTTPExtender({self.config.url_prefix!r})"

    @property
    def name(self) -> str:
        return self.config.url_prefix

    def is_ignorable(self) -> bool:
        return self.config.ignorable

    def is_interested(self, pod: Pod) -> bool:
        """Upstream ``IsInterested``: no managed resources, or a container (init containers too)
        requesting or limiting one of them."""
        if not self._managed:
            return True
        spec = pod.spec
        return _uses(spec.containers, self._managed) or _uses(spec.init_containers, self._managed)

    def is_filter(self) -> bool:
        return bool(self.config.filter_verb)

    def is_prioritizer(self) -> bool:
        return bool(self.config.prioritize_verb)

    def is_binder(self) -> bool:
        return bool(self.config.bind_verb)

    def supports_preemption(self) -> bool:
        return bool(self.config.preempt_verb)

    # --- verbs -----------------------------------------------------------------------------------
    def _args(self, pod: Pod, nodes: Sequence[NodeInfo]) -> bytes:
        if self.config.node_cache_capable:
            return wire.extender_args(pod, [ni.name for ni in nodes], None)
        return wire.extender_args(pod, None, (ni.node for ni in nodes if ni.node is not None))

    async def filter(self, pod: Pod, nodes: Sequence[NodeInfo]) -> FilterVerdict:
        verb = self.config.filter_verb
        if not verb:
            return FilterVerdict(list(nodes))
        by_name = {ni.name: ni for ni in nodes}
        reply = wire.decode_filter_result(await self._send(verb, self._args(pod, nodes)))
        if reply.error:
            raise ExtenderError(reply.error)  # upstream: the extender's own text, nothing added
        if self.config.node_cache_capable and reply.node_names is not None:
            names = reply.node_names
        else:
            names = reply.nodes or []
        kept: dict[str, NodeInfo] = {}
        for node_name in names:
            ni = by_name.get(node_name)
            if ni is None:
                raise ExtenderError(
                    f'extender "{self.name}" claims a filtered node "{node_name}" '
                    "which is not found in the input node list"
                )
            kept.setdefault(node_name, ni)
        return FilterVerdict(list(kept.values()), reply.failed, reply.failed_and_unresolvable)

    async def prioritize(self, pod: Pod, nodes: Sequence[NodeInfo]) -> tuple[list[tuple[str, int]], int]:
        verb = self.config.prioritize_verb
        if not verb:
            return [(ni.name, 0) for ni in nodes], 0
        scores = wire.decode_host_priorities(await self._send(verb, self._args(pod, nodes)))
        return scores, self.config.weight

    async def bind(self, pod: Pod, node_name: str) -> None:
        verb = self.config.bind_verb
        if not verb:
            raise ExtenderError("unexpected empty bindVerb in extender")
        error = wire.decode_binding_result(await self._send(verb, wire.binding_args(pod, node_name)))
        if error:
            raise ExtenderError(error)

    async def process_preemption(
        self, pod: Pod, victims: Mapping[str, Victims], nodes: Mapping[str, NodeInfo]
    ) -> dict[str, Victims]:
        verb = self.config.preempt_verb
        if not verb:
            raise ExtenderError(
                f"preempt verb is not defined for extender {self.name} but run into ProcessPreemption"
            )
        body = wire.preemption_args(pod, victims, meta_only=self.config.node_cache_capable)
        answer = wire.decode_preemption_result(await self._send(verb, body))
        out: dict[str, Victims] = {}
        for node_name, meta in answer.items():
            ni = nodes.get(node_name)
            if ni is None:
                raise ExtenderError(f'nodeinfo not found for node name "{node_name}"')
            if meta is None:
                out[node_name] = Victims([])
                continue
            by_uid = {pi.uid: pi for pi in ni.pods}
            pods = []
            for uid in meta.uids:
                pi = by_uid.get(uid)
                if pi is None:
                    # upstream formats the *MetaPod with %v: &{UID}
                    raise ExtenderError(
                        f"extender: {self.name} claims to preempt pod (UID: &{{{uid}}}) on node: "
                        f"{node_name}, but the pod is not found on that node"
                    )
                pods.append(pi)
            out[node_name] = Victims(pods, meta.num_pdb_violations)
        return out

    async def _send(self, verb: str, body: bytes) -> bytes:
        """POST ``body`` to ``verb``; the errors read as upstream's (Go's ``net/http`` client's) texts."""
        url = f"{self._url}/{verb}"
        session = self._owner.session()
        headers_seen = False
        try:
            async with session.post(
                url, data=body, headers=_HEADERS, timeout=self._timeout, **self._request_options
            ) as resp:
                headers_seen = True
                if resp.status != 200:
                    raise ExtenderError(f"failed {verb} with extender at URL {url}, code {resp.status}")
                return await resp.read()
        except TimeoutError as exc:  # httpTimeout bounds the whole call, as the Go client's Timeout
            if headers_seen:  # the body's decoding reads it: no url.Error around it
                raise ExtenderError(
                    "context deadline exceeded (Client.Timeout or context cancellation while reading body)"
                ) from exc
            raise ExtenderError(
                f'Post "{url}": context deadline exceeded (Client.Timeout exceeded while awaiting headers)'
            ) from exc
        except aiohttp.ClientConnectorError as exc:
            if isinstance(exc.os_error, ConnectionRefusedError):
                raise ExtenderError(
                    f'Post "{url}": dial tcp {exc.host}:{exc.port}: connect: connection refused'
                ) from exc
            raise ExtenderError(f'Post "{url}": {exc}') from exc
        except aiohttp.ClientError as exc:
            raise ExtenderError(f'Post "{url}": {exc}') from exc


def _check_protocol(ext: HTTPExtender) -> Extender:
    """Static check that :class:`HTTPExtender` is a framework :class:`Extender`."""
    return ext


__all__ = ["CONNECTION_LIMIT", "ExtenderConfigError", "HTTPExtender", "HTTPExtenders"]
