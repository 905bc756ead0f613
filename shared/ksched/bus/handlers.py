"""Subscriber side of the bus: decode, hand to a typed handler, never let a bad message crash a service.

``guarded(...)`` wraps a typed handler into the ``async def cb(msg)`` nats-py wants. A message that
does not decode (:class:`~ksched.bus.codec.BadMessage`) is logged in one line naming the subject and
the problem, counted in ``ksched_bus_bad_messages_total{subject_kind}``, and dropped; a handler that
raises is logged with its traceback and counted in ``ksched_bus_handler_errors_total``. Either way a
requester waiting for a reply gets an error reply at once instead of a timeout, as it does when the
reply is too large to send.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import nats.errors
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg

from ksched.bus.codec import BadMessage, Message, decode, encode
from ksched.bus.metrics import BAD_MESSAGES, HANDLER_ERRORS
from ksched.bus.subjects import SubjectKind

log = logging.getLogger("ksched.bus")

M = TypeVar("M", bound=Message)

Handler = Callable[[M, Msg], Awaitable[Message | None]]
"""``async def handle(message, raw_msg) -> reply or None``; a reply is sent if the sender asked for one."""

Callback = Callable[[Msg], Awaitable[None]]

ERROR_HEADER = "Nats-Service-Error"
ERROR_CODE_HEADER = "Nats-Service-Error-Code"


def report_bad_message(kind: SubjectKind | str, subject: str, problem: BadMessage | str) -> None:
    """One log line and one counter increment for a message that was dropped."""
    text = problem.problem if isinstance(problem, BadMessage) else problem
    BAD_MESSAGES.labels(subject_kind=str(kind)).inc()
    log.warning("bus: dropped bad message on %s (%s): %s", subject, kind, text)


def decode_or_report(data: bytes, msg_type: type[M], kind: SubjectKind | str, subject: str) -> M | None:
    """``decode`` for hand-written receive loops: ``None`` (reported) instead of raising."""
    try:
        return decode(data, msg_type)
    except BadMessage as exc:
        report_bad_message(kind, subject, exc)
        return None


async def reply_error(nc: NATS, reply: str, code: int, description: str) -> None:
    """Answer a request with an error (headers only; see :class:`ksched.bus.rpc.RequestError`)."""
    text = " ".join(description.split())[:1000]  # header values cannot hold newlines
    try:
        await nc.publish(reply, b"", headers={ERROR_HEADER: text, ERROR_CODE_HEADER: str(code)})
    except Exception as exc:  # the connection may be closing; the requester then times out
        log.debug("bus: could not send error reply to %s: %s", reply, exc)


def guarded(
    nc: NATS,
    kind: SubjectKind | str,
    decode_as: object,
    handler: Handler[Any],
    *,
    replies: bool = True,
) -> Callback:
    """A nats-py callback decoding ``decode_as`` (an endpoint's message type, or their union) and
    calling ``handler``; see the module docstring. Typed through the endpoint that supplies both
    (``Bus.subscribe``, ``jetstream.subscribe_ordered``).

    ``replies=False`` for JetStream push subscriptions, whose reply subject is the ack subject.
    """

    async def callback(msg: Msg) -> None:
        reply_to = msg.reply if replies else ""
        try:
            message = decode(msg.data, decode_as)
        except BadMessage as exc:
            report_bad_message(kind, msg.subject, exc)
            if reply_to:
                await reply_error(nc, reply_to, 400, exc.problem)
            return
        try:
            answer = await handler(message, msg)
        except Exception as exc:
            HANDLER_ERRORS.labels(subject_kind=str(kind)).inc()
            log.exception("bus: handler for %s (%s) failed on %s", msg.subject, kind, type(message).__name__)
            if reply_to:
                await reply_error(nc, reply_to, 500, f"{type(exc).__name__}: {exc}")
            return
        if answer is not None and reply_to:
            data = encode(answer)
            try:
                await nc.publish(reply_to, data)
            except nats.errors.MaxPayloadError:
                HANDLER_ERRORS.labels(subject_kind=str(kind)).inc()
                log.error(
                    "bus: the reply to %s (%s) is too large to send (%d bytes)", msg.subject, kind, len(data)
                )
                await reply_error(nc, reply_to, 500, f"the reply is too large to send ({len(data)} bytes)")

    return callback
