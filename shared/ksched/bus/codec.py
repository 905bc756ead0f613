"""Wire format of bus messages: versioned, tagged msgspec Structs encoded as msgpack maps.

Every message carries ``t`` (its type name) and ``v`` (its schema version). A type's current version
is the default of its ``v`` field; a decoder accepts versions ``MIN_VERSION .. current`` and rejects
newer ones, so an old service never misreads a message from a newer one. Fields unknown to the
decoder are ignored, which lets a version add optional fields without breaking older readers.
"""

from __future__ import annotations

import types
from typing import Any, ClassVar, TypeVar, Union, get_args, get_type_hints, overload

import msgspec

from ksched.api.base import DECODE_ERRORS

M = TypeVar("M", bound="Message")


class BadMessage(ValueError):
    """A message that is malformed, of the wrong type, or of a version this build cannot read."""

    def __init__(self, problem: str) -> None:
        super().__init__(problem)
        self.problem = problem


class Message(msgspec.Struct, tag_field="t", tag=True, kw_only=True):
    """Base of every top-level bus message. Subclasses bump ``v: int = N`` when their schema changes."""

    MIN_VERSION: ClassVar[int] = 1
    v: int = 1


class _Header(msgspec.Struct):
    """What is readable of any message, whatever its type or version."""

    t: str = ""
    v: int = 0


_encoder = msgspec.msgpack.Encoder()
_decoders: dict[object, msgspec.msgpack.Decoder[Any]] = {}
_header_decoder = msgspec.msgpack.Decoder(_Header)
_current: dict[type[Message], int] = {}


def current_version(msg_type: type[Message]) -> int:
    """The schema version this build writes for ``msg_type``."""
    version = _current.get(msg_type)
    if version is None:
        (field,) = [f for f in msgspec.structs.fields(msg_type) if f.name == "v"]
        version = _current[msg_type] = int(field.default)
    return version


def encode(msg: Message) -> bytes:
    """msgpack bytes of a message."""
    return _encoder.encode(msg)


def _members(target: object) -> tuple[type[Message], ...]:
    if isinstance(target, types.UnionType) or getattr(target, "__origin__", None) is Union:
        return tuple(get_args(target))
    return (target,)  # type: ignore[return-value]


def _describe(target: object) -> str:
    return " | ".join(m.__name__ for m in _members(target))


def _decoder(target: object) -> msgspec.msgpack.Decoder[Any]:
    decoder = _decoders.get(target)
    if decoder is None:
        for member in _members(target):
            if not (isinstance(member, type) and issubclass(member, Message)):
                raise TypeError(f"decode target must be Message subclasses, got {member!r}")
        decoder = _decoders[target] = msgspec.msgpack.Decoder(target)
    return decoder


def _check_version(msg: Message) -> None:
    """Reject a version this build cannot read, for the message and any message nested in it."""
    msg_type = type(msg)
    newest = current_version(msg_type)
    if not msg_type.MIN_VERSION <= msg.v <= newest:
        raise BadMessage(
            f"{msg_type.__name__} version {msg.v} is not readable here "
            f"(this build reads versions {msg_type.MIN_VERSION}..{newest})"
        )
    for name in _nesting_fields(msg_type):
        value = getattr(msg, name)
        if isinstance(value, Message):
            _check_version(value)
        elif isinstance(value, list):
            for item in value:
                if isinstance(item, Message):
                    _check_version(item)


_nesting: dict[type[Message], tuple[str, ...]] = {}


def _nesting_fields(msg_type: type[Message]) -> tuple[str, ...]:
    """The fields of ``msg_type`` whose type can hold a message (the others need no walk)."""
    fields = _nesting.get(msg_type)
    if fields is None:
        try:
            hints = get_type_hints(msg_type)
        except Exception:  # an unresolvable annotation: walk every field, as safe
            fields = tuple(msg_type.__struct_fields__)
        else:
            fields = tuple(n for n in msg_type.__struct_fields__ if _can_hold_message(hints.get(n, Any)))
        _nesting[msg_type] = fields
    return fields


def _can_hold_message(annotation: object) -> bool:
    if annotation is Any:
        return False
    if isinstance(annotation, type) and issubclass(annotation, Message):
        return True
    return any(_can_hold_message(arg) for arg in get_args(annotation))


def _explain(data: bytes, target: object, exc: Exception) -> BadMessage:
    """The clearest account of why ``data`` did not decode as ``target``."""
    try:
        header = _header_decoder.decode(data)
    except DECODE_ERRORS:
        return BadMessage(f"malformed message ({len(data)} bytes): {exc}")
    for member in _members(target):
        if header.t == member.__name__ and not member.MIN_VERSION <= header.v <= current_version(member):
            return BadMessage(
                f"{member.__name__} version {header.v} is not readable here "
                f"(this build reads versions {member.MIN_VERSION}..{current_version(member)})"
            )
    if header.t and header.t not in {m.__name__ for m in _members(target)}:
        return BadMessage(f"expected {_describe(target)}, got {header.t}")
    return BadMessage(f"invalid {header.t or _describe(target)}: {exc}")


@overload
def decode(data: bytes, msg_type: type[M]) -> M: ...
@overload
def decode(data: bytes, msg_type: object) -> Message: ...
def decode(data: bytes, msg_type: object) -> Message:
    """Decode ``data`` as ``msg_type`` (a Message subclass or a union of them).

    Raises :class:`BadMessage` naming the problem: malformed bytes, another message type, an
    invalid field, or a version outside what this build reads.
    """
    decoder = _decoder(msg_type)
    try:
        msg: Message = decoder.decode(data)
    except DECODE_ERRORS as exc:
        raise _explain(data, msg_type, exc) from None
    _check_version(msg)
    return msg
