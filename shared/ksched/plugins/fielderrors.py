"""Go-compatible field error text and label validation, as apimachinery renders them.

Used where the scheduler reports parse errors of node selectors (plugin args validation and
NodeAffinity's PreScore error): ``<path>: Invalid value: "x": <detail>`` and friends.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence

_GO_ESCAPES = {
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


def go_quote(text: str) -> str:
    """Go's ``strconv.Quote`` (``%q``): printable characters kept, others escaped."""
    out = ['"']
    for ch in text:
        esc = _GO_ESCAPES.get(ch)
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


def go_string_slice(values: Sequence[str]) -> str:
    """Go's ``%#v`` of a ``[]string`` (an empty list renders as the nil slice an omitted field is)."""
    if not values:
        return "[]string(nil)"
    return "[]string{" + ", ".join(go_quote(v) for v in values) + "}"


# --- field paths (apimachinery field.Path.String) ---------------------------------------------------
def child(path: str, *names: str) -> str:
    for name in names:
        path = f"{path}.{name}" if path else name
    return path


def index(path: str, i: int | str) -> str:
    return f"{path}[{i}]"


# --- field errors (field.Error.Error) -------------------------------------------------------------
def invalid(path: str, rendered_value: str, detail: str) -> str:
    """``field.Invalid``; ``rendered_value`` is already in Go syntax (see :func:`go_quote`)."""
    return (
        f"{path}: Invalid value: {rendered_value}: {detail}"
        if detail
        else f"{path}: Invalid value: {rendered_value}"
    )


def not_supported(path: str, value: str, supported: Iterable[str]) -> str:
    """``field.NotSupported`` with a string-kinded value."""
    quoted = ", ".join(go_quote(v) for v in supported)
    detail = f": supported values: {quoted}" if quoted else ""
    return f"{path}: Unsupported value: {go_quote(value)}{detail}"


def aggregate_message(messages: Sequence[str]) -> str:
    """``utilerrors.Aggregate.Error()``: one message as is, several deduplicated in brackets."""
    unique = list(dict.fromkeys(messages))
    if len(unique) == 1:
        return unique[0]
    return "[" + ", ".join(unique) + "]"


# --- label keys and values (apimachinery validate/content) -------------------------------------------
_LABEL_KEY_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_LABEL_KEY_MSG = (
    "must consist of alphanumeric characters, '-', '_' or '.', "
    "and must start and end with an alphanumeric character"
)
_LABEL_VALUE_FMT = f"({_LABEL_KEY_FMT})?"
_LABEL_VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', "
    "and must start and end with an alphanumeric character"
)
_DNS1123_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_SUBDOMAIN_FMT = _DNS1123_LABEL_FMT + "(\\." + _DNS1123_LABEL_FMT + ")*"
_DNS1123_SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
    "and must start and end with an alphanumeric character"
)
_LABEL_KEY_RE = re.compile(_LABEL_KEY_FMT)
_LABEL_VALUE_RE = re.compile(_LABEL_VALUE_FMT)
_DNS1123_SUBDOMAIN_RE = re.compile(_DNS1123_SUBDOMAIN_FMT)
LABEL_MAX_LENGTH = 63
DNS1123_SUBDOMAIN_MAX_LENGTH = 253


def regex_error(msg: str, fmt: str, *examples: str) -> str:
    """apimachinery ``RegexError`` (its double space before ``or`` included)."""
    if not examples:
        return f"{msg} (regex used for validation is '{fmt}')"
    listed = " or ".join(f"'{e}', " for e in examples)
    return f"{msg} (e.g. {listed}regex used for validation is '{fmt}')"


def max_len_error(length: int) -> str:
    return f"must be no more than {length} bytes"


def _byte_len(text: str) -> int:
    return len(text.encode())


def dns1123_subdomain_errors(value: str) -> list[str]:
    errs: list[str] = []
    if _byte_len(value) > DNS1123_SUBDOMAIN_MAX_LENGTH:
        errs.append(max_len_error(DNS1123_SUBDOMAIN_MAX_LENGTH))
    if not _DNS1123_SUBDOMAIN_RE.fullmatch(value):
        errs.append(regex_error(_DNS1123_SUBDOMAIN_MSG, _DNS1123_SUBDOMAIN_FMT, "example.com"))
    return errs


def label_key_errors(key: str) -> list[str]:
    """Why ``key`` is not a valid label key (``content.IsLabelKey``); empty when valid."""
    errs: list[str] = []
    parts = key.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errs.append("prefix part must be non-empty")
        else:
            errs.extend("prefix part " + m for m in dns1123_subdomain_errors(prefix))
    else:
        return [
            "a valid label key "
            + regex_error(_LABEL_KEY_MSG, _LABEL_KEY_FMT, "MyName", "my.name", "123-abc")
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]
    if not name:
        errs.append("name part must be non-empty")
    elif _byte_len(name) > LABEL_MAX_LENGTH:
        errs.append("name part " + max_len_error(LABEL_MAX_LENGTH))
    if not _LABEL_KEY_RE.fullmatch(name):
        errs.append(
            "name part " + regex_error(_LABEL_KEY_MSG, _LABEL_KEY_FMT, "MyName", "my.name", "123-abc")
        )
    return errs


def label_value_errors(value: str) -> list[str]:
    """Why ``value`` is not a valid label value (``IsValidLabelValue``); empty when valid."""
    errs: list[str] = []
    if _byte_len(value) > LABEL_MAX_LENGTH:
        errs.append(max_len_error(LABEL_MAX_LENGTH))
    if not _LABEL_VALUE_RE.fullmatch(value):
        errs.append(regex_error(_LABEL_VALUE_MSG, _LABEL_VALUE_FMT, "MyValue", "my_value", "12345"))
    return errs


_GO_INT = re.compile(r"[+-]?[0-9]+")
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def parse_go_int64(text: str) -> int | None:
    """``strconv.ParseInt(text, 10, 64)``: optional sign and ASCII digits only, int64 range; else None."""
    if not _GO_INT.fullmatch(text):
        return None
    number = int(text)
    return number if _INT64_MIN <= number <= _INT64_MAX else None
