"""CEL device selectors (upstream ``dynamic-resource-allocation/cel``) on ``cel-expr-python``, the
Python binding of Google's CEL C++ implementation (parser, type checker, runtime, macros).

The ``device`` variable is a map: ``driver``, ``allowMultipleAllocations``, ``attributes`` and
``capacity`` (both ``{domain: {id: value}}``, unqualified names under the driver's domain). The
Kubernetes ``quantity()`` and ``semver()`` types are tagged maps (``{"__quantity__": "0.5"}``)
with their member functions (``compareTo``, ``isGreaterThan``, ``isLessThan``, ``add``, ``sub``,
``asInteger``, ``major`` ...) written here; ``cel.bind`` and the strings extension are loaded. A
domain that an expression indexes with a string literal but the device lacks reads as an empty
map, as upstream's map with a default does. Gaps against upstream are listed in docs/dra.md.

Each expression is compiled once (:class:`CelCache`), and a compiled selector remembers its result
per device object, so a device is evaluated once per expression while its ResourceSlice is unchanged.
"""

from __future__ import annotations

import functools
import re
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from cel_expr_python import cel
from cel_expr_python.ext import ext_bindings, ext_strings

from ksched.api.resource import Device, DeviceAttribute, DeviceCapacity
from ksched.apimachinery.quantity import Quantity, QuantityError, parse_quantity
from ksched.plugins.dynamicresources import semver

QUANTITY_TAG = "__quantity__"
SEMVER_TAG = "__semver__"
#: upstream caches the 10 most recent expressions; selectors here are few and cheap to keep
CACHE_SIZE = 256
#: results remembered per compiled expression before the memory is reset
MAX_REMEMBERED_DEVICES = 200_000

_T = cel.Type
_MAP = _T.Map(_T.STRING, _T.DYN)
_DOMAIN_LITERAL = re.compile(r"""\.(?:attributes|capacity)\s*\[\s*(?:"([^"\\]*)"|'([^'\\]*)')\s*\]""")
_DYN_RANGE = "expression of type 'dyn' cannot be the range of a comprehension"
_STATUS_PREFIX = re.compile(r"^[A-Z_]+: ")


class CelRuntimeError(RuntimeError):
    """Evaluating a selector failed (a missing key, a type mismatch, an attribute CEL cannot hold)."""


# --- quantity and semver values -------------------------------------------------------------------


def _decimal_text(value: Fraction) -> str:
    """The exact value as a plain decimal (quantities are finite decimals)."""
    sign = "-" if value < 0 else ""
    value = abs(value)
    whole, rest = divmod(value.numerator, value.denominator)
    digits = ""
    while rest:
        rest *= 10
        digit, rest = divmod(rest, value.denominator)
        digits += str(digit)
    return f"{sign}{whole}.{digits}" if digits else f"{sign}{whole}"


def quantity_value(q: Quantity) -> dict[str, str]:
    """A quantity as CEL sees it: equal values are equal maps."""
    return {QUANTITY_TAG: _decimal_text(q.as_fraction())}


@functools.lru_cache(maxsize=4096)
def _quantity_text(text: str) -> dict[str, str]:
    return quantity_value(parse_quantity(text))


@functools.lru_cache(maxsize=4096)
def _fraction(text: str) -> Fraction:
    return Fraction(text)


def _value_of(value: Any) -> Fraction:
    """The exact value of a CEL quantity (CelRuntimeError for anything else)."""
    if isinstance(value, dict) and QUANTITY_TAG in value:
        return _fraction(str(value[QUANTITY_TAG]))
    raise CelRuntimeError("no such overload")


def _parse_quantity(text: str) -> dict[str, str]:
    try:
        return _quantity_text(text)
    except QuantityError as exc:
        raise CelRuntimeError(str(exc)) from None


def _is_quantity(text: str) -> bool:
    try:
        _quantity_text(text)
    except QuantityError:
        return False
    return True


@functools.lru_cache(maxsize=1024)
def _semver_parse(text: str) -> semver.Version:
    return semver.parse(text)


def _semver_of(value: Any) -> semver.Version:
    if isinstance(value, dict) and SEMVER_TAG in value:
        return _semver_parse(str(value[SEMVER_TAG]))
    raise CelRuntimeError("no such overload")


def _parse_semver(text: str) -> dict[str, str]:
    try:
        return {SEMVER_TAG: str(_semver_parse(text))}
    except ValueError as exc:
        raise CelRuntimeError(str(exc)) from None


def _compare(a: Any, b: Any) -> int:
    """``compareTo`` of two quantities or two semantic versions."""
    if isinstance(a, dict) and SEMVER_TAG in a:
        return semver.compare(_semver_of(a), _semver_of(b))
    x, y = _value_of(a), _value_of(b)
    return (x > y) - (x < y)


def _operand(value: Any) -> Fraction:
    return Fraction(value) if isinstance(value, int) else _value_of(value)


def _as_integer(value: Any) -> int:
    whole = _value_of(value)
    if whole.denominator != 1 or not -(2**63) <= whole.numerator < 2**63:
        raise CelRuntimeError("cannot convert value to integer")
    return whole.numerator


def _tagged(value: Fraction) -> dict[str, str]:
    return {QUANTITY_TAG: _decimal_text(value)}


def _functions() -> tuple[list[cel.FunctionDecl], dict[str, Callable[..., Any]]]:
    """The Kubernetes quantity and semver libraries (the parts selectors use)."""
    members: list[tuple[str, Any, Callable[..., Any], tuple[Any, ...]]] = [
        ("compareTo", _T.INT, _compare, (_MAP,)),
        ("isGreaterThan", _T.BOOL, lambda a, b: _compare(a, b) > 0, (_MAP,)),
        ("isLessThan", _T.BOOL, lambda a, b: _compare(a, b) < 0, (_MAP,)),
        ("add", _MAP, lambda a, b: _tagged(_value_of(a) + _operand(b)), (_MAP,)),
        ("add", _MAP, lambda a, b: _tagged(_value_of(a) + _operand(b)), (_T.INT,)),
        ("sub", _MAP, lambda a, b: _tagged(_value_of(a) - _operand(b)), (_MAP,)),
        ("sub", _MAP, lambda a, b: _tagged(_value_of(a) - _operand(b)), (_T.INT,)),
        ("sign", _T.INT, lambda a: (_value_of(a) > 0) - (_value_of(a) < 0), ()),
        ("isInteger", _T.BOOL, lambda a: _value_of(a).denominator == 1, ()),
        ("asInteger", _T.INT, _as_integer, ()),
        ("asApproximateFloat", _T.DOUBLE, lambda a: float(_value_of(a)), ()),
        ("major", _T.INT, lambda a: _semver_of(a).major, ()),
        ("minor", _T.INT, lambda a: _semver_of(a).minor, ()),
        ("patch", _T.INT, lambda a: _semver_of(a).patch, ()),
    ]
    overloads: dict[str, list[cel.Overload]] = {}
    impls: dict[str, Callable[..., Any]] = {}
    for name, ret, impl, params in members:
        overload_id = f"{name}_map_{'_'.join(p.name().lower() for p in params)}"
        overload = cel.Overload(overload_id, return_type=ret, parameters=[_MAP, *params], is_member=True)
        overloads.setdefault(name, []).append(overload)
        impls[overload_id] = impl
    decls = [cel.FunctionDecl(name, group) for name, group in overloads.items()]
    globals_: list[tuple[str, Any, Callable[..., Any]]] = [
        ("quantity", _MAP, _parse_quantity),
        ("isQuantity", _T.BOOL, _is_quantity),
        ("semver", _MAP, _parse_semver),
        ("isSemver", _T.BOOL, semver.is_valid),
    ]
    for name, ret, impl in globals_:
        overload_id = f"{name}_string"
        decls.append(
            cel.FunctionDecl(name, [cel.Overload(overload_id, return_type=ret, parameters=[_T.STRING])])
        )
        impls[overload_id] = impl
    return decls, impls


def _new_env() -> cel.Env:
    decls, impls = _functions()
    return cel.NewEnv(
        variables={"device": _MAP},
        extensions=[ext_bindings.ExtBindings(), ext_strings.ExtStrings()],
        functions=decls,
        function_impls=impls,
    )


@functools.cache
def environment() -> cel.Env:
    """The one CEL environment (built on first use)."""
    return _new_env()


# --- the device as CEL input ----------------------------------------------------------------------


def _qualified(name: str, driver: str) -> tuple[str, str]:
    """Upstream ``parseQualifiedName``: (domain, id), the driver's domain when there is none."""
    domain, sep, ident = name.partition("/")
    return (domain, ident) if sep else (driver, name)


def attribute_value(attr: DeviceAttribute) -> Any:
    """Upstream ``getAttributeValue`` with DRAListTypeAttributes off (the 1.36 default)."""
    if attr.int_value is not None:
        return attr.int_value
    if attr.bool_value is not None:
        return attr.bool_value
    if attr.string_value is not None:
        return attr.string_value
    if attr.version_value is not None:
        try:
            return {SEMVER_TAG: str(_semver_parse(attr.version_value))}
        except ValueError as exc:
            raise CelRuntimeError(f"parse semantic version: {exc}") from None
    raise CelRuntimeError("unsupported attribute value")


def device_input(
    driver: str,
    attributes: Mapping[str, DeviceAttribute],
    capacity: Mapping[str, DeviceCapacity],
    allow_multiple_allocations: bool | None = None,
) -> dict[str, Any]:
    """The ``device`` variable for a device of ``driver``."""
    attrs: dict[str, dict[str, Any]] = {}
    for name, attr in attributes.items():
        try:
            value = attribute_value(attr)
        except CelRuntimeError as exc:
            raise CelRuntimeError(f"attribute {name}: {exc}") from None
        domain, ident = _qualified(name, driver)
        attrs.setdefault(domain, {})[ident] = value
    caps: dict[str, dict[str, Any]] = {}
    for name, cap in capacity.items():
        domain, ident = _qualified(name, driver)
        caps.setdefault(domain, {})[ident] = _quantity_text(cap.value)
    return {
        "driver": driver,
        "allowMultipleAllocations": bool(allow_multiple_allocations),
        "attributes": attrs,
        "capacity": caps,
    }


# --- compiled selectors ---------------------------------------------------------------------------


def _error_text(raw: str) -> str:
    """cel-cpp's status text without its code (``NOT_FOUND: ...``), closer to cel-go's wording."""
    text = _STATUS_PREFIX.sub("", raw.strip())
    text = re.sub(r"\s*\[[A-Z_]+\]$", "", text)
    missing = re.fullmatch(r'Key not found in map : "(.*)"', text)
    if missing:
        return f"no such key: {missing.group(1)}"
    if text.startswith("No matching overloads found"):
        return "no such overload"
    return text


class _DeviceInput:
    """The ``device`` variable of one device and its activation, built once per device object."""

    __slots__ = ("activation", "data", "device", "driver", "error")

    def __init__(self, device: Device, driver: str) -> None:
        self.device, self.driver = device, driver
        self.data: dict[str, Any] = {}
        self.error: str | None = None
        self.activation: Any = None
        try:
            self.data = device_input(
                driver, device.attributes, device.capacity, device.allow_multiple_allocations
            )
        except CelRuntimeError as exc:
            self.error = str(exc)
            return
        self.activation = environment().Activation({"device": self.data})


_INPUTS: dict[int, _DeviceInput] = {}


def _input_of(device: Device, driver: str) -> _DeviceInput:
    known = _INPUTS.get(id(device))
    if known is not None and known.device is device and known.driver == driver:
        return known
    if len(_INPUTS) >= MAX_REMEMBERED_DEVICES:
        _INPUTS.clear()
    entry = _INPUTS[id(device)] = _DeviceInput(device, driver)
    return entry


@dataclass
class Selector:
    """One compiled expression; :attr:`error` is set (and nothing evaluates) when it does not compile."""

    expression: str
    error: str | None = None
    _program: cel.Expression | None = None
    _domains: frozenset[str] = frozenset()
    _results: dict[int, tuple[Device, bool | str]] = field(default_factory=dict)

    def matches_input(self, device: dict[str, Any], activation: Any = None) -> bool:
        """Evaluate on a ``device`` variable built by :func:`device_input` (CelRuntimeError on failure);
        ``activation`` is that variable's prepared activation, if the caller has one."""
        if self._program is None:
            raise CelRuntimeError(self.error or "not compiled")
        for key in ("attributes", "capacity"):
            missing = self._domains.difference(device[key])
            if missing:
                device = {**device, key: {**device[key], **{domain: {} for domain in missing}}}
                activation = None
        if activation is None:
            activation = environment().Activation({"device": device})
        result = self._program.eval(activation)
        value = result.value()
        if result.type() == _T.ERROR:
            raise CelRuntimeError(_error_text(str(value)))
        if not isinstance(value, bool):
            name = result.type().name().lower()
            raise CelRuntimeError(f"CEL result of type {name} could not be converted to bool")
        return value

    def matches(self, device: Device, driver: str) -> bool:
        """Whether ``device`` of ``driver`` satisfies the selector; remembered per device object."""
        key = id(device)
        known = self._results.get(key)
        outcome: bool | str
        if known is not None and known[0] is device:
            outcome = known[1]
        else:
            prepared = _input_of(device, driver)
            if prepared.error is not None:
                outcome = prepared.error
            else:
                try:
                    outcome = self.matches_input(prepared.data, prepared.activation)
                except CelRuntimeError as exc:
                    outcome = str(exc)
            if len(self._results) >= MAX_REMEMBERED_DEVICES:
                self._results.clear()
            self._results[key] = (device, outcome)
        if isinstance(outcome, str):
            raise CelRuntimeError(outcome)
        return outcome


def compile_selector(expression: str) -> Selector:
    """Compile ``expression``; a syntax or type error is recorded as ``compilation failed: ...``."""
    try:
        program = environment().compile(expression)
    except RuntimeError as exc:
        text = _error_text(str(exc))
        if _DYN_RANGE not in text:
            return Selector(expression, error=f"compilation failed: {text}")
        # cel-cpp's checker refuses a macro over a ``dyn`` map (``attributes[d].exists(...)``),
        # which cel-go accepts: such an expression is checked when it runs instead
        program = environment().compile(expression, disable_check=True)
    out = program.return_type()
    if out not in (_T.BOOL, _T.DYN):
        name = out.name().lower()
        return Selector(expression, error=f"must evaluate to bool or the unknown type, not {name}")
    domains = frozenset(a or b for a, b in _DOMAIN_LITERAL.findall(expression))
    return Selector(expression, _program=program, _domains=domains)


class CelCache:
    """Compiled selectors by expression, least recently used dropped beyond ``size``."""

    def __init__(self, size: int = CACHE_SIZE) -> None:
        self.size = size
        self._entries: OrderedDict[str, Selector] = OrderedDict()

    def get_or_compile(self, expression: str) -> Selector:
        entry = self._entries.get(expression)
        if entry is not None:
            self._entries.move_to_end(expression)
            return entry
        entry = compile_selector(expression)
        self._entries[expression] = entry
        if len(self._entries) > self.size:
            self._entries.popitem(last=False)
        return entry

    def __len__(self) -> int:
        return len(self._entries)


# --- admission ------------------------------------------------------------------------------------

#: ``device`` fields whose type the API server's checker knows (``device`` is a ``dyn`` map here)
_TYPED_FIELDS = (
    (re.compile(r"\bdevice\s*\.\s*driver\b"), "device_driver__", _T.STRING),
    (re.compile(r"\bdevice\s*\.\s*allowMultipleAllocations\b"), "device_multi__", _T.BOOL),
)


@functools.cache
def _typed_environment() -> cel.Env:
    decls, impls = _functions()
    variables = {"device": _MAP, **{name: typ for _, name, typ in _TYPED_FIELDS}}
    return cel.NewEnv(
        variables=variables,
        extensions=[ext_bindings.ExtBindings(), ext_strings.ExtStrings()],
        functions=decls,
        function_impls=impls,
    )


def admission_error(expression: str) -> str | None:
    """What the API server says of a selector it refuses (``compilation failed: ...`` or ``must
    evaluate to bool ...``), None when it accepts it. Beyond :func:`compile_selector`, the result type
    of ``device.driver`` (string) and ``device.allowMultipleAllocations`` (bool) is known, so
    ``device.driver`` alone is refused at compile time as upstream does."""
    error = compile_selector(expression).error
    if error is not None:
        return error
    typed = expression
    for pattern, name, _ in _TYPED_FIELDS:
        typed = pattern.sub(name, typed)
    if typed == expression:
        return None
    try:
        out = _typed_environment().compile(typed).return_type()
    except RuntimeError:
        return None
    if out not in (_T.BOOL, _T.DYN):
        return f"must evaluate to bool or the unknown type, not {out.name().lower()}"
    return None
