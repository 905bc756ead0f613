"""Query parameters as the API server's parameter codec converts them.

Integers go through Go's ``strconv.ParseInt(s, 10, 64)``: an optional sign and ASCII digits only,
64 bits, and an empty value (``limit=``) is an error too. Booleans are true unless the parameter is
absent, ``0`` or ``false`` in any case: ``watch=yes`` and a bare ``watch=`` both start a watch.
"""

from __future__ import annotations

from collections.abc import Mapping

from ksched.apimachinery.strconv import go_quote

from . import errors

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


def parse_int64(text: str) -> int:
    """``strconv.ParseInt(text, 10, 64)``; a 400 with Go's error text when it fails."""
    digits = text[1:] if text[:1] in ("+", "-") else text
    if not digits or any(not "0" <= c <= "9" for c in digits):
        raise errors.bad_request(f"strconv.ParseInt: parsing {go_quote(text)}: invalid syntax")
    value = int(text)
    if not INT64_MIN <= value <= INT64_MAX:
        raise errors.bad_request(f"strconv.ParseInt: parsing {go_quote(text)}: value out of range")
    return value


def query_int64(query: Mapping[str, str], name: str) -> int | None:
    """The integer parameter ``name``, None when absent."""
    value = query.get(name)
    return None if value is None else parse_int64(value)


def query_bool(value: str | None) -> bool:
    """A boolean parameter's value (``Convert_Slice_string_To_bool``)."""
    return value is not None and value != "0" and value.casefold() != "false"
