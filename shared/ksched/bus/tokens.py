"""Reversible escaping of free-form strings into single NATS subject tokens (and KV keys).

A dot separates NATS tokens and ``*`` / ``>`` are wildcards, so a pod named ``web.1`` cannot be put
into a subject as is. Every character outside ``[A-Za-z0-9_-]`` becomes ``=XX`` (its UTF-8 bytes in
upper-case hex), so ``web.1`` -> ``web=2E1``. The empty string becomes a lone ``=``. The result is a
valid subject token and a valid JetStream KV key, and ``decode_token(encode_token(s)) == s``.
"""

from __future__ import annotations

import re

_PLAIN = re.compile(r"[A-Za-z0-9_-]+")
_ESCAPED = re.compile(r"(?:[A-Za-z0-9_-]|=[0-9A-F]{2})+")
_SAFE_BYTES = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")
EMPTY_TOKEN = "="


class TokenError(ValueError):
    """A subject token that is not the output of :func:`encode_token`."""


def encode_token(value: str) -> str:
    """Escape ``value`` into one subject token; plain names (``web-1``) are returned unchanged."""
    if _PLAIN.fullmatch(value):
        return value
    if not value:
        return EMPTY_TOKEN
    out: list[str] = []
    for byte in value.encode():
        out.append(chr(byte) if byte in _SAFE_BYTES else f"={byte:02X}")
    return "".join(out)


def decode_token(token: str) -> str:
    """Invert :func:`encode_token`; raises :class:`TokenError` for anything it cannot have produced."""
    if _PLAIN.fullmatch(token):
        return token
    if token == EMPTY_TOKEN:
        return ""
    if not _ESCAPED.fullmatch(token):
        raise TokenError(f"not an escaped subject token: {token!r}")
    raw = bytearray()
    i = 0
    while i < len(token):
        if token[i] == "=":
            byte = int(token[i + 1 : i + 3], 16)
            if byte in _SAFE_BYTES:
                raise TokenError(f"needlessly escaped byte in subject token: {token!r}")
            raw.append(byte)
            i += 3
        else:
            raw.append(ord(token[i]))
            i += 1
    try:
        return raw.decode()
    except UnicodeDecodeError as exc:
        raise TokenError(f"subject token {token!r} is not UTF-8 once unescaped") from exc
