"""Go ``time.Duration`` text (``metav1.Duration`` in configuration and plugin args): parse and format;
and the ``time`` package's own quoting of the text in its errors."""

from __future__ import annotations

import re

NANOSECOND = 1
MICROSECOND = 1000 * NANOSECOND
MILLISECOND = 1000 * MICROSECOND
SECOND = 1000 * MILLISECOND
MINUTE = 60 * SECOND
HOUR = 60 * MINUTE

_UNITS = {
    "ns": NANOSECOND,
    "us": MICROSECOND,
    "\u00b5s": MICROSECOND,  # micro sign
    "\u03bcs": MICROSECOND,  # Greek mu
    "ms": MILLISECOND,
    "s": SECOND,
    "m": MINUTE,
    "h": HOUR,
}
_NUMBER = re.compile(r"([0-9]*)(?:\.([0-9]*))?")
_UNIT = re.compile(r"[^0-9.]+")


def time_quote(text: str | bytes) -> str:
    """The ``time`` package's ``quote`` (its parse errors), not ``strconv.Quote``
    (:func:`ksched.apimachinery.strconv.go_quote`): each byte outside printable ASCII as ``\\xNN``
    (a non-ASCII character as the bytes of its UTF-8), ``"`` and ``\\`` escaped."""
    raw = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text
    out = ['"']
    for byte in raw:
        if byte < 0x20 or byte >= 0x80:
            out.append(f"\\x{byte:02x}")
        elif byte in (0x22, 0x5C):
            out.append("\\" + chr(byte))
        else:
            out.append(chr(byte))
    out.append('"')
    return "".join(out)


class DurationError(ValueError):
    """A string that Go's ``time.ParseDuration`` rejects; the message is Go's."""


def parse_duration(text: str) -> int:
    """Nanoseconds of a Go duration string such as ``"1m30s"`` or ``"-1.5h"`` (``time.ParseDuration``)."""
    rest = text
    negative = False
    if rest[:1] in ("+", "-"):
        negative = rest[0] == "-"
        rest = rest[1:]
    if rest == "0":
        return 0
    if not rest:
        raise DurationError(f"time: invalid duration {time_quote(text)}")
    total = 0
    while rest:
        number = _NUMBER.match(rest)
        whole, frac = (number.group(1), number.group(2)) if number else ("", None)
        if not whole and not frac:
            raise DurationError(f"time: invalid duration {time_quote(text)}")
        rest = rest[number.end() if number else 0 :]
        unit_match = _UNIT.match(rest)
        if unit_match is None:
            raise DurationError(f"time: missing unit in duration {time_quote(text)}")
        unit = unit_match.group(0)
        rest = rest[unit_match.end() :]
        scale = _UNITS.get(unit)
        if scale is None:
            raise DurationError(f"time: unknown unit {time_quote(unit)} in duration {time_quote(text)}")
        value = int(whole or "0") * scale
        if frac:
            value += int(frac) * scale // 10 ** len(frac)
        total += value
    if total > 2**63 - 1:
        raise DurationError(f"time: invalid duration {time_quote(text)}")
    return -total if negative else total


def seconds(text: str) -> float:
    """A Go duration string in seconds (raises :class:`DurationError`)."""
    return parse_duration(text) / SECOND
