"""Go's ``strconv`` where ksched needs its exact behaviour: ``Quote`` (``%q``) and ``ParseInt``."""

from __future__ import annotations

import re
import unicodedata

from ksched.apimachinery.gomath import INT64_MAX, INT64_MIN

_ESCAPES = {
    '"': '\\"',
    "\\": "\\\\",
    "\a": "\\a",
    "\b": "\\b",
    "\f": "\\f",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
    "\v": "\\v",
}
_DECIMAL = re.compile(r"[+-]?[0-9]+")


def go_quote(text: str) -> str:
    """``strconv.Quote`` (``%q``): printable characters kept, others escaped as Go escapes them."""
    out = ['"']
    for ch in text:
        esc = _ESCAPES.get(ch)
        if esc is not None:
            out.append(esc)
        elif ch == " " or (ch.isprintable() and unicodedata.category(ch)[0] not in "CZ"):
            out.append(ch)
        elif ord(ch) < 0x80:
            out.append(f"\\x{ord(ch):02x}")
        elif ord(ch) <= 0xFFFF:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(f"\\U{ord(ch):08x}")
    out.append('"')
    return "".join(out)


def parse_go_int64(text: str) -> int | None:
    """``strconv.ParseInt(text, 10, 64)``: optional sign and ASCII digits, int64 range; else None."""
    if not _DECIMAL.fullmatch(text):
        return None
    number = int(text)
    return number if INT64_MIN <= number <= INT64_MAX else None
