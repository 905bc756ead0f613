"""The Struct base every Kubernetes object type derives from."""

from __future__ import annotations

import msgspec


class K8s(msgspec.Struct, rename="camel", kw_only=True, omit_defaults=True):
    """Base for API types: camelCase on the wire, unknown fields ignored, defaults omitted."""


DECODE_ERRORS: tuple[type[Exception], ...] = (msgspec.DecodeError, UnicodeDecodeError)
"""What msgspec's decoders raise for bad input: invalid UTF-8 in a string raises
``UnicodeDecodeError``, not ``DecodeError`` (msgspec issue #714), so catch both."""
