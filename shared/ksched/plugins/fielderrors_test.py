"""Go-compatible rendering of field errors and label validation messages."""

from __future__ import annotations

import pytest

from ksched.plugins import fielderrors as fe


@pytest.mark.parametrize(
    ("text", "quoted"),
    [
        ("abc", '"abc"'),
        ('a"b\\c', '"a\\"b\\\\c"'),
        ("tab\tnl\n", '"tab\\tnl\\n"'),
        ("\x01", '"\\x01"'),
        ("é", '"é"'),
    ],
)
def test_go_quote(text: str, quoted: str) -> None:
    assert fe.go_quote(text) == quoted


def test_go_string_slice() -> None:
    assert fe.go_string_slice([]) == "[]string(nil)"
    assert fe.go_string_slice(["a", "b"]) == '[]string{"a", "b"}'


def test_paths() -> None:
    assert fe.index(fe.child("", "a", "b"), 0) == "a.b[0]"
    assert fe.child(fe.index("", 2), "matchFields") == "[2].matchFields"


def test_label_key_errors() -> None:
    assert fe.label_key_errors("example.com/name") == []
    assert fe.label_key_errors("/name") == ["prefix part must be non-empty"]
    assert fe.label_key_errors("Bad_Prefix/name")[0].startswith("prefix part a lowercase RFC 1123 subdomain")
    assert fe.label_key_errors("x" * 64) == ["name part must be no more than 63 bytes"]


def test_label_value_errors() -> None:
    assert fe.label_value_errors("") == []
    assert fe.label_value_errors("a.b-c_d") == []
    assert fe.label_value_errors("-a")[0].startswith("a valid label must be an empty string")


def test_aggregate_message() -> None:
    assert fe.aggregate_message(["a"]) == "a"
    assert fe.aggregate_message(["a", "b", "a"]) == "[a, b]"


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("0204", 204),
        ("-1", -1),
        ("+1", 1),
        ("1_0", None),
        (" 1", None),
        ("", None),
        ("9223372036854775807", 2**63 - 1),
        ("9223372036854775808", None),
    ],
)
def test_parse_go_int64(text: str, value: int | None) -> None:
    assert fe.parse_go_int64(text) == value
