"""The Struct base every Kubernetes object type derives from."""

from __future__ import annotations

import msgspec


class K8s(msgspec.Struct, rename="camel", kw_only=True, omit_defaults=True, gc=False):
    """Base for API types: camelCase on the wire, unknown fields ignored, defaults omitted.

    ``gc=False``: instances are not tracked by the cyclic garbage collector. API objects are trees
    (decoded, copied with ``msgspec.structs.replace``, never pointing back at what holds them), so
    they can form no cycle; tracked, every pod decoded from a watch or a bus message counted towards
    the young collections and was walked by them until it reached the old generation (half of the
    informer's collector time per pod)."""


DECODE_ERRORS: tuple[type[Exception], ...] = (msgspec.DecodeError, UnicodeDecodeError)
"""What msgspec's decoders raise for bad input: invalid UTF-8 in a string raises
``UnicodeDecodeError``, not ``DecodeError`` (msgspec issue #714), so catch both."""
