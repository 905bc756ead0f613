"""JSON encoding, timestamp parsing and identifiers shared by every kubesim module (timestamps are
written by :mod:`ksched.api.timestamps`).

Objects are plain JSON dicts; responses are compact single-line JSON terminated by a newline, as the
real API server sends them. msgspec does the (de)serialisation because it is several times faster
than the standard library on Kubernetes-sized objects.
"""

from __future__ import annotations

import datetime as dt
import os
import uuid
from typing import Any

import msgspec

JSON = dict[str, Any]

_encoder = msgspec.json.Encoder()
_decoder = msgspec.json.Decoder()

encode = _encoder.encode


def decode(data: bytes | bytearray | memoryview | str) -> Any:
    """Decode JSON into plain Python values (dicts, lists, str, int, float, bool, None)."""
    return _decoder.decode(data)


def pretty(data: bytes) -> bytes:
    """Re-indent compact JSON with two spaces (what the API server does for curl user agents)."""
    return msgspec.json.format(data, indent=2)


def now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def parse_time(value: str) -> dt.datetime:
    """Parse an RFC 3339 timestamp as written by the API server."""
    return dt.datetime.fromisoformat(value.replace("Z", "+00:00"))


def new_uid() -> str:
    return str(uuid.UUID(bytes=os.urandom(16), version=4))


_NAME_SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"


def random_suffix(length: int = 5) -> str:
    """The 5-character suffix appended to ``metadata.generateName`` (same alphabet as upstream)."""
    raw = os.urandom(length)
    return "".join(_NAME_SUFFIX_ALPHABET[b % len(_NAME_SUFFIX_ALPHABET)] for b in raw)
