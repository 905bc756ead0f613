"""Kubernetes resource quantities, bit-for-bit as apimachinery ``resource.Quantity`` in 1.36.2.

A quantity string is ``<sign><digits>[.<digits>]<suffix>`` with a decimal SI suffix (``n u m "" k M
G T P E``), a binary one (``Ki Mi Gi Ti Pi Ei``) or a decimal exponent (``e3``, ``E-3``, ``e+6``).
Values are exact (an integer mantissa and a power of ten, never a float). Parsing rounds a non-zero
value up, away from zero, to a whole nano unit, caps BinarySI values at 2^63-1, and remembers the
suffix family as the :class:`Format` used when the value is written back.

Fidelity notes, all deliberate (the reference is the 1.36.2 Go source, not later fixes):

* The accepted grammar is exactly upstream's scanner, quirks included: ``"1."``, ``"."``, ``"+"``,
  ``"Ki"`` and ``"e5"`` parse (as 1 or 0) while ``"Pi"`` and ``"e-10"`` are rejected; an exponent
  is read as int64 and truncated to int32 (``"1e4294967297"`` is 10).
* ``str(q)`` is upstream's ``String()``: when the parser judged the input already canonical it
  returns the input verbatim (``"+1"``, ``"01"``, ``"1.500"``, ``"1e+3"`` stay as written, as the
  API server echoes them); otherwise the canonical form (``"1024Ki"`` -> ``"1Mi"``, ``"0.5"`` ->
  ``"500m"``; ``"1e9"`` keeps DecimalExponent and stays ``"1e9"``). DecimalSI values whose
  canonical exponent is above 18 lose their suffix (``"1000E"`` -> ``"1"``), an upstream bug kept
  so that kubesim normalizes exactly as the real 1.36.2 API server does.
* :meth:`Quantity.value` / :meth:`Quantity.milli_value` round up (away from zero) and, beyond
  int64, return what upstream's int64 code returns instead of raising or saturating, because the
  scheduler acts on those numbers. Upstream stores a quantity either as an int64 with a scale
  (inputs of at most 18 digits at nano scale or above) or as a big decimal (everything else); the
  two overflow differently. On the int64 path an overflow at the target scale yields 0 (``"10E"``
  has value 0, ``"9E"`` has milli value 0). On the big-decimal path results wrap modulo 2^64
  (``"9Ei"`` is capped to 2^63-1 and has milli value -1000), and negative values are truncated
  toward zero and then incremented (``"-0.1n"``, rounded to -1n there, has value 1: the 1.36.2
  bug later fixed by upstream #110653). Non-negative values up to ``MAX_MILLI_VALUE`` are always
  exact. Out-of-range float to int64 conversions follow amd64 (they yield -2^63).
"""

from __future__ import annotations

import enum
import functools
import re
from dataclasses import dataclass, field
from fractions import Fraction

from ksched.apimachinery.gomath import INT64_MAX, INT64_MIN, div, wrap32, wrap64

__all__ = [
    "MAX_MILLI_VALUE",
    "Format",
    "Quantity",
    "QuantityError",
    "canonical",
    "canonical_resource_list",
    "milli_value",
    "new_milli_quantity",
    "new_quantity",
    "new_scaled_quantity",
    "parse_json_quantity",
    "parse_quantity",
    "value",
]

#: The largest value whose milli value fits an int64 (upstream ``MaxMilliValue``).
MAX_MILLI_VALUE = INT64_MAX // 1000

_NANO = -9
_MILLI = -3
_INT64_DIGITS = 18  # decimal digits that always fit an int64 (upstream maxInt64Factors)
_STR_DIGITS_CHUNK = 4000  # below CPython's int <-> str digit limit
_MAX_MATERIALIZED_EXPONENT = 100_000  # refuse to build 10**n beyond this in arithmetic


class Format(enum.StrEnum):
    """How a quantity is written back: the suffix family it was parsed with."""

    DECIMAL_EXPONENT = "DecimalExponent"  # 12e6
    BINARY_SI = "BinarySI"  # 12Mi
    DECIMAL_SI = "DecimalSI"  # 12M


class QuantityError(ValueError):
    """A string that upstream ``resource.ParseQuantity`` rejects; the message names the string."""

    def __init__(self, text: str, reason: str) -> None:
        super().__init__(f"invalid quantity {text!r}: {reason}")
        self.text = text
        self.reason = reason


_SPLIT_RE = "^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$"
_ERR_FORMAT = f"quantities must match the regular expression '{_SPLIT_RE}'"
FORMAT_ERROR = _ERR_FORMAT
"""The API server's text for a value that is not a quantity."""
_ERR_NUMERIC = "unable to parse numeric part of quantity"
_ERR_SUFFIX = "unable to parse quantity's suffix"

# Equivalent to upstream's hand-written scanner: sign, integer digits, optional "." and fraction
# digits, then suffix letters, an optional sign and digits. Python's greedy matching splits the
# string exactly where the scanner does.
_SCAN = re.compile(r"([+-]?)([0-9]*)(?:\.([0-9]*))?([eEinumkKMGTP]*[+-]?[0-9]*)")
_EXPONENT_SUFFIX = re.compile(r"[eE]([+-]?)([0-9]+)")

_SUFFIXES: dict[str, tuple[int, int, Format]] = {
    "": (10, 0, Format.DECIMAL_SI),
    "n": (10, -9, Format.DECIMAL_SI),
    "u": (10, -6, Format.DECIMAL_SI),
    "m": (10, -3, Format.DECIMAL_SI),
    "k": (10, 3, Format.DECIMAL_SI),
    "M": (10, 6, Format.DECIMAL_SI),
    "G": (10, 9, Format.DECIMAL_SI),
    "T": (10, 12, Format.DECIMAL_SI),
    "P": (10, 15, Format.DECIMAL_SI),
    "E": (10, 18, Format.DECIMAL_SI),
    "Ki": (2, 10, Format.BINARY_SI),
    "Mi": (2, 20, Format.BINARY_SI),
    "Gi": (2, 30, Format.BINARY_SI),
    "Ti": (2, 40, Format.BINARY_SI),
    "Pi": (2, 50, Format.BINARY_SI),
    "Ei": (2, 60, Format.BINARY_SI),
}
_DECIMAL_SUFFIX_BY_EXPONENT = {exp: s for s, (base, exp, _) in _SUFFIXES.items() if base == 10}
_BINARY_SUFFIX_BY_POWER = {exp // 10: s for s, (base, exp, _) in _SUFFIXES.items() if base == 2}

# Unicode White_Space as Go's strings.TrimSpace sees it (not quite Python's str.isspace).
_GO_SPACE = (
    "\t\n\v\f\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000"
)


# --- int64 arithmetic as Go performs it ---------------------------------------------------------


def _wrap64_scaled(mantissa: int, power: int) -> int:
    """``wrap64(mantissa * 10**power)`` without building 10**power."""
    return wrap64(mantissa * pow(10, power, 1 << 64))


def _fits_int64(x: int) -> bool:
    return INT64_MIN <= x <= INT64_MAX


def _pow10(n: int) -> int:
    if n > _MAX_MATERIALIZED_EXPONENT:
        raise OverflowError(f"quantity arithmetic would need 10**{n}")
    power: int = 10**n
    return power


def _digits_to_int(digits: str) -> int:
    if len(digits) <= _STR_DIGITS_CHUNK:
        return int(digits)
    half = len(digits) // 2
    high: int = _digits_to_int(digits[:half]) * 10 ** (len(digits) - half)
    return high + _digits_to_int(digits[half:])


def _int_to_digits(n: int) -> str:
    """Decimal digits of ``n >= 0``, also beyond CPython's int-to-str digit limit."""
    if n.bit_length() <= 3 * _STR_DIGITS_CHUNK:
        return str(n)
    width = n.bit_length() * 3 // 20  # about half the decimal digits
    high, low = divmod(n, 10**width)
    return _int_to_digits(high) + _int_to_digits(low).zfill(width)


# --- the value type ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, eq=False)
class Quantity:
    """An exact quantity: ``mantissa * 10**exponent``, plus the :class:`Format` to write it in.

    Immutable; equality, ordering and hashing compare values only (like upstream ``Cmp``).
    ``_dec_scale`` mirrors upstream's storage: ``None`` for its int64 fast path, where
    (mantissa, exponent) are its (value, scale); else the scale of its big decimal, whose unscaled
    integer is ``mantissa * 10**(exponent + _dec_scale)``. The storage only changes results where
    upstream's int64 arithmetic overflows or rounds (see the module docstring).
    """

    mantissa: int
    exponent: int
    format: Format
    _dec_scale: int | None = field(default=None, repr=False)
    _text: str | None = field(default=None, repr=False)  # input reused verbatim by str()

    # -- reading --

    def value(self) -> int:
        """Upstream ``Value()``: the value rounded up (away from zero) to an integer."""
        return self.scaled_value(0)

    def milli_value(self) -> int:
        """Upstream ``MilliValue()``: ``ceil(value * 1000)``; exact below ``MAX_MILLI_VALUE``."""
        return self.scaled_value(_MILLI)

    def scaled_value(self, scale: int) -> int:
        """Upstream ``ScaledValue(scale)``: the value in units of ``10**scale``, rounded up."""
        if self._dec_scale is None:
            return _int64_scaled_value(self.mantissa, self.exponent, scale)
        return _decimal_scaled_value(self.mantissa, self.exponent, self._dec_scale, scale)

    def sign(self) -> int:
        return (self.mantissa > 0) - (self.mantissa < 0)

    def is_zero(self) -> bool:
        return self.mantissa == 0

    def as_fraction(self) -> Fraction:
        """The exact value (refuses absurd exponents with OverflowError, as :func:`_pow10` does)."""
        if self.exponent >= 0:
            return Fraction(self.mantissa * _pow10(self.exponent))
        return Fraction(self.mantissa, _pow10(-self.exponent))

    # -- writing --

    def __str__(self) -> str:
        """Upstream ``String()``: the input if it was judged canonical, else :meth:`canonicalize`."""
        return self._text if self._text is not None else self.canonicalize()

    def __repr__(self) -> str:
        return f"Quantity({str(self)!r}, {self.format.value})"

    def canonicalize(self) -> str:
        """Upstream ``CanonicalizeBytes``: largest suffix of the format that loses no precision."""
        if self.mantissa == 0:
            return "0"
        sign = "-" if self.mantissa < 0 else ""
        fmt = self.format
        if fmt is Format.BINARY_SI:
            whole = self._exact_integer()
            if whole is None or abs(whole) < 1024:
                fmt = Format.DECIMAL_SI  # fractions and small values are written in decimal
            else:
                amount, power = abs(whole), 0
                while amount % 1024 == 0:
                    amount //= 1024
                    power += 1
                return sign + _int_to_digits(amount) + _BINARY_SUFFIX_BY_POWER.get(power, "")
        _, digits, exponent = self._normalized()
        shift = exponent % 3  # lower the exponent to a multiple of three
        digits += "0" * shift
        exponent -= shift
        if fmt is Format.DECIMAL_SI:
            suffix = _DECIMAL_SUFFIX_BY_EXPONENT.get(exponent, "")  # "" beyond n..E: upstream bug
        else:
            suffix = f"e{exponent}" if exponent else ""
        return sign + digits + suffix

    # -- comparing --

    def cmp(self, other: Quantity) -> int:
        """-1, 0 or 1 as self is less than, equal to or greater than other (exact)."""
        sign_a, digits_a, exp_a = self._normalized()
        sign_b, digits_b, exp_b = other._normalized()
        if sign_a != sign_b:
            return -1 if sign_a < sign_b else 1
        if sign_a == 0:
            return 0
        magnitude_a, magnitude_b = len(digits_a) + exp_a, len(digits_b) + exp_b
        if magnitude_a != magnitude_b:
            order = -1 if magnitude_a < magnitude_b else 1
        else:
            width = max(len(digits_a), len(digits_b))
            padded_a, padded_b = digits_a.ljust(width, "0"), digits_b.ljust(width, "0")
            order = (padded_a > padded_b) - (padded_a < padded_b)
        return order * sign_a

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Quantity):
            return NotImplemented
        return self._normalized() == other._normalized()

    def __hash__(self) -> int:
        return hash(self._normalized())

    def __lt__(self, other: Quantity) -> bool:
        return self.cmp(other) < 0

    def __le__(self, other: Quantity) -> bool:
        return self.cmp(other) <= 0

    def __gt__(self, other: Quantity) -> bool:
        return self.cmp(other) > 0

    def __ge__(self, other: Quantity) -> bool:
        return self.cmp(other) >= 0

    # -- arithmetic (upstream Add/Sub/Neg: exact, int64 while it fits, format of a non-zero left) --

    def __add__(self, other: Quantity) -> Quantity:
        fmt = other.format if self.mantissa == 0 else self.format
        if self._dec_scale is None and other._dec_scale is None:
            summed = _int64_add(self.mantissa, self.exponent, other.mantissa, other.exponent)
            if summed is not None:
                return Quantity(summed[0], summed[1], fmt)
        return _decimal_combine(self, other, fmt, negate_other=False)

    def __sub__(self, other: Quantity) -> Quantity:
        fmt = other.format if self.mantissa == 0 else self.format
        if self._dec_scale is None and other._dec_scale is None:
            negated = wrap64(-other.mantissa)  # Go negation wraps at -2^63
            summed = _int64_add(self.mantissa, self.exponent, negated, other.exponent)
            if summed is not None:
                return Quantity(summed[0], summed[1], fmt)
        return _decimal_combine(self, other, fmt, negate_other=True)

    def __neg__(self) -> Quantity:
        if self._dec_scale is None:
            return Quantity(wrap64(-self.mantissa), self.exponent, self.format)
        return Quantity(-self.mantissa, self.exponent, self.format, self._dec_scale)

    # -- helpers --

    def _normalized(self) -> tuple[int, str, int]:
        """(sign, digits without trailing zeros, exponent): one spelling per value."""
        if self.mantissa == 0:
            return (0, "0", 0)
        digits = _int_to_digits(abs(self.mantissa))
        stripped = digits.rstrip("0")
        return (self.sign(), stripped, self.exponent + len(digits) - len(stripped))

    def _exact_integer(self) -> int | None:
        if self.exponent >= 0:
            return self.mantissa * _pow10(self.exponent)
        quotient, remainder = divmod(abs(self.mantissa), _pow10(-self.exponent))
        if remainder:
            return None
        return quotient if self.mantissa > 0 else -quotient

    def _as_decimal(self) -> tuple[int, int]:
        """Upstream ``AsDec()``: (unscaled, scale) of the big-decimal form."""
        if self._dec_scale is None:
            return self.mantissa, -self.exponent
        if self.mantissa == 0:
            return 0, self._dec_scale
        return self.mantissa * _pow10(self.exponent + self._dec_scale), self._dec_scale


def _int64_scaled_value(amount: int, scale: int, target: int) -> int:
    """Upstream ``int64Amount.AsScaledInt64``: away from zero when dividing, 0 on overflow."""
    if scale < target:
        drop = target - scale
        if drop > 19:  # every int64 is below 10**19
            return (amount > 0) - (amount < 0)
        quotient, remainder = divmod(abs(amount), _pow10(drop))
        quotient += 1 if remainder else 0
        return quotient if amount >= 0 else -quotient
    if amount == 0:
        return 0
    grow = scale - target
    if grow > _INT64_DIGITS:
        return 0
    scaled = amount * 10**grow
    return scaled if _fits_int64(scaled) else 0


def _decimal_scaled_value(mantissa: int, exponent: int, dec_scale: int, target: int) -> int:
    """Upstream ``scaledValue`` on a big decimal, its int64 conversions and rounding included."""
    if mantissa == 0:
        return 0
    power = exponent + dec_scale  # unscaled == mantissa * 10**power
    shift = dec_scale + target  # upstream's "dif"
    if shift == 0:
        return _wrap64_scaled(mantissa, power)
    if shift < 0:
        # int64(math.Pow10(n)) is exact up to 18; beyond, amd64 converts the float to -2^63.
        multiplier = 10**-shift if -shift <= _INT64_DIGITS else INT64_MIN
        return wrap64(_wrap64_scaled(mantissa, power) * multiplier)
    below_int64_max = mantissa < 0 or (power <= 19 and mantissa * 10**power < INT64_MAX)
    if below_int64_max and shift < 19:
        unscaled = _wrap64_scaled(mantissa, power)  # big.Int.Int64(): the low 64 bits
        quotient = div(unscaled, 10**shift)
        return wrap64(quotient + 1) if unscaled != quotient * 10**shift else quotient
    if power >= shift:
        return _wrap64_scaled(mantissa, power - shift)  # divides exactly
    quotient, remainder = divmod(mantissa * 10**power, _pow10(shift))  # floor, as big.Int.DivMod
    return wrap64(quotient + 1 if remainder else quotient)


def _int64_add(a: int, a_scale: int, b: int, b_scale: int) -> tuple[int, int] | None:
    """Upstream ``int64Amount.Add``: the sum at the smaller scale, or None if it leaves int64."""
    if b == 0:
        return a, a_scale
    if a == 0:
        return b, b_scale
    if a_scale > b_scale:
        a, a_scale, b, b_scale = b, b_scale, a, a_scale
    grow = b_scale - a_scale
    if grow > _INT64_DIGITS:
        return None
    scaled = b * 10**grow
    total = a + scaled
    if not (_fits_int64(scaled) and _fits_int64(total)):
        return None
    return total, a_scale


def _decimal_combine(left: Quantity, right: Quantity, fmt: Format, *, negate_other: bool) -> Quantity:
    left_unscaled, left_scale = left._as_decimal()
    right_unscaled, right_scale = right._as_decimal()
    if negate_other:
        right_unscaled = -right_unscaled
    scale = max(left_scale, right_scale)
    total = left_unscaled * _pow10(scale - left_scale) + right_unscaled * _pow10(scale - right_scale)
    return Quantity(total, -scale, fmt, scale)


# --- parsing -------------------------------------------------------------------------------------


def _interpret_suffix(text: str, suffix: str) -> tuple[int, int, Format]:
    known = _SUFFIXES.get(suffix)
    if known is not None:
        return known
    match = _EXPONENT_SUFFIX.fullmatch(suffix)
    if match is None:
        raise QuantityError(text, _ERR_SUFFIX)
    sign, digits = match.groups()
    digits = digits.lstrip("0") or "0"
    if len(digits) > 19:  # outside int64: strconv.ParseInt fails
        raise QuantityError(text, _ERR_SUFFIX)
    exponent = -int(digits) if sign == "-" else int(digits)
    if not _fits_int64(exponent):
        raise QuantityError(text, _ERR_SUFFIX)
    return 10, wrap32(exponent), Format.DECIMAL_EXPONENT


def _parse(text: str) -> Quantity:
    if not text:
        raise QuantityError(text, _ERR_FORMAT)
    if text == "0":
        return Quantity(0, 0, Format.DECIMAL_SI, None, "0")
    match = _SCAN.fullmatch(text)
    if match is None:
        raise QuantityError(text, _ERR_FORMAT)
    sign, digits, fraction, suffix = match.groups()
    fraction = fraction or ""
    negative = sign == "-"
    whole = digits.lstrip("0") or "0"
    base, exponent, fmt = _interpret_suffix(text, suffix)

    # Fast path: few enough digits for an int64 at a scale of at least nano.
    if base == 2:
        precision = 15 - len(whole) - exponent * 3 // 10 - 1 if not fraction else -1
        scale = 0
    else:
        precision = _INT64_DIGITS - len(whole) - len(fraction)
        scale = wrap32(exponent - len(fraction))
    if precision >= 0 and scale >= _NANO:
        shifted = whole + fraction
        amount = int(shifted)
        if base == 2:
            reusable = amount & 0x07 != 0
            amount <<= exponent
        else:
            reusable = scale % 3 == 0 and not shifted.endswith("000") and shifted[0] != "0"
        return Quantity(-amount if negative else amount, scale, fmt, None, text if reusable else None)

    # Big-decimal path: exact, then rounded up to nano, BinarySI capped at the int64 maximum.
    if not digits and not fraction:
        raise QuantityError(text, _ERR_NUMERIC)
    unscaled = _digits_to_int(digits + fraction)
    dec_scale = len(fraction)
    if base == 10:
        dec_scale = wrap32(dec_scale + wrap32(-exponent))
    else:
        unscaled <<= exponent
    if unscaled == 0:
        return Quantity(0, -dec_scale, fmt, dec_scale)
    if dec_scale <= -_NANO:
        mantissa, exp10 = unscaled, -dec_scale
    else:
        drop = dec_scale + _NANO
        if drop > unscaled.bit_length():  # unscaled < 10**drop: rounds up to one nano
            mantissa = 1
        else:
            quotient, remainder = divmod(unscaled, 10**drop)
            mantissa = quotient + 1 if remainder else quotient
        exp10 = _NANO
    stored_scale = -_NANO
    if fmt is Format.BINARY_SI:
        if mantissa > INT64_MAX * 10**-exp10:
            mantissa, exp10, stored_scale = INT64_MAX, 0, 0
        elif mantissa < 10**-exp10:
            fmt = Format.DECIMAL_SI  # 0 < value < 1 has no binary spelling
    return Quantity(-mantissa if negative else mantissa, exp10, fmt, stored_scale)


_ZERO = Quantity(0, 0, Format.DECIMAL_SI)


@functools.lru_cache(maxsize=16384)
def parse_quantity(text: str) -> Quantity:
    """Parse ``text`` exactly as upstream ``resource.ParseQuantity`` (cached; results are immutable).

    Raises :class:`QuantityError` naming ``text`` for anything upstream rejects, including
    surrounding whitespace (see :func:`parse_json_quantity` for the API server's JSON decoding).
    """
    return _parse(text)


def parse_json_quantity(value: object) -> Quantity:
    """Parse a decoded JSON value as the API server's ``Quantity.UnmarshalJSON`` does.

    A string has surrounding whitespace trimmed; a bare number is parsed from its text; ``null`` is
    zero. Anything else is malformed (:class:`QuantityError` with upstream's format message).
    """
    if value is None:
        return _ZERO
    if isinstance(value, str):
        return parse_quantity(value.strip(_GO_SPACE))
    if isinstance(value, int) and not isinstance(value, bool):
        return parse_quantity(str(value))
    if isinstance(value, float):
        return parse_quantity(repr(value))
    raise QuantityError(repr(value), _ERR_FORMAT)


def canonical_resource_list(values: object) -> object:
    """A ResourceList (``{"cpu": "0.5"}``) as the API server writes it back (``{"cpu": "500m"}``).

    Values that do not parse are left as they are (the caller reports them); a non-mapping is
    returned unchanged.
    """
    if not isinstance(values, dict):
        return values
    out: dict[object, object] = {}
    for name, raw in values.items():
        try:
            out[name] = str(parse_json_quantity(raw))
        except QuantityError:
            out[name] = raw
    return out


@functools.lru_cache(maxsize=16384)
def milli_value(text: str) -> int:
    """``MilliValue()`` of a quantity string (cpu in millicores), cached by string."""
    return parse_quantity(text).milli_value()


@functools.lru_cache(maxsize=16384)
def value(text: str) -> int:
    """``Value()`` of a quantity string (memory, storage, pods, extended resources), cached."""
    return parse_quantity(text).value()


@functools.lru_cache(maxsize=16384)
def canonical(text: str) -> str:
    """The string the API server stores for ``text``: upstream ``String()`` of the parsed value."""
    return str(parse_quantity(text))


def new_quantity(amount: int, fmt: Format = Format.DECIMAL_SI) -> Quantity:
    """Upstream ``NewQuantity``: an int64 ``amount`` in the given format."""
    return _new(amount, 0, fmt)


def new_milli_quantity(amount: int, fmt: Format = Format.DECIMAL_SI) -> Quantity:
    """Upstream ``NewMilliQuantity``: ``amount / 1000``."""
    return _new(amount, _MILLI, fmt)


def new_scaled_quantity(amount: int, scale: int) -> Quantity:
    """Upstream ``NewScaledQuantity``: ``amount * 10**scale`` in DecimalSI."""
    return _new(amount, scale, Format.DECIMAL_SI)


def _new(amount: int, scale: int, fmt: Format) -> Quantity:
    if not _fits_int64(amount):
        raise ValueError(f"quantity amount {amount} does not fit an int64")
    return Quantity(amount, scale, fmt)
