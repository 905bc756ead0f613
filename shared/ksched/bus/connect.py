"""Connecting a service to NATS, and the :class:`Bus` handle services pass around.

``connect`` reconnects forever (nats-py's default gives up after ~2 minutes), logs connection changes
once each, and returns a :class:`Bus`: the nats-py client plus this installation's subjects, typed
publish / request / subscribe, a readiness flag for ``/readyz``, and a ``close`` that avoids the
pull-subscription drain hang (see ``../shared/libraries.md`` beside the repository).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import ssl
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar, overload

from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription
from nats.js import JetStreamContext

from ksched.bus.codec import Message, encode
from ksched.bus.endpoints import PublishEndpoint, RequestEndpoint, Wildcard
from ksched.bus.handlers import Handler, guarded
from ksched.bus.limits import check_message
from ksched.bus.rpc import request
from ksched.bus.subjects import Subjects

log = logging.getLogger("ksched.bus")

M = TypeVar("M", bound=Message)
Q = TypeVar("Q", bound=Message)
R = TypeVar("R", bound=Message)

TRACE_ID_HEADER = "Ksched-Trace-Id"
"""Header carrying the attempt's trace id across hops."""


CLOSE_TIMEOUT = 18.0
"""Seconds :meth:`Bus.close` may take (nats-py drains subscriptions for up to 5 s, then flushes for
up to 10 s)."""

REPLICAS_SETTING = "--jetstream-replicas / KSCHED_JETSTREAM_REPLICAS"
"""The service option that sets :attr:`Bus.jetstream_replicas` (named in errors about it)."""

MAX_REPLICAS = 5
"""JetStream's limit on a stream's replicas."""


class BusConnectError(ConnectionError):
    """The first connection to NATS did not succeed within ``initial_timeout``."""


def check_replicas(replicas: int) -> int:
    """``replicas`` if JetStream accepts it (1..5), else ValueError naming the setting."""
    if isinstance(replicas, bool) or not isinstance(replicas, int) or not 1 <= replicas <= MAX_REPLICAS:
        raise ValueError(f"{REPLICAS_SETTING}: {replicas!r} is not a replica count from 1 to {MAX_REPLICAS}")
    return replicas


class Bus:
    """A service's connection to NATS for one ksched installation (one subject prefix)."""

    def __init__(self, nc: NATS, subjects: Subjects, name: str, *, jetstream_replicas: int = 1) -> None:
        self.nc = nc
        self.subjects = subjects
        self.name = name
        self.jetstream_replicas = check_replicas(jetstream_replicas)
        """Replicas of the streams and KV buckets this bus creates (1 for one nats-server; 3 for a
        3-server JetStream cluster, so losing a server loses nothing)."""
        self.js: JetStreamContext = nc.jetstream()
        self._subscriptions: list[Subscription] = []
        self._before_close: list[Callable[[], Awaitable[None]]] = []
        self._reconnect_hooks: list[Callable[[], None]] = []

    @property
    def ready(self) -> bool:
        """Connected and usable (False while reconnecting, draining or closed)."""
        return bool(self.nc.is_connected)

    # --- messaging -----------------------------------------------------------------------------------
    async def publish(
        self,
        endpoint: PublishEndpoint[M],
        message: M,
        *,
        trace_id: str = "",
        headers: dict[str, str] | None = None,
    ) -> None:
        """Core NATS publish (at most once) of ``message`` on ``endpoint``'s subject."""
        endpoint.check(message)
        subject = endpoint.subject(self.subjects)
        payload, all_headers = encode(message), _with_trace(headers, trace_id)
        check_message(self.nc, subject, payload, all_headers)
        await self.nc.publish(subject, payload, headers=all_headers)

    async def request(
        self,
        endpoint: RequestEndpoint[Q, R],
        message: Q,
        *,
        timeout: float = 2.0,
        trace_id: str = "",
        headers: dict[str, str] | None = None,
    ) -> R:
        """Request/reply on ``endpoint``: the decoded reply; see :func:`ksched.bus.rpc.request` for
        the exceptions."""
        if not isinstance(message, endpoint.request):
            raise TypeError(f"{endpoint.name}: {type(message).__name__} is not {endpoint.request.__name__}")
        return await request(
            self.nc,
            endpoint.subject(self.subjects),
            message,
            endpoint.reply,
            timeout=timeout,
            headers=_with_trace(headers, trace_id),
        )

    async def reply(self, endpoint: RequestEndpoint[Q, R], reply_to: str, answer: R) -> None:
        """Answer a request of ``endpoint`` later than its handler returned (a long poll)."""
        if not isinstance(answer, endpoint.reply):
            raise TypeError(f"{endpoint.name}: {type(answer).__name__} is not {endpoint.reply.__name__}")
        await self.nc.publish(reply_to, encode(answer))

    @overload
    async def subscribe(
        self,
        endpoint: RequestEndpoint[Q, R],
        handler: Callable[[Q, Msg], Awaitable[R | None]],
        *,
        queue: str = "",
    ) -> Subscription: ...
    @overload
    async def subscribe(
        self,
        endpoint: PublishEndpoint[M] | Wildcard[M],
        handler: Callable[[M, Msg], Awaitable[None]],
        *,
        queue: str = "",
    ) -> Subscription: ...
    async def subscribe(
        self,
        endpoint: RequestEndpoint[Any, Any] | PublishEndpoint[Any] | Wildcard[Any],
        handler: Handler[Any],
        *,
        queue: str = "",
    ) -> Subscription:
        """Subscribe a typed handler to ``endpoint`` (guarded: bad messages are reported, never raised).

        A request endpoint's handler returns the reply (or None to answer later with :meth:`reply`).
        ``queue`` makes the subscribers of one group share the messages (e.g. several standbys).
        """
        decode_as = endpoint.request if isinstance(endpoint, RequestEndpoint) else endpoint.decode_as
        callback = guarded(self.nc, endpoint.kind, decode_as, handler)
        sub = await self.nc.subscribe(endpoint.subject(self.subjects), queue=queue, cb=callback)
        self._subscriptions.append(sub)
        return sub

    async def unsubscribe_all(self) -> None:
        """Remove every subscription made through :meth:`subscribe`."""
        subs, self._subscriptions = self._subscriptions, []
        for sub in subs:
            with contextlib.suppress(Exception):
                await sub.unsubscribe()

    # --- lifecycle -----------------------------------------------------------------------------------
    def after_reconnect(self, hook: Callable[[], None]) -> None:
        """Call ``hook`` after each reconnect: a restarted server has lost the ordered consumers
        (kept in memory), which nats-py recreates only after missing heartbeats for 10-20 s."""
        self._reconnect_hooks.append(hook)

    def _reconnected(self) -> None:
        """Run the :meth:`after_reconnect` hooks (a failing one is logged, the others still run)."""
        for hook in self._reconnect_hooks:
            try:
                hook()
            except Exception:
                log.exception("bus %s: a reconnect hook failed", self.name)

    def before_close(self, hook: Callable[[], Awaitable[None]]) -> None:
        """Run ``hook`` at the start of :meth:`close` (pull consumers unsubscribe here)."""
        self._before_close.append(hook)

    async def close(self, *, drain: bool = True, timeout: float = CLOSE_TIMEOUT) -> None:
        """Stop pull consumers, then drain (let handlers finish, flush publishes) or close at once.

        Bounded by ``timeout``: nats-py waits on the socket without a limit at the end of a close
        (its write buffer drained, the connection closed), so past it the connection is dropped."""
        closing = asyncio.ensure_future(self._close(drain))
        done, _ = await asyncio.wait([closing], timeout=timeout)
        if done:
            closing.result()
            return
        log.warning("bus %s: closing took over %.0f s; dropping the connection", self.name, timeout)
        _drop(self.nc)
        closing.cancel()
        await asyncio.wait([closing], timeout=1.0)

    async def _close(self, drain: bool) -> None:
        hooks, self._before_close = self._before_close, []
        for hook in reversed(hooks):
            try:
                await hook()
            except Exception as exc:
                log.debug("bus: close hook failed: %s", exc)
        self._subscriptions.clear()
        if self.nc.is_closed:
            return
        if drain and self.nc.is_connected:
            try:
                await self.nc.drain()
                return
            except Exception as exc:
                log.debug("bus: drain failed (%s); closing", exc)
        with contextlib.suppress(Exception):
            await self.nc.close()


def _drop(nc: NATS) -> None:
    """Close ``nc``'s socket at once and stop its background tasks (nats-py has no public way to):
    marked closed first, so that it does not reconnect."""
    nc._status = NATS.CLOSED
    for name in ("_reading_task", "_ping_interval_task", "_flusher_task", "_reconnection_task"):
        task = getattr(nc, name, None)
        if task is not None and not task.done():
            task.cancel()
    writer = getattr(getattr(nc, "_transport", None), "_io_writer", None)
    if writer is not None:
        writer.transport.abort()


def _with_trace(headers: dict[str, str] | None, trace_id: str) -> dict[str, str] | None:
    if not trace_id:
        return headers
    return {**(headers or {}), TRACE_ID_HEADER: trace_id}


class _ConnectionLog:
    """nats-py callbacks (all ``async def``) logging state changes once, repeated errors rarely."""

    def __init__(self, name: str, quiet_seconds: float = 30.0) -> None:
        self.name = name
        self.quiet_seconds = quiet_seconds
        self._last_error: tuple[str, float] = ("", 0.0)
        self.nc: NATS | None = None
        self.bus: Bus | None = None

    async def error(self, exc: Exception) -> None:
        text = f"{type(exc).__name__}: {exc}"
        now = time.monotonic()
        if text != self._last_error[0] or now - self._last_error[1] > self.quiet_seconds:
            self._last_error = (text, now)
            log.warning("bus %s: NATS error: %s", self.name, text)

    async def disconnected(self) -> None:
        if self.nc is not None and (self.nc.is_closed or self.nc.is_draining):
            return  # our own close()
        log.warning("bus %s: disconnected from NATS; reconnecting", self.name)

    async def reconnected(self) -> None:
        self._last_error = ("", 0.0)
        log.info("bus %s: reconnected to NATS", self.name)
        if self.bus is not None:
            self.bus._reconnected()

    async def closed(self) -> None:
        log.info("bus %s: NATS connection closed", self.name)


def server_list(servers: str | Sequence[str]) -> list[str]:
    """``servers`` as a list: a string may name several, comma-separated (``--nats a:4222,b:4222``)."""
    if isinstance(servers, str):
        servers = servers.split(",")
    return [s.strip() for s in servers if s.strip()]


async def connect(
    servers: str | Sequence[str],
    *,
    name: str,
    subjects: Subjects | None = None,
    user: str | None = None,
    password: str | None = None,
    token: str | None = None,
    creds_file: str | None = None,
    tls: ssl.SSLContext | None = None,
    tls_hostname: str | None = None,
    connect_timeout: float = 2.0,
    reconnect_time_wait: float = 0.5,
    max_reconnect_attempts: int = -1,
    ping_interval: float = 20.0,
    drain_timeout: float = 5.0,
    initial_timeout: float | None = 30.0,
    jetstream_replicas: int = 1,
) -> Bus:
    """Connect to NATS as service ``name`` (shown in NATS monitoring).

    Reconnects forever by default. ``initial_timeout`` bounds the wait for the *first* connection
    (``None``: wait forever, e.g. for a service started before NATS). ``creds_file`` (a NATS .creds
    file) needs the ``nkeys`` package, which is not a dependency yet. ``jetstream_replicas`` is the
    replica count of the streams and KV buckets created through the bus (:class:`Bus`).
    """
    check_replicas(jetstream_replicas)
    subjects = subjects or Subjects()
    events = _ConnectionLog(name)
    nc = NATS()
    events.nc = nc
    connecting = nc.connect(
        servers=server_list(servers),
        name=name,
        error_cb=events.error,
        disconnected_cb=events.disconnected,
        reconnected_cb=events.reconnected,
        closed_cb=events.closed,
        user=user,
        password=password,
        token=token,
        user_credentials=creds_file,
        tls=tls,
        tls_hostname=tls_hostname,
        connect_timeout=connect_timeout,  # type: ignore[arg-type]  # nats-py annotates int, takes float
        reconnect_time_wait=reconnect_time_wait,  # type: ignore[arg-type]
        max_reconnect_attempts=max_reconnect_attempts,
        ping_interval=ping_interval,  # type: ignore[arg-type]
        drain_timeout=drain_timeout,  # type: ignore[arg-type]
        inbox_prefix=subjects.inbox_prefix,
    )
    try:
        async with asyncio.timeout(initial_timeout):
            await connecting
    except TimeoutError as exc:
        with contextlib.suppress(Exception):
            await nc.close()
        raise BusConnectError(f"no NATS connection to {servers} within {initial_timeout} s") from exc
    events.bus = Bus(nc, subjects, name, jetstream_replicas=jetstream_replicas)
    return events.bus
