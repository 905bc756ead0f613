"""Requester side of request/reply: encode, send, turn error replies into exceptions, decode."""

from __future__ import annotations

import asyncio
from typing import TypeVar

import nats.errors
from nats.aio.client import Client as NATS

from ksched.bus.codec import BadMessage, Message, decode, encode
from ksched.bus.handlers import ERROR_CODE_HEADER, ERROR_HEADER, report_bad_message
from ksched.bus.limits import check_message
from ksched.bus.subjects import SubjectKind

R = TypeVar("R", bound=Message)

_NO_RESPONDERS_RETRY_DELAYS = (0.005, 0.025)
"""nats-server 2.15.1 can answer "no responders" for ~1 ms after another connection's SUB was
confirmed by its PONG (observed under CPU load). Two quick retries hide that race; a subject that
truly has no listener still fails within ~30 ms."""


class RequestError(Exception):
    """The responder answered with an error (it could not decode the request, or its handler failed)."""

    def __init__(self, subject: str, code: int, description: str) -> None:
        super().__init__(f"request on {subject} failed ({code}): {description}")
        self.subject = subject
        self.code = code
        self.description = description


async def request(
    nc: NATS,
    subject: str,
    message: Message,
    reply_type: type[R],
    *,
    timeout: float = 2.0,
    headers: dict[str, str] | None = None,
) -> R:
    """Send ``message`` and return the decoded reply.

    Raises :class:`RequestError` for an error reply, :class:`~ksched.bus.codec.BadMessage` for an
    undecodable reply (also reported), ``nats.errors.NoRespondersError`` when nobody listens (after
    two retries within ~30 ms, see ``_NO_RESPONDERS_RETRY_DELAYS``) and
    ``nats.errors.TimeoutError`` (an ``asyncio.TimeoutError``) when nobody answers in time.
    """
    payload = encode(message)
    check_message(nc, subject, payload, headers)
    for delay in (*_NO_RESPONDERS_RETRY_DELAYS, None):
        try:
            response = await nc.request(subject, payload, timeout=timeout, headers=headers)
            break
        except nats.errors.NoRespondersError:
            if delay is None:
                raise
            await asyncio.sleep(delay)
    if response.headers and ERROR_HEADER in response.headers:
        try:
            code = int(response.headers.get(ERROR_CODE_HEADER, "500"))
        except ValueError:
            code = 500
        raise RequestError(subject, code, response.headers[ERROR_HEADER])
    try:
        return decode(response.data, reply_type)
    except BadMessage as exc:
        report_bad_message(SubjectKind.REPLY, subject, exc)
        raise
