"""Go's time.Parse as kubesim reimplements it (``gotime``), against Go's own answers.

The table was produced by Go's ``time.Parse`` with the two layouts (each row: the value, the
``metav1.Time`` result, the ``metav1.MicroTime`` result; a result is the value re-encoded in UTC as
the API server stores it, or Go's error after ``as "<layout>": ``). The cases after it follow Go
1.20+ (the API server's Go), whose offset and error rules differ from older Go.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st
from ksched_kubesim import gotime

from ksched.api.timestamps import micro_time, rfc3339
from ksched.apimachinery.duration import time_quote

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

GO_ANSWERS = [
    ("2026-01-01T00:00:00Z", "2026-01-01T00:00:00Z", 'cannot parse "Z" as ".000000"'),
    ("2026-01-01T00:00:00.123456Z", "2026-01-01T00:00:00Z", "2026-01-01T00:00:00.123456Z"),
    ("2026-01-01T00:00:00+00:00", "2026-01-01T00:00:00Z", 'cannot parse "+00:00" as ".000000"'),
    ("2026-01-01T00:00:00.123Z", "2026-01-01T00:00:00Z", 'cannot parse ".123Z" as ".000000"'),
    ("2026-01-01T01:30:00.123456+01:30", "2026-01-01T00:00:00Z", "2026-01-01T00:00:00.123456Z"),
    ("2026-01-01T00:00:00.987654321-00:30", "2026-01-01T00:30:00Z", 'cannot parse "321-00:30" as "Z07:00"'),
    ("2026-01-01T00:00:00,123456Z", "2026-01-01T00:00:00Z", "2026-01-01T00:00:00.123456Z"),
    ("2026-01-01T1:00:00Z", "2026-01-01T01:00:00Z", 'cannot parse "Z" as ".000000"'),
    ("2026-01-01T00:00:00.123456+24:00", "2025-12-31T00:00:00Z", "2025-12-31T00:00:00.123456Z"),
    ("0000-01-01T00:00:00.000000+01:00", "-0001-12-31T23:00:00Z", "-0001-12-31T23:00:00.000000Z"),
    ("9999-12-31T23:59:59.999999-01:00", "10000-01-01T00:59:59Z", "10000-01-01T00:59:59.999999Z"),
    ("0001-01-01T00:00:00.000000Z", "0001-01-01T00:00:00Z", "0001-01-01T00:00:00.000000Z"),
    ("2024-02-29T00:00:00Z", "2024-02-29T00:00:00Z", 'cannot parse "Z" as ".000000"'),
    ("2023-02-29T00:00:00Z", ": day out of range", 'cannot parse "Z" as ".000000"'),
    ("2026-04-31T00:00:00Z", ": day out of range", 'cannot parse "Z" as ".000000"'),
    ("2026-13-01T00:00:00Z", ": month out of range", ": month out of range"),
    ("2026-00-01T00:00:00Z", ": month out of range", ": month out of range"),
    ("2026-01-01T24:00:00Z", ": hour out of range", ": hour out of range"),
    ("2026-01-01T00:60:00Z", ": minute out of range", ": minute out of range"),
    ("2026-01-01T00:00:60Z", ": second out of range", ": second out of range"),
    (
        "2026-01-01T00:00:00.-00001Z",
        'cannot parse ".-00001Z" as "Z07:00"',
        ": fractional second out of range",
    ),
    ("2026-01-01T00:00:00.+12345Z", 'cannot parse ".+12345Z" as "Z07:00"', "2026-01-01T00:00:00.012345Z"),
    ("2026-01-01T00:00:00.1234567Z", "2026-01-01T00:00:00Z", 'cannot parse "7Z" as "Z07:00"'),
    ("2026-01-01T00:00:00.123456", 'cannot parse "" as "Z07:00"', 'cannot parse "" as "Z07:00"'),
    ("2026-01-01T00:00:00.123456Zx", ': extra text: "x"', ': extra text: "x"'),
    ("", 'cannot parse "" as "2006"', 'cannot parse "" as "2006"'),
    ("2026", 'cannot parse "" as "-"', 'cannot parse "" as "-"'),
    ("2026-1-01T00:00:00Z", 'cannot parse "1-01T00:00:00Z" as "01"', 'cannot parse "1-01T00:00:00Z" as "01"'),
    ("2026-01-01t00:00:00Z", 'cannot parse "t00:00:00Z" as "T"', 'cannot parse "t00:00:00Z" as "T"'),
    ("2026-01-01 00:00:00Z", 'cannot parse " 00:00:00Z" as "T"', 'cannot parse " 00:00:00Z" as "T"'),
    ("2026-01-01T00:00:00z", 'cannot parse "z" as "Z07:00"', 'cannot parse "z" as ".000000"'),
    ("2026-01-01T00:00:00+0100", 'cannot parse "+0100" as "Z07:00"', 'cannot parse "+0100" as ".000000"'),
    (
        "é026-01-01T00:00:00Z",
        'cannot parse "\\xc3\\xa9026-01-01T00:00:00Z" as "2006"',
        'cannot parse "\\xc3\\xa9026-01-01T00:00:00Z" as "2006"',
    ),
    ("2026-01-01T00:00:00\u0001", 'cannot parse "\\x01" as "Z07:00"', 'cannot parse "\\x01" as ".000000"'),
    ('2026-01-01T00:00:00"Z', 'cannot parse "\\"Z" as "Z07:00"', 'cannot parse "\\"Z" as ".000000"'),
    # Go 1.20+: offsets are two digits each and range-checked (hours up to 24, minutes up to 60)
    (
        "2026-01-01T00:00:00+25:00",
        ": time zone offset hour out of range",
        'cannot parse "+25:00" as ".000000"',
    ),
    (
        "2026-01-01T00:00:00.000000+00:61",
        ": time zone offset minute out of range",
        ": time zone offset minute out of range",
    ),
    (
        "2026-01-01T00:00:00.000000+25:xx",
        ": time zone offset hour out of range",
        ": time zone offset hour out of range",
    ),
    ("2026-01-01T00:00:00+-1:30", 'cannot parse "+-1:30" as "Z07:00"', 'cannot parse "+-1:30" as ".000000"'),
    # Go 1.20+: the error shows the value from the start of the element that failed
    (
        "20x6-01-01T00:00:00Z",
        'cannot parse "20x6-01-01T00:00:00Z" as "2006"',
        'cannot parse "20x6-01-01T00:00:00Z" as "2006"',
    ),
    (
        "2026-01-01T00:00:00.000000-06::00",
        'cannot parse "-06::00" as "Z07:00"',
        'cannot parse "-06::00" as "Z07:00"',
    ),
]


def _expected(value: str, layout: str, result: str) -> tuple[str | None, str | None]:
    """(stored text, error text) of a table cell."""
    if result.startswith("cannot parse"):
        quoted = time_quote(value.encode())
        return None, f"parsing time {quoted} as {time_quote(layout.encode())}: {result}"
    if result.startswith(": "):
        return None, f"parsing time {time_quote(value.encode())}{result}"
    return result, None


def _outcome(layout: str, value: str) -> tuple[str | None, str | None]:
    try:
        instant = gotime.parse(layout, value)
    except gotime.GoTimeError as exc:
        return None, str(exc)
    return (instant.rfc3339_micro() if layout == gotime.RFC3339_MICRO else instant.rfc3339()), None


@pytest.mark.parametrize(("value", "as_time", "as_micro_time"), GO_ANSWERS)
def test_parse_matches_go(value: str, as_time: str, as_micro_time: str) -> None:
    assert _outcome(gotime.RFC3339, value) == _expected(value, gotime.RFC3339, as_time)
    assert _outcome(gotime.RFC3339_MICRO, value) == _expected(value, gotime.RFC3339_MICRO, as_micro_time)


def test_zero_time() -> None:
    assert gotime.parse(gotime.RFC3339_MICRO, "0001-01-01T00:00:00.000000Z").is_zero()
    assert not gotime.parse(gotime.RFC3339_MICRO, "0001-01-01T00:00:00.000001Z").is_zero()


@given(st.datetimes(min_value=datetime(1, 1, 1), max_value=datetime(9999, 12, 31, 23, 59, 59)))
def test_every_datetime_round_trips(moment: datetime) -> None:
    aware = moment.replace(tzinfo=UTC)
    micro = moment.isoformat(timespec="microseconds") + "Z"
    parsed = gotime.parse(gotime.RFC3339_MICRO, micro)
    assert parsed.rfc3339_micro() == micro
    assert parsed.seconds == (aware - EPOCH) // timedelta(seconds=1)


@given(st.floats(min_value=0, max_value=4102444800, allow_nan=False))
def test_kscheds_writers_produce_what_the_api_server_parses(ts: float) -> None:
    """ksched.api.timestamps (Lease and Event writers) against the server's parser."""
    assert gotime.parse(gotime.RFC3339_MICRO, micro_time(ts)).rfc3339_micro() == micro_time(ts)
    assert gotime.parse(gotime.RFC3339, rfc3339(ts)).rfc3339() == rfc3339(ts)
