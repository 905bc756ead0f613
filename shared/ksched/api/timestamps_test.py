"""The timestamp writers: exactly the layouts the API server parses."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, timezone

from hypothesis import given
from hypothesis import strategies as st

from ksched.api.timestamps import micro_time, rfc3339

MICRO = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$")
SECONDS = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$")


def test_micro_time_has_six_digits_even_on_a_whole_second() -> None:
    assert micro_time(0) == "1970-01-01T00:00:00.000000Z"
    assert micro_time(0.25) == "1970-01-01T00:00:00.250000Z"
    assert micro_time(1767225600.123456) == "2026-01-01T00:00:00.123456Z"


def test_rfc3339_drops_the_fraction() -> None:
    assert rfc3339(1767225600.999) == "2026-01-01T00:00:00Z"


def test_datetimes_are_converted_to_utc() -> None:
    """What kubernetes_asyncio's typed models hold: aware datetimes, in any zone."""
    plus_two = datetime(2026, 1, 1, 2, 0, 0, 5, tzinfo=timezone(timedelta(hours=2)))
    assert micro_time(plus_two) == "2026-01-01T00:00:00.000005Z"
    assert rfc3339(plus_two) == "2026-01-01T00:00:00Z"
    assert micro_time(datetime(2026, 1, 1)) == "2026-01-01T00:00:00.000000Z", "naive means UTC"
    assert micro_time(datetime(999, 1, 1, tzinfo=UTC)) == "0999-01-01T00:00:00.000000Z", "four-digit years"


def test_now_by_default() -> None:
    before = datetime.now(UTC).replace(microsecond=0)
    assert datetime.fromisoformat(micro_time().replace("Z", "+00:00")) >= before
    assert datetime.fromisoformat(rfc3339().replace("Z", "+00:00")) >= before


@given(st.floats(min_value=0, max_value=253402300799, allow_nan=False))
def test_layouts_hold_for_any_time(ts: float) -> None:
    assert MICRO.match(micro_time(ts)), micro_time(ts)
    assert SECONDS.match(rfc3339(ts)), rfc3339(ts)
