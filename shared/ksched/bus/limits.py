"""Limits the server enforces by closing the connection, checked before sending instead.

nats-server closes a client's connection when one message breaks its limits: ``max_payload``
(1 MiB by default) counts headers too, yet nats-py checks the payload alone; ``max_control_line``
(4 KiB by default) bounds the protocol line that carries the subject, which nats-py does not check
at all. Every subscription of the service then waits for the reconnect and its ordered consumers
start over. Subjects and headers can carry message fields (a pod's namespace and name in a trace
subject, a scheduler id in an unreserve subject, a trace id or a placement id in a header), so
whatever ksched sends is checked here first and refused with nats-py's own errors.
"""

from __future__ import annotations

import nats.errors
from nats.aio.client import Client as NATS

MAX_SUBJECT_BYTES = 3072
"""Longest subject sent: under ``max_control_line`` with room for the reply subject and sizes.
A real one is far shorter (Kubernetes names are at most 253 characters)."""

_STATUS_LINE = len(b"NATS/1.0\r\n")


def header_size(headers: dict[str, str] | None) -> int:
    """Bytes ``headers`` take on the wire, as nats-py encodes them: a status line, one ``K: V``
    line per header, a blank line."""
    if not headers:
        return 0
    lines = sum(len(k.encode()) + len(v.encode()) + 4 for k, v in headers.items())
    return _STATUS_LINE + lines + 2


def check_message(nc: NATS, subject: str, payload: bytes, headers: dict[str, str] | None) -> None:
    """Raise ``nats.errors.BadSubjectError`` for a subject longer than :data:`MAX_SUBJECT_BYTES` and
    ``nats.errors.MaxPayloadError`` if ``payload`` and ``headers`` together exceed the server's
    limit (what nats-py raises for a payload alone), instead of losing the connection."""
    if len(subject.encode()) > MAX_SUBJECT_BYTES:
        raise nats.errors.BadSubjectError
    limit = nc.max_payload
    if limit and len(payload) + header_size(headers) > limit:
        raise nats.errors.MaxPayloadError
