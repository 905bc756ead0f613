"""The live keys of a JetStream KV bucket, read without nats-py's ``KeyValue.keys()``.

nats-py lists keys with a push consumer and ends the listing at a marker it places from the
consumer's info (nothing pending, nothing delivered yet) or from a message's ``num_pending``. While
other keys were being written it now and then reported no keys for a bucket holding one
(``tests/bus/test_kv_keys.py``), and an informer restoring its ledger or its group commits would
then find none. A pull consumer delivers nothing before it is asked: the count of messages it
holds is known when it is created, and the listing reads exactly that many.
"""

from __future__ import annotations

import contextlib
import uuid

import nats.errors
from nats.aio.msg import Msg
from nats.js import JetStreamContext
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy
from nats.js.errors import NotFoundError

FETCH_BATCH = 256
FETCH_TIMEOUT = 5.0
KV_OPERATION = "KV-Operation"
"""The header a KV delete or purge marker carries (nats-py's ``KV_OP``)."""
_MARKER_REASON = "Nats-Marker-Reason"  # nats-server 2.11+: a marker placed by the server (TTL, purge)
_GONE = {"DEL", "PURGE"}


def _is_live(msg: Msg) -> bool:
    headers = msg.headers or {}
    return headers.get(KV_OPERATION) not in _GONE and _MARKER_REASON not in headers


async def live_keys(js: JetStreamContext, bucket: str) -> list[str]:
    """Every key of KV ``bucket`` whose last value is not a delete or purge marker, in stream
    order. Raises ``nats.errors.TimeoutError`` if the server stops delivering what it counted."""
    stream = f"KV_{bucket}"
    prefix = f"$KV.{bucket}."
    name = f"ksched-keys-{uuid.uuid4().hex}"
    config = ConsumerConfig(
        name=name,
        filter_subject=f"{prefix}>",
        deliver_policy=DeliverPolicy.LAST_PER_SUBJECT,
        ack_policy=AckPolicy.NONE,
        headers_only=True,
        mem_storage=True,
        inactive_threshold=60.0,
    )
    info = await js.add_consumer(stream, config)  # counted now; nothing is delivered before a fetch
    sub = await js.pull_subscribe_bind(consumer=name, stream=stream)
    try:
        return await _read(sub, prefix, info.num_pending or 0)
    finally:
        await sub.unsubscribe()
        with contextlib.suppress(NotFoundError, nats.errors.Error):
            await js.delete_consumer(stream, name)


async def _read(sub: JetStreamContext.PullSubscription, prefix: str, left: int) -> list[str]:
    keys: list[str] = []
    while left > 0:
        try:
            batch = await sub.fetch(min(left, FETCH_BATCH), timeout=FETCH_TIMEOUT)
        except nats.errors.TimeoutError:
            if (await sub.consumer_info()).num_pending:
                raise
            break  # messages counted at creation and removed since (a purge): none left to read
        for msg in batch:
            left -= 1
            if _is_live(msg):
                keys.append(msg.subject[len(prefix) :])
            if msg.metadata.num_pending == 0:
                left = 0  # the last one the consumer holds
    return keys
