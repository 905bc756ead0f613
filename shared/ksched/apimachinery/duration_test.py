"""Go duration strings: ``time.ParseDuration`` and ``Duration.String()`` (Go's own test values)."""

from __future__ import annotations

import pytest

from ksched.apimachinery.duration import (
    HOUR,
    MILLISECOND,
    MINUTE,
    SECOND,
    DurationError,
    parse_duration,
    time_quote,
)
from ksched.apimachinery.strconv import go_quote


@pytest.mark.parametrize(
    ("text", "ns"),
    [
        ("0", 0),
        ("5s", 5 * SECOND),
        ("30s", 30 * SECOND),
        ("1478s", 1478 * SECOND),
        ("-5s", -5 * SECOND),
        ("+5s", 5 * SECOND),
        ("-0", 0),
        ("5.0s", 5 * SECOND),
        ("5.6s", 5 * SECOND + 600 * MILLISECOND),
        ("5.s", 5 * SECOND),
        (".5s", 500 * MILLISECOND),
        ("1.004s", SECOND + 4 * MILLISECOND),
        ("100.00100s", 100 * SECOND + MILLISECOND),
        ("10ns", 10),
        ("11us", 11_000),
        ("12\u00b5s", 12_000),
        ("12\u03bcs", 12_000),
        ("13ms", 13 * MILLISECOND),
        ("15m", 15 * MINUTE),
        ("16h", 16 * HOUR),
        ("3h30m", 3 * HOUR + 30 * MINUTE),
        ("10.5s4m", 4 * MINUTE + 10 * SECOND + 500 * MILLISECOND),
        ("-2m3.4s", -(2 * MINUTE + 3 * SECOND + 400 * MILLISECOND)),
        ("1h2m3s4ms5us6ns", HOUR + 2 * MINUTE + 3 * SECOND + 4 * MILLISECOND + 5006),
    ],
)
def test_parse(text: str, ns: int) -> None:
    assert parse_duration(text) == ns


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", 'time: invalid duration ""'),
        ("3", 'time: missing unit in duration "3"'),
        ("-", 'time: invalid duration "-"'),
        ("s", 'time: invalid duration "s"'),
        (".", 'time: invalid duration "."'),
        ("-.", 'time: invalid duration "-."'),
        (".s", 'time: invalid duration ".s"'),
        ("+.s", 'time: invalid duration "+.s"'),
        ("3000000h", 'time: invalid duration "3000000h"'),
        ("1d", 'time: unknown unit "d" in duration "1d"'),
        # Go's time package quotes byte by byte (time.quote), not as strconv.Quote does
        ("1\u00e9", 'time: unknown unit "\\xc3\\xa9" in duration "1\\xc3\\xa9"'),
        ("\n", 'time: invalid duration "\\x0a"'),
        ('1"s\\', 'time: unknown unit "\\"s\\\\" in duration "1\\"s\\\\"'),
    ],
)
def test_parse_errors(text: str, message: str) -> None:
    with pytest.raises(DurationError) as err:
        parse_duration(text)
    assert str(err.value) == message


def test_time_quote_is_the_time_package_s_not_strconv_quote() -> None:
    """Go's ``time`` errors quote each byte outside printable ASCII as ``\\xNN``; ``strconv.Quote``
    keeps printable Unicode and uses the short escapes."""
    assert time_quote('a\tb\u00e9"') == '"a\\x09b\\xc3\\xa9\\""'
    assert time_quote(b"\xff") == '"\\xff"', "bytes that are not UTF-8, as Go's time.Parse sees them"
    assert go_quote('a\tb\u00e9"') == '"a\\tb\u00e9\\""'
