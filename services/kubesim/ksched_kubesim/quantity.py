"""Kubernetes resource quantities (``100m``, ``64Mi``, ``1e9``) parsed to exact fractions."""

from __future__ import annotations

import re
from fractions import Fraction

QUANTITY_PATTERN = "^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$"
QUANTITY_ERROR = f"quantities must match the regular expression '{QUANTITY_PATTERN}'"

_NUMBER = re.compile(r"^([+-]?)([0-9]+(?:\.[0-9]*)?|\.[0-9]+)(.*)$")
_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 1000),
    "": Fraction(1),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
}
_EXPONENT = re.compile(r"^[eE]([+-]?[0-9]+)$")


class QuantityError(ValueError):
    pass


def parse_quantity(value: object) -> Fraction:
    """Parse a quantity string (or a bare JSON number) exactly; raise QuantityError when malformed."""
    if isinstance(value, bool):
        raise QuantityError(QUANTITY_ERROR)
    if isinstance(value, int):
        return Fraction(value)
    if isinstance(value, float):
        return Fraction(str(value))
    if not isinstance(value, str):
        raise QuantityError(QUANTITY_ERROR)
    text = value.strip()
    match = _NUMBER.match(text)
    if not match:
        raise QuantityError(QUANTITY_ERROR)
    sign, digits, suffix = match.groups()
    number = Fraction(digits)
    if suffix in _BINARY:
        factor: Fraction = Fraction(_BINARY[suffix])
    elif suffix in _DECIMAL:
        factor = _DECIMAL[suffix]
    else:
        exp = _EXPONENT.match(suffix)
        if not exp:
            raise QuantityError(QUANTITY_ERROR)
        factor = Fraction(10) ** int(exp.group(1))
    result = number * factor
    return -result if sign == "-" else result


def is_quantity(value: object) -> bool:
    try:
        parse_quantity(value)
    except QuantityError:
        return False
    return True


_DECIMAL_SUFFIXES = {-9: "n", -6: "u", -3: "m", 0: "", 3: "k", 6: "M", 9: "G", 12: "T", 15: "P", 18: "E"}
_BINARY_SUFFIXES = {0: "", 10: "Ki", 20: "Mi", 30: "Gi", 40: "Ti", 50: "Pi", 60: "Ei"}
_NANO = Fraction(1, 10**9)


def _format_of(text: str) -> str:
    suffix = _NUMBER.match(text.strip())
    tail = suffix.group(3) if suffix else ""
    if tail in _BINARY:
        return "BinarySI"
    if tail[:1] in ("e", "E"):
        return "DecimalExponent"
    return "DecimalSI"


def canonical_quantity(value: object) -> object:
    """The API server's serialisation of a quantity (``0.5`` → ``500m``, ``2048Ki`` → ``2Mi``,
    ``1000`` → ``1k``); values that do not parse are returned unchanged."""
    try:
        number = parse_quantity(value)
    except QuantityError:
        return value
    if number == 0:
        return "0"
    fmt = _format_of(value) if isinstance(value, str) else "DecimalSI"
    if fmt == "BinarySI" and (-1024 < number < 1024 or number.denominator != 1):
        fmt = "DecimalSI"
    sign = "-" if number < 0 else ""
    magnitude = -number if number < 0 else number
    if fmt == "BinarySI":
        mantissa, exponent = int(magnitude), 0
        while mantissa % 1024 == 0 and exponent < 60:
            mantissa //= 1024
            exponent += 10
        return f"{sign}{mantissa}{_BINARY_SUFFIXES[exponent]}"
    nanos = magnitude / _NANO
    mantissa = nanos.numerator // nanos.denominator + (1 if nanos.denominator != 1 else 0)
    exponent = -9
    while mantissa % 10 == 0:
        mantissa //= 10
        exponent += 1
    if exponent % 3 == 1:
        mantissa, exponent = mantissa * 10, exponent - 1
    elif exponent % 3 == 2:
        mantissa, exponent = mantissa * 100, exponent - 2
    if fmt == "DecimalSI" and exponent in _DECIMAL_SUFFIXES:
        suffix = _DECIMAL_SUFFIXES[exponent]
    else:
        suffix = f"e{exponent}" if exponent else ""
    return f"{sign}{mantissa}{suffix}"


def canonical_map(values: object) -> object:
    """Canonicalise every quantity of a ResourceList (``{"cpu": "0.5"}`` → ``{"cpu": "500m"}``)."""
    if not isinstance(values, dict):
        return values
    return {name: canonical_quantity(v) for name, v in values.items()}
