"""The server's payload limit, headers included.

nats-py checks only the payload against the server's ``max_payload`` (1 MiB by default); a message
whose headers push it over reaches the server, which then closes the connection ("Maximum Payload
Violation"): every subscription of the service waits for the reconnect and its ordered consumers
start over. Headers can echo message fields (a trace id, a placement id as ``Nats-Msg-Id``), so
everything ksched sends with headers is checked here first and refused like an oversized payload.
"""

from __future__ import annotations

import nats.errors
from nats.aio.client import Client as NATS

_STATUS_LINE = len(b"NATS/1.0\r\n")


def header_size(headers: dict[str, str] | None) -> int:
    """Bytes ``headers`` take on the wire, as nats-py encodes them: a status line, one ``K: V``
    line per header, a blank line."""
    if not headers:
        return 0
    lines = sum(len(k.encode()) + len(v.encode()) + 4 for k, v in headers.items())
    return _STATUS_LINE + lines + 2


def check_size(nc: NATS, payload: bytes, headers: dict[str, str] | None) -> None:
    """Raise ``nats.errors.MaxPayloadError`` if ``payload`` and ``headers`` together exceed the
    server's limit (what nats-py raises for a payload alone), instead of losing the connection."""
    limit = nc.max_payload
    if limit and len(payload) + header_size(headers) > limit:
        raise nats.errors.MaxPayloadError
