"""Hypothesis strategies of hostile bus payloads, built around one valid message.

``payloads(valid)`` draws, with about equal weight: random bytes, the valid message truncated,
single bytes flipped, another message type, the valid message with another schema version, with one
field (nested fields too) replaced by an arbitrary msgpack value, removed or added, with a string,
bytes or list field blown up to hundreds of KiB (under NATS' 1 MiB payload limit), and with the
Kubernetes JSON it carries (``pod``, ``old``/``new``, ``raw``) mutated. Whether a payload is
*malformed* is decided by :func:`ksched.bus.codec.decode`, so the checks know what to expect.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

import msgspec
from hypothesis import strategies as st

from ksched.bus.codec import BadMessage, Message, current_version, decode, encode
from ksched.bus.messages import Ack, Heartbeat, PopRequest, TraceEvent
from tests.fuzz.trees import INDEX, at, json_values, mutated, pick, slots

MAX_OVERSIZE = 900 * 1024
"""Largest payload drawn: big, but under nats-server's default ``max_payload`` of 1 MiB."""

JSON_FIELDS = frozenset({"pod", "old", "new", "raw"})
"""Fields holding Kubernetes objects as JSON bytes."""

_INTERESTING_INTS = [0, -1, 1, 2**31, 2**53 + 1, 2**63 - 1, -(2**63), 2**64 - 1]
_INTERESTING_FLOATS = [0.0, -1.0, 1e308, -1e308, float("inf"), float("-inf"), float("nan"), 5e-324]
_INTERESTING_TEXT = ["", " ", ".", "*", ">", "a.b", "..", "\x00", "é/ü", "a\r\nb", "a" * 300]

leaves = st.one_of(
    st.none(),
    st.booleans(),
    st.sampled_from(_INTERESTING_INTS) | st.integers(-(2**63), 2**64 - 1),
    st.sampled_from(_INTERESTING_FLOATS) | st.floats(),
    st.sampled_from(_INTERESTING_TEXT) | st.text(max_size=24),
    st.binary(max_size=24),
)
msgpack_values = st.recursive(
    leaves,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=10,
)


def _pack(tree: Any) -> bytes:
    return msgspec.msgpack.encode(tree)


@st.composite
def _oversized(draw: st.DrawFn, tree: dict[str, Any]) -> bytes:
    tree = copy.deepcopy(tree)
    path = pick(draw, list(slots(tree)))
    parent = at(tree, path[:-1])
    size = draw(st.integers(64 * 1024, MAX_OVERSIZE))
    value = parent[path[-1]]
    if isinstance(value, list):
        element = value[0] if value else "x"  # copies of it up to ``size`` bytes, whatever its own size
        parent[path[-1]] = [element] * max(1, size // len(_pack(element)))
    elif isinstance(value, bytes):
        parent[path[-1]] = b"{" * size
    else:
        parent[path[-1]] = "x" * size
    return _pack(tree)


@st.composite
def _json_mutated(draw: st.DrawFn, tree: dict[str, Any]) -> bytes:
    """A Kubernetes JSON field of the message made invalid, cut short, or changed inside."""
    tree = copy.deepcopy(tree)
    paths = [p for p in slots(tree) if p[-1] in JSON_FIELDS and isinstance(at(tree, p), bytes)]
    if not paths:
        return _pack(draw(mutated(tree, msgpack_values))[0])
    path = pick(draw, paths)
    parent = at(tree, path[:-1])
    original: bytes = parent[path[-1]]
    try:
        obj = msgspec.json.decode(original)
    except msgspec.DecodeError:
        obj = {}
    choice = draw(st.sampled_from(["bytes", "cut", "inner", "whole"]))
    if choice == "bytes":
        parent[path[-1]] = draw(st.binary(max_size=64))
    elif choice == "cut":
        parent[path[-1]] = original[: draw(INDEX) % max(1, len(original))]
    elif choice == "whole" or not isinstance(obj, dict | list) or not obj:
        parent[path[-1]] = msgspec.json.encode(draw(json_values.filter(_json_encodable)))
    else:
        changed, _ = draw(mutated(obj, json_values.filter(_json_encodable)))
        parent[path[-1]] = msgspec.json.encode(changed)
    return _pack(tree)


def _json_encodable(value: Any) -> bool:
    try:
        msgspec.json.encode(value)
    except (ValueError, TypeError, OverflowError):
        return False
    return True


class Payload(bytes):
    """Bytes whose repr stays short (hypothesis prints every failing example's draws)."""

    def __repr__(self) -> str:
        if len(self) <= 300:
            return super().__repr__()
        return f"{bytes(self[:200])!r}... ({len(self)} bytes)"


def payloads(valid: Message, texts: Sequence[str] = ()) -> st.SearchStrategy[bytes]:
    """Hostile variants of ``valid`` (see the module docstring); ``texts`` are strings worth trying
    in its fields besides the usual suspects (e.g. subjects the receiver must not be tricked into)."""
    data = encode(valid)
    tree: dict[str, Any] = msgspec.msgpack.decode(data)
    newest = current_version(type(valid))
    others = [
        Ack(ok=False, code="x"),
        Heartbeat(service="s", instance="i", ready=True, ts=1.0),
        PopRequest(scheduler_id="s", scheduler_names=[]),
        TraceEvent(
            trace_id="t", pod_uid="u", namespace="n", name="p", service="s", instance="i", phase="x", ts=0.0
        ),
    ]
    return st.one_of(
        st.binary(max_size=256),
        INDEX.map(lambda n: data[: n % len(data)]),
        st.lists(st.tuples(INDEX, st.integers(0, 255)), min_size=1, max_size=4).map(
            lambda flips: _flip(data, flips)
        ),
        st.sampled_from([o for o in others if type(o) is not type(valid)]).map(encode),
        st.sampled_from([newest + 1, newest + 1000, 0, -1, 2**63 - 1]).map(lambda v: _pack({**tree, "v": v})),
        mutated(tree, msgpack_values, texts=texts).map(lambda changed: _pack(changed[0])),
        _oversized(tree),
        _json_mutated(tree),
    ).map(Payload)


def _flip(data: bytes, flips: list[tuple[int, int]]) -> bytes:
    out = bytearray(data)
    for index, value in flips:
        out[index % len(out)] = value
    return bytes(out)


def is_malformed(payload: bytes, msg_type: object) -> bool:
    """Whether the receiver must drop ``payload`` as a bad message (``BadMessage``)."""
    try:
        decode(payload, msg_type)
    except BadMessage:
        return True
    return False
