"""Go's ``time.Parse`` for the two layouts the API server decodes timestamps with, errors included.

``metav1.Time`` is parsed with ``time.RFC3339`` (``2006-01-02T15:04:05Z07:00``) and ``metav1.MicroTime``
with ``2006-01-02T15:04:05.000000Z07:00``. Go's parser is looser than RFC 3339 in places (a one-digit
hour, a comma before the fraction, any number of fractional digits where the layout has none, a
``+24:00`` offset) and stricter in others (the MicroTime fraction is exactly six digits); its error
texts (``parsing time "..." as "...": cannot parse "..." as "..."``) are what the API server answers.
This module follows Go 1.25's ``time/format.go`` step by step, on the value's UTF-8 bytes as Go does.
"""

from __future__ import annotations

from dataclasses import dataclass

from ksched.apimachinery.duration import time_quote

RFC3339 = "2006-01-02T15:04:05Z07:00"
RFC3339_MICRO = "2006-01-02T15:04:05.000000Z07:00"

_DIGITS = b"0123456789"
_DAYS_IN_MONTH = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)
_ZERO_TIME_SECONDS = -62135596800  # 0001-01-01T00:00:00Z, Go's zero Time, as seconds since the epoch


class GoTimeError(ValueError):
    """A value Go's ``time.Parse`` rejects; ``str()`` is Go's error text."""


@dataclass(frozen=True, slots=True)
class Instant:
    """A parsed time: seconds since the Unix epoch (UTC) and nanoseconds within the second."""

    seconds: int
    nanos: int

    def is_zero(self) -> bool:
        """Go's zero Time (``IsZero``), which the API server serialises as ``null``."""
        return self.seconds == _ZERO_TIME_SECONDS and self.nanos == 0

    def rfc3339(self) -> str:
        """The ``metav1.Time`` serialisation: UTC, whole seconds."""
        return _format(self.seconds) + "Z"

    def rfc3339_micro(self) -> str:
        """The ``metav1.MicroTime`` serialisation: UTC, six fractional digits (truncated)."""
        return f"{_format(self.seconds)}.{self.nanos // 1000:06d}Z"


class _Bad(Exception):
    """The current layout element does not match (Go's ``errBad``)."""


class _OutOfRange(Exception):
    """A parsed number is out of range (Go's ``rangeErrString``)."""


def _is_digit(value: bytes, i: int) -> bool:
    return i < len(value) and value[i] in _DIGITS


def _getnum(value: bytes, fixed: bool) -> tuple[int, bytes]:
    """One or two leading digits (exactly two when ``fixed``)."""
    if not _is_digit(value, 0):
        raise _Bad
    if not _is_digit(value, 1):
        if fixed:
            raise _Bad
        return value[0] - 48, value[1:]
    return (value[0] - 48) * 10 + value[1] - 48, value[2:]


def _atoi(text: bytes) -> int:
    """Go's ``time.atoi``: an optional sign, then digits only."""
    negative = text[:1] == b"-"
    if text[:1] in (b"-", b"+"):
        text = text[1:]
    if any(c not in _DIGITS for c in text):
        raise _Bad
    number = int(text) if text else 0
    return -number if negative else number


def _nanoseconds(value: bytes, nbytes: int) -> int:
    """A fraction of ``nbytes`` bytes including its separator (``.`` or ``,``), scaled to nanoseconds."""
    if value[0] not in b".,":
        raise _Bad
    nbytes = min(nbytes, 10)
    number = _atoi(value[1:nbytes])
    if number < 0:
        raise _OutOfRange("fractional second")
    return int(number * 10 ** (10 - nbytes))


def _leap(year: int) -> bool:
    return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)


def _days_in(month: int, year: int) -> int:
    return 29 if month == 2 and _leap(year) else _DAYS_IN_MONTH[month - 1]


def _days_from_civil(year: int, month: int, day: int) -> int:
    """Days since 1970-01-01 of a proleptic Gregorian date (any year, including 0 and negatives)."""
    year -= month <= 2
    era = year // 400
    year_of_era = year - era * 400
    day_of_year = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5 + day - 1
    day_of_era = year_of_era * 365 + year_of_era // 4 - year_of_era // 100 + day_of_year
    return era * 146097 + day_of_era - 719468


def _civil_from_days(days: int) -> tuple[int, int, int]:
    """The inverse of ``_days_from_civil``."""
    days += 719468
    era = days // 146097
    day_of_era = days - era * 146097
    year_of_era = (day_of_era - day_of_era // 1460 + day_of_era // 36524 - day_of_era // 146096) // 365
    day_of_year = day_of_era - (365 * year_of_era + year_of_era // 4 - year_of_era // 100)
    mp = (5 * day_of_year + 2) // 153
    day = day_of_year - (153 * mp + 2) // 5 + 1
    month = mp + 3 if mp < 10 else mp - 9
    return year_of_era + era * 400 + (month <= 2), month, day


def _format(seconds: int) -> str:
    """``YYYY-MM-DDTHH:MM:SS`` in UTC, the year as Go's ``appendInt(year, 4)`` writes it."""
    days, rest = divmod(seconds, 86400)
    year, month, day = _civil_from_days(days)
    sign = "-" if year < 0 else ""
    clock = f"{rest // 3600:02d}:{rest // 60 % 60:02d}:{rest % 60:02d}"
    return f"{sign}{abs(year):04d}-{month:02d}-{day:02d}T{clock}"


class _Parser:
    """One ``time.Parse`` call: ``value`` is consumed element by element of the layout."""

    def __init__(self, layout: str, text: str) -> None:
        self.layout = layout
        self.text = text
        self.micro = layout == RFC3339_MICRO
        self.value = text.encode()
        self.fields = {"year": 0, "month": 1, "day": 1, "hour": 0, "minute": 0, "second": 0}
        self.nanos = 0
        self.offset = 0

    def error(self, layout_elem: str, value_elem: bytes) -> GoTimeError:
        return GoTimeError(
            f"parsing time {time_quote(self.text.encode())} as {time_quote(self.layout.encode())}: "
            f"cannot parse {time_quote(value_elem)} as {time_quote(layout_elem.encode())}"
        )

    def message(self, text: str) -> GoTimeError:
        return GoTimeError(f"parsing time {time_quote(self.text.encode())}{text}")

    def parse(self) -> Instant:
        steps = [
            ("", "2006", self._year),
            ("-", "01", self._month),
            ("-", "02", self._day),
            ("T", "15", self._hour),
            (":", "04", self._minute),
            (":", "05", self._second),
        ]
        if self.micro:
            steps.append(("", ".000000", self._fraction))
        steps.append(("", "Z07:00", self._zone))
        for prefix, element, step in steps:
            if prefix and not self.value.startswith(prefix.encode()):
                raise self.error(prefix, self.value)
            self.value = self.value[len(prefix) :]
            hold = self.value
            try:
                step()
            except _OutOfRange as exc:
                raise self.message(f": {exc} out of range") from None
            except _Bad:
                raise self.error(element, hold) from None
        if self.value:
            raise self.message(f": extra text: {time_quote(self.value)}")
        year, month, day = self.fields["year"], self.fields["month"], self.fields["day"]
        if day < 1 or day > _days_in(month, year):
            raise self.message(": day out of range")
        clock = self.fields["hour"] * 3600 + self.fields["minute"] * 60 + self.fields["second"]
        return Instant(_days_from_civil(year, month, day) * 86400 + clock - self.offset, self.nanos)

    def _year(self) -> None:
        if len(self.value) < 4 or not _is_digit(self.value, 0):
            raise _Bad
        self.fields["year"] = _atoi(self.value[:4])
        self.value = self.value[4:]

    def _two_digits(self, name: str, limit: int, fixed: bool = True) -> None:
        number, self.value = _getnum(self.value, fixed)
        if not 0 <= number < limit:
            raise _OutOfRange(name)
        self.fields[name] = number

    def _month(self) -> None:
        number, self.value = _getnum(self.value, True)
        if not 1 <= number <= 12:
            raise _OutOfRange("month")
        self.fields["month"] = number

    def _day(self) -> None:
        self.fields["day"], self.value = _getnum(self.value, True)

    def _hour(self) -> None:
        self._two_digits("hour", 24, fixed=False)

    def _minute(self) -> None:
        self._two_digits("minute", 60)

    def _second(self) -> None:
        self._two_digits("second", 60)
        value = self.value
        if self.micro or len(value) < 2 or value[0] not in b".," or not _is_digit(value, 1):
            return
        # a fraction the layout does not have: any number of digits is accepted
        end = 2
        while _is_digit(value, end):
            end += 1
        self.nanos = _nanoseconds(value, end)
        self.value = value[end:]

    def _fraction(self) -> None:
        if len(self.value) < 7:
            raise _Bad
        self.nanos = _nanoseconds(self.value, 7)
        self.value = self.value[7:]

    def _zone(self) -> None:
        value = self.value
        if value[:1] == b"Z":
            self.value = value[1:]
            return
        if len(value) < 6 or value[3:4] != b":":
            raise _Bad
        sign, self.value = value[:1], value[6:]
        # Go reads hours then minutes, stops at the first bad one, and reports a range error before
        # a syntax error (the minutes' range error before the hours')
        bad = sign not in (b"+", b"-")
        hours = minutes = 0
        try:
            hours, _ = _getnum(value[1:3], True)
            minutes, _ = _getnum(value[4:6], True)
        except _Bad:
            bad = True
        if minutes > 60:
            raise _OutOfRange("time zone offset minute")
        if hours > 24:
            raise _OutOfRange("time zone offset hour")
        if bad:
            raise _Bad
        self.offset = (hours * 60 + minutes) * 60 * (-1 if sign == b"-" else 1)


def parse(layout: str, value: str) -> Instant:
    """Parse ``value`` with ``RFC3339`` or ``RFC3339_MICRO`` as Go does; raise GoTimeError with Go's text."""
    return _Parser(layout, value).parse()
