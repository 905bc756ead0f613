"""Small typed helpers over nats-py JetStream: streams, deduplicated publish, pull consumers, KV.

Everything takes a :class:`~ksched.bus.connect.Bus`, so pull subscriptions are unsubscribed before
the connection drains (a timed-out fetch otherwise makes ``drain()`` wait its whole timeout).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import logging
import re
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Generic, TypeVar, cast

import nats.errors
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription
from nats.js import JetStreamContext
from nats.js.api import (
    ConsumerConfig,
    DeliverPolicy,
    KeyValueConfig,
    PubAck,
    StorageType,
    StreamConfig,
    StreamInfo,
)
from nats.js.errors import (
    APIError,
    BucketNotFoundError,
    KeyNotFoundError,
    KeyWrongLastSequenceError,
    NotFoundError,
)
from nats.js.kv import KeyValue

from ksched.bus.codec import BadMessage, Message, decode, encode
from ksched.bus.connect import REPLICAS_SETTING, Bus, check_replicas
from ksched.bus.endpoints import PublishEndpoint, Wildcard
from ksched.bus.handlers import guarded, report_bad_message
from ksched.bus.kv_keys import KV_OPERATION, live_keys
from ksched.bus.limits import check_message
from ksched.bus.streams import all_streams
from ksched.bus.subjects import SubjectKind

M = TypeVar("M", bound=Message)

log = logging.getLogger("ksched.bus")

MSG_ID_HEADER = "Nats-Msg-Id"
PUBLISHED_AGAIN_HEADER = "Ksched-Published-Again"
"""Set (``1``) on a message published again under an earlier message's msg id (an informer leader
republishing a placement it restored from the ledger, or whose publish went unacknowledged): within
the stream's duplicate window the stream drops it, past it the copy is a new message whose first
delivery may follow an earlier one (:attr:`Delivery.seen_before`)."""
_STREAM_CONFIG_CONFLICT = 10058  # JSStreamNameExistErr: same name, different configuration
_REPLICA_REFUSALS = {
    10005,  # JSClusterNoPeersErr: no suitable peers for placement (fewer servers than replicas)
    10061,  # JSStreamReplicasNotUpdatableErr (older servers)
    10074,  # JSStreamReplicasNotSupportedErr: replicas > 1 not supported in non-clustered mode
}


class JetStreamReplicasError(RuntimeError):
    """The server refused a stream or KV bucket with the configured number of replicas."""

    def __init__(self, stream: str, replicas: int, cause: APIError) -> None:
        super().__init__(
            f"JetStream stream {stream}: the server refused {replicas} replica(s) "
            f"({cause.description}, error {cause.err_code}); set {REPLICAS_SETTING} to at most "
            f"the number of JetStream servers (1 for a single nats-server)"
        )
        self.stream = stream
        self.replicas = replicas


def _refused_replicas(exc: APIError) -> bool:
    return exc.err_code in _REPLICA_REFUSALS


# --- streams -------------------------------------------------------------------------------------------


async def ensure_stream(bus: Bus, config: StreamConfig) -> StreamInfo:
    """Create the stream, or bring an existing one to ``config`` (idempotent, safe to race).

    ``config.num_replicas`` None takes ``bus.jetstream_replicas``. An existing stream with another
    replica count is scaled to it (logged; returns once the new replicas are current). A count the
    server cannot place raises :class:`JetStreamReplicasError`, which names the setting.
    """
    if config.num_replicas is None:
        config = config.evolve(num_replicas=bus.jetstream_replicas)
    name, replicas = config.name or "", check_replicas(config.num_replicas or 1)
    try:
        try:
            return await bus.js.add_stream(config)
        except APIError as exc:
            if exc.err_code != _STREAM_CONFIG_CONFLICT:
                raise
        scaling = _announce_scaling(await bus.js.stream_info(name), replicas)
        info = await bus.js.update_stream(config)
    except APIError as exc:
        if _refused_replicas(exc):
            raise JetStreamReplicasError(name, replicas, exc) from exc
        raise
    return await _await_replicas(bus, name, replicas) if scaling else info


async def ensure_streams(bus: Bus, configs: Sequence[StreamConfig] | None = None) -> list[StreamInfo]:
    """Every ksched stream of ``bus.subjects`` (or the given configs)."""
    return [await ensure_stream(bus, cfg) for cfg in (configs or all_streams(bus.subjects))]


async def ensure_replicas(bus: Bus, stream: str, replicas: int) -> StreamInfo:
    """Scale an existing stream (e.g. a KV bucket's ``KV_<bucket>``) to ``replicas``, leaving the
    rest of its configuration alone; :class:`JetStreamReplicasError` if the server refuses."""
    info = await bus.js.stream_info(stream)
    if not _announce_scaling(info, replicas):
        return info
    try:
        await bus.js.update_stream(info.config.evolve(num_replicas=replicas))
    except APIError as exc:
        if _refused_replicas(exc):
            raise JetStreamReplicasError(stream, replicas, exc) from exc
        raise
    return await _await_replicas(bus, stream, replicas)


def _announce_scaling(info: StreamInfo, replicas: int) -> bool:
    """Whether the stream has another replica count than ``replicas`` (logged if so)."""
    current = info.config.num_replicas or 1
    if current == replicas:
        return False
    log.warning(
        "JetStream stream %s has %d replica(s): scaling it to %d (%s)",
        info.config.name,
        current,
        replicas,
        REPLICAS_SETTING,
    )
    return True


async def _await_replicas(bus: Bus, stream: str, replicas: int, timeout: float = 30.0) -> StreamInfo:
    """Wait until a scaled stream has a leader and ``replicas - 1`` current followers: writes sent
    while its new group forms may go unanswered. After ``timeout`` s, log and carry on."""
    deadline = time.monotonic() + timeout
    info: StreamInfo | None = None
    while True:
        with contextlib.suppress(APIError, nats.errors.TimeoutError):
            info = await bus.js.stream_info(stream)
            cluster = info.cluster
            followers = (cluster.replicas or []) if cluster is not None else []
            if cluster is None or (
                cluster.leader and len(followers) == replicas - 1 and all(p.current for p in followers)
            ):
                return info
        if time.monotonic() > deadline:
            log.warning(
                "JetStream stream %s: %d replicas not all current after %.0f s", stream, replicas, timeout
            )
            return info if info is not None else await bus.js.stream_info(stream)
        await asyncio.sleep(0.1)


async def last_sequence(bus: Bus, stream: str) -> int:
    """The stream's last sequence (0 when empty): a position every later message is after."""
    info = await bus.js.stream_info(stream)
    return int(info.state.last_seq or 0)


async def publish(
    bus: Bus,
    endpoint: PublishEndpoint[M],
    message: M,
    *,
    msg_id: str = "",
    headers: dict[str, str] | None = None,
    timeout: float | None = None,
) -> PubAck:
    """Publish to a stream and wait for its ack. With ``msg_id`` the stream drops a repeat sent within
    its duplicate window (the ack then has ``duplicate`` true; see :func:`is_duplicate`)."""
    subject, payload, hdrs = _outgoing(bus, endpoint, message, msg_id, headers)
    return await bus.js.publish(subject, payload, timeout=timeout, headers=hdrs)


async def publish_started(
    bus: Bus,
    endpoint: PublishEndpoint[M],
    message: M,
    *,
    msg_id: str = "",
    headers: dict[str, str] | None = None,
    timeout: float = 5.0,
) -> Awaitable[PubAck]:
    """:func:`publish` without waiting for the ack: returns once the message is queued on the
    connection, with what to await for its ack (raising as :func:`publish` would, ``TimeoutError``
    after ``timeout`` s). Messages sent by calls awaited one after the other are on the connection
    in that order, so their acks are awaited in one round trip instead of one each."""
    subject, payload, hdrs = _outgoing(bus, endpoint, message, msg_id, headers)
    return _acked(await bus.js.publish_async(subject, payload, headers=hdrs), timeout)


def _outgoing(
    bus: Bus, endpoint: PublishEndpoint[M], message: M, msg_id: str, headers: dict[str, str] | None
) -> tuple[str, bytes, dict[str, str] | None]:
    """What a publish to a stream sends: subject, payload, headers (``msg_id`` among them); checked
    against the endpoint and the connection's size limit."""
    endpoint.check(message)
    subject = endpoint.subject(bus.subjects)
    hdrs = dict(headers or {})
    if msg_id:
        hdrs[MSG_ID_HEADER] = msg_id
    payload = encode(message)
    check_message(bus.nc, subject, payload, hdrs)
    return subject, payload, hdrs or None


def _acked(future: asyncio.Future[PubAck], timeout: float) -> asyncio.Future[PubAck]:
    """``future`` failed with ``TimeoutError`` when not done within ``timeout`` s (a timer, not a
    task around ``wait_for``: no task and its steps per publish), and retrieved once done, so that
    an ack nobody awaits in the end is not logged by asyncio."""
    timer = future.get_loop().call_later(timeout, _expire, future)
    future.add_done_callback(lambda done: _retrieved(done, timer))
    return future


def _expire(future: asyncio.Future[PubAck]) -> None:
    if not future.done():
        future.set_exception(TimeoutError("no ack from the stream in time"))


def _retrieved(future: asyncio.Future[PubAck], timer: asyncio.TimerHandle) -> None:
    timer.cancel()
    if not future.cancelled():
        future.exception()  # retrieved: a failure nobody awaited is not logged by asyncio


def is_duplicate(ack: PubAck) -> bool:
    """nats-py reports ``duplicate=None`` (not False) for a first publish."""
    return bool(ack.duplicate)


# --- pull consumers ------------------------------------------------------------------------------------


class Delivery(Generic[M]):
    """One decoded JetStream message and its acknowledgement controls."""

    __slots__ = ("message", "raw")

    def __init__(self, message: M, raw: Msg) -> None:
        self.message = message
        self.raw = raw

    @property
    def num_delivered(self) -> int:
        """1 on first delivery, more on redeliveries."""
        return self.raw.metadata.num_delivered

    @property
    def seen_before(self) -> bool:
        """Whether this message, or an earlier one with its msg id, may have been delivered before:
        a redelivery, or a message published again (:data:`PUBLISHED_AGAIN_HEADER`)."""
        return self.num_delivered > 1 or bool((self.raw.headers or {}).get(PUBLISHED_AGAIN_HEADER))

    @property
    def stream_seq(self) -> int:
        return self.raw.metadata.sequence.stream

    async def ack(self) -> None:
        """Done: the work queue removes the message."""
        await self.raw.ack()

    async def nak(self, delay: float | None = None) -> None:
        """Failed: redeliver (after ``delay`` seconds)."""
        await self.raw.nak(delay=delay)

    async def in_progress(self) -> None:
        """Still working: restart the ack-wait timer."""
        await self.raw.in_progress()

    async def term(self) -> None:
        """Never redeliver."""
        await self.raw.term()


JS_API = "$JS.API"
"""JetStream's API subject prefix (no domain: the services use the account's own JetStream)."""


_FOLLOW = 0.002
"""Seconds a pull waits for its next message once it has one (:meth:`PullConsumer._pull`)."""


class PullConsumer(Generic[M]):
    """A durable pull consumer yielding typed deliveries; undecodable messages are reported and
    terminated (a poison message must not be redelivered forever).

    It speaks JetStream's pull protocol through nats-py's public client API: its own inbox
    subscription, and pull requests published to the consumer's ``MSG.NEXT`` subject with the inbox as
    reply (nats-py's ``PullSubscription.fetch`` can leave a lingering request for a whole batch
    behind, see :meth:`fetch`)."""

    def __init__(
        self, bus: Bus, stream: str, durable: str, inbox: Subscription, endpoint: PublishEndpoint[M]
    ) -> None:
        self._bus = bus
        self._stream = stream
        self._durable = durable
        self._inbox = inbox
        self.inbox = inbox.subject
        """Where the messages of this consumer's pull requests arrive."""
        self.next_subject = f"{JS_API}.CONSUMER.MSG.NEXT.{stream}.{durable}"
        """Where a pull request for the durable consumer is published."""
        self._endpoint = endpoint
        self._closed = False
        bus.before_close(self.close)

    @classmethod
    async def create(
        cls, bus: Bus, endpoint: PublishEndpoint[M], *, stream: str, config: ConsumerConfig
    ) -> PullConsumer[M]:
        """Bind to durable ``config.durable_name`` on ``stream`` (created from ``config`` if absent),
        reading ``endpoint``'s messages (``config.filter_subject`` defaults to its subject)."""
        durable = config.durable_name
        if not durable:
            raise ValueError("a pull consumer config needs durable_name")
        try:
            await bus.js.consumer_info(stream, durable)
        except NotFoundError:
            subject = config.filter_subject or endpoint.subject(bus.subjects)
            wanted = dataclasses.replace(config, name=durable, filter_subject=subject)
            await bus.js.add_consumer(stream, config=wanted)
        inbox = await bus.nc.subscribe(bus.nc.new_inbox())
        return cls(bus, stream, durable, inbox, endpoint)

    async def fetch(self, batch: int = 1, timeout: float = 1.0) -> list[Delivery[M]]:
        """Up to ``batch`` messages, waiting at most ``timeout`` s for the first; ``[]`` when none
        arrived. Returns as soon as it has any: what earlier requests delivered, else what one pull
        request gets: a no-wait request for ``batch`` that expires, which the server holds until a
        message comes and ends (status 404) once it has delivered what the stream held then, so no
        request lingers after it. One request per fetch: a lone placement costs one pull request
        and its end, where a no-wait probe followed by a lingering request cost two requests and a
        status (issue 39). nats-py's own ``fetch`` for a batch left a lingering request for the
        whole batch on the server after a status message raced it, and the next fetch then waited
        for a second message to arrive before returning the first (a lone placement bound ~0.1 s
        late at 10 pods/s, issue 39)."""
        raws = await self._delivered(batch)
        if not raws:
            request: dict[str, object] = {"batch": batch, "no_wait": True}
            expires = int(timeout * 1e9) - 1_000_000  # the server ends it before the client gives up
            if expires > 0:
                request["expires"] = expires
            raws = await self._pull(request, batch, timeout, lingering=expires > 0)
        out: list[Delivery[M]] = []
        endpoint = self._endpoint
        for raw in raws:
            try:
                message = cast("M", decode(raw.data, endpoint.decode_as))
            except BadMessage as exc:  # a poison message: reported, never redelivered
                report_bad_message(endpoint.kind, raw.subject, exc)
                await raw.term()
                continue
            out.append(Delivery(message, raw))
        return out

    async def _delivered(self, batch: int) -> list[Msg]:
        """Messages already in the inbox (delivered to an earlier request after its fetch returned),
        up to ``batch``; status messages dropped."""
        out: list[Msg] = []
        while len(out) < batch and self._inbox.pending_msgs > 0:
            msg = await self._inbox.next_msg(timeout=1.0)  # there: it returns at once
            if not JetStreamContext.is_status_msg(msg):
                out.append(msg)
        return out

    async def _pull(
        self, request: dict[str, object], batch: int, timeout: float, lingering: bool = False
    ) -> list[Msg]:
        """Send one pull request and read its messages: up to ``batch``, until a status ends it (a
        no-wait request: 404 when fewer are there), ``timeout``, or, once it has one, until none
        follows within ``_FOLLOW`` s (what comes later stays in the inbox for the next fetch: a
        message may come from an earlier request while this one still waits, and this one's come
        back to back). A lingering request waits for its first message through statuses
        (heartbeats, the end of an earlier request)."""
        await self._bus.nc.publish(self.next_subject, json.dumps(request).encode(), reply=self.inbox)
        deadline = time.monotonic() + timeout
        out: list[Msg] = []
        while len(out) < batch:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            try:
                msg = await self._inbox.next_msg(timeout=min(left, _FOLLOW) if out else left)
            except (nats.errors.TimeoutError, TimeoutError):
                break
            status = JetStreamContext.is_status_msg(msg)
            if not status:
                out.append(msg)
            elif status in ("100", "404", "408"):  # heartbeat, no messages, request expired/pending
                if not lingering or out:
                    break
            else:
                raise APIError.from_msg(msg)
        return out

    async def pending(self) -> int:
        """Messages not yet delivered plus delivered but unacknowledged."""
        info = await self._bus.js.consumer_info(self._stream, self._durable)
        return int(info.num_pending or 0) + int(info.num_ack_pending or 0)

    async def close(self) -> None:
        """Unsubscribe the inbox (the durable consumer stays on the server)."""
        if not self._closed:
            self._closed = True
            with contextlib.suppress(Exception):
                await self._inbox.unsubscribe()


# --- ordered push consumers ----------------------------------------------------------------------------


async def subscribe_ordered(
    bus: Bus,
    endpoint: PublishEndpoint[M] | Wildcard[M],
    handler: Callable[[M, Msg], Awaitable[None]],
    *,
    stream: str,
    start_seq: int | None = None,
    new_only: bool = False,
) -> JetStreamContext.PushSubscription:
    """Replay ``endpoint``'s subject in stream order into a guarded handler (ephemeral ordered
    consumer).

    From stream sequence ``start_seq``, or only new messages with ``new_only``, else from the start.
    ``raw.metadata.sequence.stream`` gives a message's stream sequence inside the handler.
    """
    if start_seq is not None:
        config = ConsumerConfig(deliver_policy=DeliverPolicy.BY_START_SEQUENCE, opt_start_seq=start_seq)
    elif new_only:
        config = ConsumerConfig(deliver_policy=DeliverPolicy.NEW)
    else:
        config = ConsumerConfig(deliver_policy=DeliverPolicy.ALL)
    callback = guarded(bus.nc, endpoint.kind, endpoint.decode_as, handler, replies=False)
    subject = endpoint.subject(bus.subjects)
    sub = await bus.js.subscribe(subject, stream=stream, cb=callback, ordered_consumer=True, config=config)

    async def close() -> None:
        with contextlib.suppress(Exception):
            await sub.unsubscribe()

    bus.before_close(close)
    return sub


# --- key/value -----------------------------------------------------------------------------------------

_KEY_RE = re.compile(r"[-/_=.a-zA-Z0-9]+")


class CasConflict(Exception):
    """A compare-and-set lost: the key changed (or exists / does not exist) since it was read."""

    def __init__(self, bucket: str, key: str, detail: str) -> None:
        super().__init__(f"KV {bucket}/{key}: {detail}")
        self.bucket = bucket
        self.key = key


class KVEntry(Generic[M]):
    __slots__ = ("key", "revision", "value")

    def __init__(self, key: str, value: M, revision: int) -> None:
        self.key = key
        self.value = value
        self.revision = revision

    def __repr__(self) -> str:
        return f"KVEntry({self.key!r}, {self.value!r}, revision={self.revision})"


class TypedKV(Generic[M]):
    """A JetStream KV bucket holding one message type. Keys must match ``[-/_=.a-zA-Z0-9]+``
    (escape free-form parts with :func:`ksched.bus.tokens.encode_token`)."""

    def __init__(self, js: JetStreamContext, kv: KeyValue, bucket: str, msg_type: type[M]) -> None:
        self._js = js
        self._kv = kv
        self.bucket = bucket
        self._msg_type = msg_type

    @classmethod
    async def open(
        cls,
        bus: Bus,
        name: str,
        msg_type: type[M],
        *,
        history: int = 1,
        ttl: float | None = None,
        storage: StorageType = StorageType.FILE,
        replicas: int | None = None,
    ) -> TypedKV[M]:
        """Open (creating if needed) bucket ``bus.subjects.kv_bucket(name)`` with ``replicas``
        (default ``bus.jetstream_replicas``); an existing bucket keeps its other settings but is
        scaled to that count, as :func:`ensure_stream` does."""
        bucket = bus.subjects.kv_bucket(name)
        count = check_replicas(bus.jetstream_replicas if replicas is None else replicas)
        config = KeyValueConfig(bucket=bucket, history=history, ttl=ttl, storage=storage, replicas=count)
        try:
            kv = await bus.js.create_key_value(config)
        except APIError as exc:
            if _refused_replicas(exc):
                raise JetStreamReplicasError(f"KV_{bucket}", count, exc) from exc
            if exc.err_code != _STREAM_CONFIG_CONFLICT:
                raise
            kv = await bus.js.key_value(bucket)
            await ensure_replicas(bus, f"KV_{bucket}", count)
        return cls(bus.js, kv, bucket, msg_type)

    def _check_key(self, key: str) -> None:
        if not _KEY_RE.fullmatch(key) or key.startswith(".") or key.endswith(".") or ".." in key:
            raise ValueError(f"KV {self.bucket}: invalid key {key!r} (escape it with encode_token)")

    async def get(self, key: str) -> KVEntry[M] | None:
        """The current value, or None if absent or deleted. An undecodable value raises BadMessage."""
        self._check_key(key)
        try:
            entry = await self._kv.get(key)
        except KeyNotFoundError:
            return None
        try:
            value = decode(entry.value or b"", self._msg_type)
        except BadMessage as exc:
            report_bad_message(SubjectKind.KV, f"$KV.{self.bucket}.{key}", exc)
            raise
        return KVEntry(key, value, int(entry.revision or 0))

    async def put(self, key: str, value: M) -> int:
        """Unconditional write; returns the new revision."""
        self._check_key(key)
        return await self._kv.put(key, encode(value))

    async def put_started(self, bus: Bus, key: str, value: M, timeout: float = 5.0) -> Awaitable[PubAck]:
        """:meth:`put` without waiting for the ack, as :func:`publish_started` (the ack's ``seq`` is
        the new revision)."""
        self._check_key(key)
        return _acked(await bus.js.publish_async(f"$KV.{self.bucket}.{key}", encode(value)), timeout)

    async def create(self, key: str, value: M) -> int:
        """Write only if the key does not exist; raises :class:`CasConflict` otherwise."""
        self._check_key(key)
        try:
            return await self._kv.create(key, encode(value))
        except KeyWrongLastSequenceError as exc:
            raise CasConflict(self.bucket, key, "already exists") from exc

    async def update(self, key: str, value: M, revision: int) -> int:
        """Compare-and-set: write only if the key is still at ``revision``; else :class:`CasConflict`."""
        self._check_key(key)
        try:
            return await self._kv.update(key, encode(value), last=revision)
        except KeyWrongLastSequenceError as exc:
            raise CasConflict(self.bucket, key, f"not at revision {revision}") from exc

    async def delete(self, key: str, revision: int | None = None) -> None:
        """Delete (only at ``revision`` if given; else :class:`CasConflict`)."""
        self._check_key(key)
        try:
            await self._kv.delete(key, last=revision)
        except KeyWrongLastSequenceError as exc:
            raise CasConflict(self.bucket, key, f"not at revision {revision}") from exc

    async def delete_many(self, bus: Bus, keys: Sequence[str], *, acked: bool = True) -> None:
        """Delete ``keys`` with one round trip: every delete but the last is a core publish (one
        buffered write), the last waits for its ack. The bucket's stream stores one connection's
        messages in the order sent, so that ack confirms the batch was processed. ``acked=False``:
        the last is a core publish too (no round trip; for deletes whose loss is harmless)."""
        if not keys:
            return
        for key in keys:
            self._check_key(key)
        for key in keys[:-1] if acked else keys:
            await bus.nc.publish(f"$KV.{self.bucket}.{key}", b"", headers={KV_OPERATION: "DEL"})
        if acked:
            await self._kv.delete(keys[-1])

    async def purge_below(self, seq: int) -> None:
        """Remove every message of the bucket's stream below stream sequence ``seq`` (values and
        delete markers alike; one request)."""
        await self._js.purge_stream(f"KV_{self.bucket}", seq=seq)

    async def keys(self) -> list[str]:
        """The keys holding a value (not deleted), in the order they were last written."""
        return await live_keys(self._js, self.bucket)


async def migrate_kv_bucket(bus: Bus, legacy_bucket: str, target: TypedKV[M]) -> int:
    """Move the keys of KV bucket ``legacy_bucket`` (a full name) into ``target``, then delete it.

    A key ``target`` already holds is left as it is (it is newer). Returns the number of keys
    copied; 0 when there is no such bucket, which is the usual case. Safe to repeat: a run that
    stopped half-way copies the rest next time, since the old bucket is deleted only at the end.
    """
    try:
        legacy = await bus.js.key_value(legacy_bucket)
    except BucketNotFoundError:
        return 0
    keys = await live_keys(bus.js, legacy_bucket)
    copied = 0
    for key in keys:
        try:
            entry = await legacy.get(key)
        except KeyNotFoundError:
            continue
        try:
            await target._kv.create(key, entry.value or b"")
        except KeyWrongLastSequenceError:
            continue
        copied += 1
    await bus.js.delete_key_value(legacy_bucket)
    log.info(
        "KV bucket %s: moved %d of %d key(s) into %s and deleted it",
        legacy_bucket,
        copied,
        len(keys),
        target.bucket,
    )
    return copied
