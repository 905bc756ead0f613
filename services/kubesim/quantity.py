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
