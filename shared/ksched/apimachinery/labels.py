"""Label requirements and selectors, as apimachinery's ``labels`` and ``metav1`` helpers (1.36.2).

* :func:`new_requirement` is ``labels.NewRequirement``: the key must be a valid label key, every
  value a valid label value, and the value count must suit the operator; errors read as upstream's.
* :class:`Selector` ANDs requirements; ``Selector.nothing()`` matches no labels, an empty selector
  all of them.
* :func:`label_selector_as_selector` is ``metav1.LabelSelectorAsSelector`` (None selects nothing,
  ``{}`` everything, anything invalid raises :class:`SelectorError`).
* :func:`parse` is ``labels.Parse``, the ``labelSelector`` query grammar (``app in (web,db),!gone``).
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from ksched.api.meta import LabelSelector
from ksched.apimachinery import field
from ksched.apimachinery.strconv import go_quote, parse_go_int64
from ksched.apimachinery.validation import label_key_errors, label_value_errors

Labels = Mapping[str, str]
Predicate = Callable[[Labels], bool]


class Operator(enum.StrEnum):
    """``selection.Operator``."""

    IN = "in"
    NOT_IN = "notin"
    EQUALS = "="
    DOUBLE_EQUALS = "=="
    NOT_EQUALS = "!="
    EXISTS = "exists"
    DOES_NOT_EXIST = "!"
    GREATER_THAN = "gt"
    LESS_THAN = "lt"


_SET_OPERATORS = frozenset({Operator.IN, Operator.NOT_IN})
_EXACT_OPERATORS = frozenset({Operator.EQUALS, Operator.DOUBLE_EQUALS, Operator.NOT_EQUALS})
_PRESENCE_OPERATORS = frozenset({Operator.EXISTS, Operator.DOES_NOT_EXIST})
_NUMERIC_OPERATORS = frozenset({Operator.GREATER_THAN, Operator.LESS_THAN})
_SUPPORTED = ("in", "notin", "=", "==", "!=", "gt", "lt", "exists", "!")

#: metav1.LabelSelectorOperator -> selection.Operator
LABEL_SELECTOR_OPERATORS = {
    "In": Operator.IN,
    "NotIn": Operator.NOT_IN,
    "Exists": Operator.EXISTS,
    "DoesNotExist": Operator.DOES_NOT_EXIST,
}


class SelectorError(ValueError):
    """A selector upstream refuses to build; ``str()`` is upstream's error text."""


@dataclass(frozen=True, slots=True)
class Requirement:
    """``labels.Requirement``: a key, an operator and its values (hashable, compared by value)."""

    key: str
    operator: Operator
    values: tuple[str, ...]

    def matches(self, labels: Labels) -> bool:
        """``Requirement.Matches``."""
        return self.predicate()(labels)

    def predicate(self) -> Predicate:
        """A function of the labels that answers :meth:`matches` (the fast form selectors keep)."""
        key, op = self.key, self.operator
        if op in _SET_OPERATORS or op in _EXACT_OPERATORS:
            wanted = frozenset(self.values)
            if op in (Operator.NOT_IN, Operator.NOT_EQUALS):
                return lambda labels: labels.get(key) not in wanted if key in labels else True
            if len(wanted) == 1:
                (only,) = wanted
                return lambda labels: labels.get(key) == only
            return lambda labels: key in labels and labels[key] in wanted
        if op is Operator.EXISTS:
            return lambda labels: key in labels
        if op is Operator.DOES_NOT_EXIST:
            return lambda labels: key not in labels
        bound = parse_go_int64(self.values[0]) if len(self.values) == 1 else None
        if bound is None:
            return lambda labels: False
        greater = op is Operator.GREATER_THAN

        def compare(labels: Labels) -> bool:
            raw = labels.get(key)
            number = parse_go_int64(raw) if raw is not None else None
            if number is None:
                return False
            return number > bound if greater else number < bound

        return compare


def _count_problem(op: str, count: int) -> str:
    """Why ``count`` values do not suit ``op`` ("" when they do)."""
    if op in _SET_OPERATORS and count == 0:
        return "for 'in', 'notin' operators, values set can't be empty"
    if op in _EXACT_OPERATORS and count != 1:
        return "exact-match compatibility requires one single value"
    if op in _PRESENCE_OPERATORS and count != 0:
        return "values set must be empty for exists and does not exist"
    if op in _NUMERIC_OPERATORS and count != 1:
        return "for 'Gt', 'Lt' operators, exactly one value is required"
    return ""


def requirement_errors(key: str, op: str, values: Sequence[str], path: str = "") -> list[field.FieldError]:
    """The errors of ``labels.NewRequirement(key, op, values)`` at ``path``, in upstream's order."""
    errs: list[field.FieldError] = []
    key_errs = label_key_errors(key)
    if key_errs:
        errs.append(field.invalid(field.child(path, "key"), key, "; ".join(key_errs)))
    values_path = field.child(path, "values")
    if op not in _SUPPORTED:
        errs.append(field.not_supported(field.child(path, "operator"), op, _SUPPORTED))
    elif problem := _count_problem(op, len(values)):
        errs.append(field.invalid(values_path, list(values), problem))
    if op in _NUMERIC_OPERATORS:
        for i, raw in enumerate(values):
            if parse_go_int64(raw) is None:
                detail = "for 'Gt', 'Lt' operators, the value must be an integer"
                errs.append(field.invalid(field.index(values_path, i), raw, detail))
    for i, raw in enumerate(values):
        value_errs = label_value_errors(raw)
        if value_errs:
            errs.append(
                field.invalid(field.index(field.index(values_path, i), key), raw, "; ".join(value_errs))
            )
    return errs


def new_requirement(key: str, op: str, values: Sequence[str], path: str = "") -> Requirement:
    """``labels.NewRequirement``; raises :class:`SelectorError` with the aggregated errors."""
    errs = requirement_errors(key, op, values, path)
    if errs:
        raise SelectorError(field.aggregate_message(errs))
    return Requirement(key, Operator(op), tuple(values))


class Selector:
    """``labels.Selector``: requirements ANDed; ``never`` for ``labels.Nothing()``."""

    __slots__ = ("_predicates", "never", "requirements")

    def __init__(self, requirements: Iterable[Requirement] = (), *, never: bool = False) -> None:
        self.requirements: tuple[Requirement, ...] = tuple(requirements)
        self.never = never
        self._predicates = tuple(r.predicate() for r in self.requirements)

    @classmethod
    def nothing(cls) -> Selector:
        return cls(never=True)

    @classmethod
    def everything(cls) -> Selector:
        return cls()

    @classmethod
    def from_set(cls, labels: Labels) -> Selector:
        """``labels.SelectorFromSet``: equality on every key, unvalidated; ``{}`` selects everything."""
        return cls(Requirement(k, Operator.EQUALS, (v,)) for k, v in sorted(labels.items()))

    @property
    def empty(self) -> bool:
        """``Selector.Empty()``: no requirements (``nothing()`` is not empty)."""
        return not self.requirements and not self.never

    def add(self, *requirements: Requirement) -> Selector:
        """``Selector.Add``: a new selector with more requirements (nothing stays nothing)."""
        if self.never or not requirements:
            return self
        return Selector((*self.requirements, *requirements))

    def matches(self, labels: Labels) -> bool:
        if self.never:
            return False
        return all(p(labels) for p in self._predicates)

    def __repr__(self) -> str:
        if self.never:
            return "Selector(<nothing>)"
        return f"Selector({list(self.requirements)!r})"


def label_selector_as_selector(selector: LabelSelector | None) -> Selector:
    """``metav1.LabelSelectorAsSelector``: the first invalid requirement raises :class:`SelectorError`."""
    if selector is None:
        return Selector.nothing()
    if not selector.match_labels and not selector.match_expressions:
        return Selector.everything()
    requirements = [
        new_requirement(k, Operator.EQUALS, (v,)) for k, v in sorted(selector.match_labels.items())
    ]
    for expr in selector.match_expressions:
        op = LABEL_SELECTOR_OPERATORS.get(expr.operator)
        if op is None:
            raise SelectorError(f"{go_quote(expr.operator)} is not a valid label selector operator")
        requirements.append(new_requirement(expr.key, op, expr.values))
    return Selector(requirements)


# --- the query grammar (labels.Parse) -----------------------------------------------------------------

_SPECIAL = frozenset("=!(),><")
_WHITESPACE = frozenset(" \t\r\n")
_TOKENS = frozenset({")", ",", "!", "==", "=", ">", "in", "<", "!=", "notin", "("})
_BINARY = {"in": Operator.IN, "notin": Operator.NOT_IN, "=": Operator.EQUALS, "==": Operator.DOUBLE_EQUALS}
_BINARY |= {"!=": Operator.NOT_EQUALS, ">": Operator.GREATER_THAN, "<": Operator.LESS_THAN}
_IDENT = "IDENT"
_END = "END"
_ERROR = "ERROR"


def _lex(text: str) -> list[tuple[str, str]]:
    items: list[tuple[str, str]] = []
    pos, n = 0, len(text)
    while True:
        while pos < n and text[pos] in _WHITESPACE:
            pos += 1
        if pos >= n:
            items.append((_END, ""))
            return items
        if text[pos] in _SPECIAL:
            buf = ""
            last: tuple[str, str] | None = None
            while pos < n and text[pos] in _SPECIAL:
                candidate = buf + text[pos]
                if candidate in _TOKENS:
                    buf = candidate
                    last = (candidate, candidate)
                    pos += 1
                elif last is not None:
                    break
                else:
                    buf = candidate
                    pos += 1
            items.append(last if last else (_ERROR, f"error expected: keyword found '{buf}'"))
        else:
            start = pos
            while pos < n and text[pos] not in _SPECIAL and text[pos] not in _WHITESPACE:
                pos += 1
            word = text[start:pos]
            items.append((word, word) if word in ("in", "notin") else (_IDENT, word))


class _Parser:
    def __init__(self, text: str) -> None:
        self.items = _lex(text)
        self.pos = 0

    def _look(self, values: bool) -> tuple[str, str]:
        tok, lit = self.items[self.pos]
        if values and tok in ("in", "notin"):
            tok = _IDENT
        return tok, lit

    def _take(self, values: bool) -> tuple[str, str]:
        item = self._look(values)
        self.pos += 1
        return item

    def parse(self) -> list[Requirement]:
        reqs: list[Requirement] = []
        while True:
            tok, lit = self._look(True)
            if tok == _END:
                return reqs
            if tok not in (_IDENT, "!"):
                raise SelectorError(f"found '{lit}', expected: !, identifier, or 'end of string'")
            try:
                reqs.append(self._requirement())
            except SelectorError as exc:
                raise SelectorError(f"unable to parse requirement: {exc}") from None
            tok, lit = self._take(True)
            if tok == _END:
                return reqs
            if tok != ",":
                raise SelectorError(f"found '{lit}', expected: ',' or 'end of string'")
            tok, lit = self._look(True)
            if tok not in (_IDENT, "!"):
                raise SelectorError(f"found '{lit}', expected: identifier after ','")

    def _requirement(self) -> Requirement:
        absent = False
        tok, lit = self._take(True)
        if tok == "!":
            absent = True
            tok, lit = self._take(True)
        if tok != _IDENT:
            raise SelectorError(f"found '{lit}', expected: identifier")
        key = lit
        key_errs = label_key_errors(key)
        if key_errs:  # upstream validates the key at a nil path, which prints as "<nil>"
            raise SelectorError(str(field.invalid("<nil>", key, "; ".join(key_errs))))
        if absent or self._look(True)[0] in (_END, ","):
            return new_requirement(key, Operator.DOES_NOT_EXIST if absent else Operator.EXISTS, ())
        tok, lit = self._take(False)
        op = _BINARY.get(tok)
        if op is None:
            raise SelectorError(f"found '{lit}', expected: in, notin, =, ==, !=, gt, lt")
        values = self._set_values() if op in _SET_OPERATORS else self._exact_value()
        return new_requirement(key, op, sorted(set(values)))

    def _set_values(self) -> list[str]:
        tok, lit = self._take(True)
        if tok != "(":
            raise SelectorError(f"found '{lit}' expected: '('")
        tok, lit = self._look(True)
        if tok == ")":
            self._take(True)
            return [""]
        if tok not in (_IDENT, ","):
            raise SelectorError(f"found '{lit}', expected: ',', ')' or identifier")
        values = self._identifiers()
        if self._take(True)[0] != ")":
            raise SelectorError(f"found '{lit}', expected: ')'")
        return values

    def _identifiers(self) -> list[str]:
        values: list[str] = []
        while True:
            tok, lit = self._take(True)
            if tok == _IDENT:
                values.append(lit)
                tok2, lit2 = self._look(True)
                if tok2 == ")":
                    return values
                if tok2 != ",":
                    raise SelectorError(f"found '{lit2}', expected: ',' or ')'")
            elif tok == ",":
                if not values:
                    values.append("")  # "(,"
                tok2, _ = self._look(True)
                if tok2 == ")":
                    values.append("")  # ",)"
                    return values
                if tok2 == ",":
                    values.append("")  # ",,"
            else:
                raise SelectorError(f"found '{lit}', expected: ',', or identifier")

    def _exact_value(self) -> list[str]:
        tok, _ = self._look(True)
        if tok in (_END, ","):
            return [""]
        tok, lit = self._take(True)
        if tok == _IDENT:
            return [lit]
        raise SelectorError(f"found '{lit}', expected: identifier")


def parse(text: str) -> Selector:
    """``labels.Parse``: raises :class:`SelectorError` with upstream's message."""
    return Selector(sorted(_Parser(text).parse(), key=lambda r: r.key))
