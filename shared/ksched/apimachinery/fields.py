"""Field selectors as apimachinery's ``fields.ParseSelector`` reads them (1.36.2).

Terms are ``field=value``, ``field==value`` or ``field!=value`` joined by commas; ``\\``, ``,`` and
``=`` in a value are escaped with a backslash. Which fields a resource supports is the caller's check.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

_OPERATORS = ("!=", "==", "=")


class FieldSelectorError(ValueError):
    """A selector upstream refuses to parse; ``str()`` is upstream's message."""


@dataclass(frozen=True, slots=True)
class FieldTerm:
    """One term: ``field`` equal (or not) to ``value``."""

    field: str
    equal: bool
    value: str


@dataclass(frozen=True, slots=True)
class FieldSelector:
    """Terms ANDed; a field missing from the object reads as ``""``."""

    terms: tuple[FieldTerm, ...]

    @property
    def empty(self) -> bool:
        return not self.terms

    def matches(self, fields: Mapping[str, str]) -> bool:
        return all((fields.get(t.field, "") == t.value) == t.equal for t in self.terms)


def _split_terms(text: str) -> list[str]:
    terms: list[str] = []
    start, escaped = 0, False
    for i, ch in enumerate(text):
        if escaped:
            escaped = False
        elif ch == "\\":
            escaped = True
        elif ch == ",":
            terms.append(text[start:i])
            start = i + 1
    terms.append(text[start:])
    return terms


def _split_term(term: str) -> tuple[str, str, str] | None:
    escaped = False
    for i, ch in enumerate(term):
        if escaped:
            escaped = False
            continue
        if ch == "\\":
            escaped = True
            continue
        for op in _OPERATORS:
            if term.startswith(op, i):
                return term[:i], op, term[i + len(op) :]
    return None


def _unescape(value: str) -> str:
    out: list[str] = []
    escaped = False
    for ch in value:
        if escaped:
            if ch not in "\\,=":
                raise FieldSelectorError(f"invalid field selector: invalid escape sequence: \\{ch}")
            out.append(ch)
            escaped = False
        elif ch == "\\":
            escaped = True
        elif ch in ",=":
            raise FieldSelectorError(f"invalid field selector: unescaped {ch} in value")
        else:
            out.append(ch)
    if escaped:
        raise FieldSelectorError("invalid field selector: invalid escape sequence: \\")
    return "".join(out)


def parse(text: str) -> FieldSelector:
    """``fields.ParseSelector``: terms in sorted order, empty terms skipped."""
    terms: list[FieldTerm] = []
    for part in sorted(_split_terms(text)):
        if not part:
            continue
        split = _split_term(part)
        if split is None:
            raise FieldSelectorError(f"invalid selector: '{text}'; can't understand '{part}'")
        lhs, op, rhs = split
        terms.append(FieldTerm(lhs, op != "!=", _unescape(rhs)))
    return FieldSelector(tuple(terms))
