"""Versioned msgpack codec: round trips, and clear BadMessage errors for everything else."""

from __future__ import annotations

import re

import msgspec
import pytest

from ksched.bus.codec import BadMessage, Message, _nesting_fields, current_version, decode, encode
from ksched.bus.messages import ALL_MESSAGE_TYPES, Ack, AssumeRequest, DoneRequest, PopReply
from tests.bus.samples import SAMPLES


@pytest.mark.parametrize("msg_type", ALL_MESSAGE_TYPES, ids=lambda t: t.__name__)
def test_every_message_round_trips_through_msgpack(msg_type: type[Message]) -> None:
    sample = SAMPLES[msg_type]
    data = encode(sample)
    assert msgspec.msgpack.decode(data)["t"] == msg_type.__name__
    assert decode(data, msg_type) == sample


def test_version_and_tag_are_always_on_the_wire() -> None:
    raw = msgspec.msgpack.decode(encode(Ack()))
    assert raw == {"t": "Ack", "v": 1, "ok": True, "code": "", "reason": ""}


def test_newer_version_is_rejected_even_when_its_fields_would_decode() -> None:
    data = msgspec.msgpack.encode({"t": "Ack", "v": 2, "ok": True})
    with pytest.raises(
        BadMessage, match=r"Ack version 2 is not readable here \(this build reads versions 1..1\)"
    ):
        decode(data, Ack)


def test_newer_version_with_changed_fields_still_reports_the_version() -> None:
    data = msgspec.msgpack.encode({"t": "Ack", "v": 3, "ok": "maybe"})
    with pytest.raises(BadMessage, match="Ack version 3"):
        decode(data, Ack)


def test_version_zero_is_rejected() -> None:
    with pytest.raises(BadMessage, match="version 0"):
        decode(msgspec.msgpack.encode({"t": "Ack", "v": 0}), Ack)


class _AckV2(Message, tag="Ack", kw_only=True):
    """What a future Ack could look like: version 2 adds a field, still reads version 1."""

    v: int = 2
    ok: bool = True
    code: str = ""
    reason: str = ""
    retry_after: float = 0.0


def test_a_bumped_type_reads_old_versions_and_old_builds_reject_it() -> None:
    assert current_version(_AckV2) == 2 and current_version(Ack) == 1
    old = decode(encode(Ack(ok=False, reason="r")), _AckV2)
    assert (old.v, old.ok, old.reason, old.retry_after) == (1, False, "r", 0.0)
    with pytest.raises(BadMessage, match="version 2"):
        decode(encode(_AckV2(retry_after=1.0)), Ack)


def test_wrong_message_type_names_both() -> None:
    with pytest.raises(BadMessage, match="expected PopReply, got Ack"):
        decode(encode(Ack()), PopReply)


def test_malformed_bytes() -> None:
    with pytest.raises(BadMessage, match="malformed message"):
        decode(b"\xc1\x00garbage", Ack)


def test_invalid_utf8_is_a_bad_message() -> None:
    """msgspec raises UnicodeDecodeError, not DecodeError, for invalid UTF-8 in a string (its
    issue #714): found by tests/fuzz; before the fix it escaped the guard and the requester timed out."""
    with pytest.raises(BadMessage, match="malformed message"):
        decode(b"\x81\xa1t\xaa\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80", Ack)
    raw = msgspec.msgpack.decode(encode(SAMPLES[DoneRequest]))
    data = msgspec.msgpack.encode(raw).replace(raw["lease_id"].encode(), b"\xff" * len(raw["lease_id"]))
    with pytest.raises(BadMessage, match="invalid DoneRequest"):
        decode(data, DoneRequest)


def test_invalid_field_is_named() -> None:
    raw = msgspec.msgpack.decode(encode(SAMPLES[DoneRequest]))
    raw["outcome"] = "exploded"
    with pytest.raises(BadMessage, match=r"invalid DoneRequest: .*\$\.outcome"):
        decode(msgspec.msgpack.encode(raw), DoneRequest)


def test_missing_required_field_is_named() -> None:
    with pytest.raises(BadMessage, match="lease_id"):
        decode(msgspec.msgpack.encode({"t": "DoneRequest", "v": 1}), DoneRequest)


def test_union_target_decodes_either_type() -> None:
    assert isinstance(decode(encode(Ack()), PopReply | Ack), Ack)
    assert isinstance(decode(encode(PopReply()), PopReply | Ack), PopReply)
    with pytest.raises(BadMessage, match=re.escape("expected PopReply | Ack, got DoneRequest")):
        decode(encode(SAMPLES[DoneRequest]), PopReply | Ack)


def test_decode_target_must_be_a_message() -> None:
    with pytest.raises(TypeError, match="Message subclasses"):
        decode(b"", dict)


def test_a_nested_message_of_an_unreadable_version_is_rejected() -> None:
    raw = msgspec.msgpack.decode(encode(SAMPLES[AssumeRequest]))
    raw["placement"]["v"] = 5
    with pytest.raises(BadMessage, match="Placement version 5"):
        decode(msgspec.msgpack.encode(raw), AssumeRequest)


def _holds_message(value: object) -> bool:
    if isinstance(value, Message):
        return True
    if isinstance(value, (list, tuple)):
        return any(_holds_message(v) for v in value)
    if isinstance(value, dict):
        return any(_holds_message(v) for v in value.values())
    return False


@pytest.mark.parametrize("msg_type", ALL_MESSAGE_TYPES, ids=lambda t: t.__name__)
def test_the_version_walk_visits_every_field_that_holds_a_message(msg_type: type[Message]) -> None:
    """The version check walks only the fields whose annotation can hold a message: a sample's
    message-holding fields are all among them."""
    sample = SAMPLES[msg_type]
    holding = {n for n in msg_type.__struct_fields__ if _holds_message(getattr(sample, n))}
    assert holding <= set(_nesting_fields(msg_type))


def test_the_version_walk_covers_samples_with_nested_messages() -> None:
    assert any(_nesting_fields(t) for t in ALL_MESSAGE_TYPES)
