"""Field paths and field errors as apimachinery's ``util/validation/field`` renders them (1.36.2).

``str(error)`` is ``field.Error.Error()``: ``<path>: <type>[: <value>][: <detail>]``. The bad value
is printed as ``ErrorBody`` prints it: integers, floats and booleans bare, strings quoted (``%q``),
everything else as Go's ``json.Marshal`` writes it (a ``[]string`` is ``["a","b"]``; an empty list
stands for an omitted field, the nil slice, which Go prints as ``null``). A mapping is written in its
own key order: give a struct's fields in Go's declaration order (Go sorts only map keys).
"""

from __future__ import annotations

import decimal
import enum
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import msgspec

from ksched.apimachinery.strconv import go_quote


class ErrorType(enum.Enum):
    """``field.ErrorType``: the value is the ``reason`` of an API status cause."""

    NOT_FOUND = "FieldValueNotFound"
    REQUIRED = "FieldValueRequired"
    DUPLICATE = "FieldValueDuplicate"
    INVALID = "FieldValueInvalid"
    NOT_SUPPORTED = "FieldValueNotSupported"
    FORBIDDEN = "FieldValueForbidden"
    TOO_LONG = "FieldValueTooLong"
    TOO_MANY = "FieldValueTooMany"
    INTERNAL = "InternalError"

    @property
    def text(self) -> str:
        return _TYPE_TEXT[self]


_TYPE_TEXT = {
    ErrorType.NOT_FOUND: "Not found",
    ErrorType.REQUIRED: "Required value",
    ErrorType.DUPLICATE: "Duplicate value",
    ErrorType.INVALID: "Invalid value",
    ErrorType.NOT_SUPPORTED: "Unsupported value",
    ErrorType.FORBIDDEN: "Forbidden",
    ErrorType.TOO_LONG: "Too long",
    ErrorType.TOO_MANY: "Too many",
    ErrorType.INTERNAL: "Internal error",
}
_VALUELESS = frozenset({ErrorType.REQUIRED, ErrorType.FORBIDDEN, ErrorType.TOO_LONG, ErrorType.INTERNAL})


# --- paths (field.Path.String) -----------------------------------------------------------------------


def child(path: str, *names: str) -> str:
    """``path.Child(names...)``: ``a.b.c``."""
    for name in names:
        path = f"{path}.{name}" if path else name
    return path


def index(path: str, i: int | str) -> str:
    """``path.Index(i)`` (and ``path.Key(k)``, which prints the same): ``a[0]``, ``a[key]``."""
    return f"{path}[{i}]"


# --- values ------------------------------------------------------------------------------------------


def go_float(x: float) -> str:
    """Go's ``%v`` of a float64: shortest digits, exponent form below 1e-4 and from 1e21."""
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "+Inf" if x > 0 else "-Inf"
    if x == 0:
        return "-0" if math.copysign(1.0, x) < 0 else "0"
    number = decimal.Decimal(repr(x)).normalize()
    digits = number.as_tuple().digits
    exponent = len(digits) + int(number.as_tuple().exponent) - 1
    if -4 <= exponent < 21:
        return format(number, "f")
    sign = "-" if x < 0 else ""
    mantissa = "".join(map(str, digits))
    if len(mantissa) > 1:
        mantissa = f"{mantissa[0]}.{mantissa[1:]}"
    return f"{sign}{mantissa}e{'-' if exponent < 0 else '+'}{abs(exponent):02d}"


def go_json(value: object) -> str:
    """Go's ``json.Marshal`` of a JSON-like value: compact, ``<``, ``>`` and ``&`` escaped."""
    text = msgspec.json.encode(value).decode()
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def go_value(value: object) -> str:
    """A bad value as ``field.Error`` prints it (see the module docstring)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return go_float(value)
    if isinstance(value, str):
        return go_quote(value)
    if isinstance(value, list | tuple) and not value:
        return "null"
    return go_json(value)


# --- errors ------------------------------------------------------------------------------------------


class _Omitted:
    def __repr__(self) -> str:
        return "<value omitted>"


OMIT_VALUE: object = _Omitted()
"""``field.OmitValueType``: the error names no bad value."""


@dataclass(frozen=True, slots=True)
class FieldError:
    """``field.Error``: ``str()`` is its ``Error()``, :meth:`body` its ``ErrorBody()``."""

    type: ErrorType
    field: str
    bad_value: object = OMIT_VALUE
    detail: str = ""

    @property
    def reason(self) -> str:
        """The ``reason`` of the status cause the API server reports for this error."""
        return self.type.value

    def body(self) -> str:
        text = self.type.text
        if self.type not in _VALUELESS and self.bad_value is not OMIT_VALUE:
            text = f"{text}: {go_value(self.bad_value)}"
        return f"{text}: {self.detail}" if self.detail else text

    def __str__(self) -> str:
        return f"{self.field}: {self.body()}"


def invalid(path: str, value: object, detail: str = "") -> FieldError:
    return FieldError(ErrorType.INVALID, path, value, detail)


def required(path: str, detail: str = "") -> FieldError:
    return FieldError(ErrorType.REQUIRED, path, OMIT_VALUE, detail)


def forbidden(path: str, detail: str) -> FieldError:
    return FieldError(ErrorType.FORBIDDEN, path, OMIT_VALUE, detail)


def duplicate(path: str, value: object) -> FieldError:
    return FieldError(ErrorType.DUPLICATE, path, value)


def not_supported(path: str, value: object, supported: Iterable[str]) -> FieldError:
    """``field.NotSupported``: the detail lists the supported values, each quoted."""
    quoted = ", ".join(go_quote(v) for v in supported)
    return FieldError(ErrorType.NOT_SUPPORTED, path, value, f"supported values: {quoted}" if quoted else "")


def too_long(path: str, max_length: int) -> FieldError:
    """``field.TooLong`` (the value itself is never printed)."""
    unit = "byte" if max_length == 1 else "bytes"
    detail = f"may not be more than {max_length} {unit}" if max_length >= 0 else "value is too long"
    return FieldError(ErrorType.TOO_LONG, path, OMIT_VALUE, detail)


def too_many(path: str, actual: int, max_items: int) -> FieldError:
    """``field.TooMany``: ``Too many: <actual>: must have at most <max> items``."""
    return FieldError(ErrorType.TOO_MANY, path, actual, f"must have at most {max_items} items")


def aggregate_message(messages: Sequence[str | FieldError]) -> str:
    """``utilerrors.NewAggregate(errs).Error()``: one message as is, several deduplicated in brackets."""
    unique = list(dict.fromkeys(str(m) for m in messages))
    if len(unique) <= 1:
        return "".join(unique)
    return "[" + ", ".join(unique) + "]"
