"""Go's strconv.Quote and ParseInt."""

from __future__ import annotations

import pytest

from ksched.apimachinery.strconv import go_quote, parse_go_int64


@pytest.mark.parametrize(
    ("text", "quoted"),
    [
        ("abc", '"abc"'),
        ('a"b\\c', '"a\\"b\\\\c"'),
        ("tab\tnl\n", '"tab\\tnl\\n"'),
        ("\x01", '"\\x01"'),
        ("é", '"é"'),
        ("\u2028", '"\\u2028"'),
    ],
)
def test_go_quote(text: str, quoted: str) -> None:
    assert go_quote(text) == quoted


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("0204", 204),
        ("-1", -1),
        ("+1", 1),
        ("1_0", None),
        (" 1", None),
        ("", None),
        ("\u0661", None),  # Arabic-Indic digit one: Python's int() takes it, Go's ParseInt does not
        ("9223372036854775807", 2**63 - 1),
        ("9223372036854775808", None),
    ],
)
def test_parse_go_int64(text: str, value: int | None) -> None:
    assert parse_go_int64(text) == value
