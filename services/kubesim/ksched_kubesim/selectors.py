"""Label selectors (equality and set-based) and field selectors, parsed with the API server's rules.

The label grammar and its error texts follow apimachinery's lexer/parser (``app in (web,db),!gone``);
field selectors accept ``=``, ``==`` and ``!=`` terms joined by commas, with ``\\`` escapes.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from .errors import bad_request

# --- label selectors -------------------------------------------------------------------------

_SPECIAL = frozenset("=!(),><")
_WHITESPACE = frozenset(" \t\r\n")
_TOKENS = {")", ",", "!", "==", "=", ">", "in", "<", "!=", "notin", "("}
_IDENT = "IDENT"
_END = "END"
_ERROR = "ERROR"

_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
_NAME_PART = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")

NAME_PART_MSG = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
    "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)
LABEL_VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must "
    "start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used "
    "for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)
PREFIX_MSG = (
    "prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for "
    "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)


def qualified_name_errors(key: str) -> list[str]:
    """Problems with a label/annotation key (``[prefix/]name``), as apimachinery words them."""
    errs: list[str] = []
    prefix, slash, name = key.rpartition("/")
    if not slash:
        prefix, name = "", key
    elif key.count("/") > 1:
        return [
            "a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must "
            "start and end "
            "with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
            "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix "
            "and '/' (e.g. 'example.com/MyName')"
        ]
    if slash and not prefix:
        errs.append("prefix part must be non-empty")
    elif prefix:
        if len(prefix) > 253:
            errs.append("prefix part must be no more than 253 bytes")
        if not _DNS_SUBDOMAIN.match(prefix):
            errs.append(PREFIX_MSG)
    if not name:
        errs.append("name part must be non-empty")
    else:
        if len(name) > 63:
            errs.append("name part must be no more than 63 bytes")
        if not _NAME_PART.match(name):
            errs.append(NAME_PART_MSG)
    return errs


def label_value_errors(value: str) -> list[str]:
    errs: list[str] = []
    if len(value) > 63:
        errs.append("must be no more than 63 bytes")
    if not _LABEL_VALUE.match(value):
        errs.append(LABEL_VALUE_MSG)
    return errs


class SelectorSyntaxError(ValueError):
    pass


def _lex(text: str) -> list[tuple[str, str]]:
    items: list[tuple[str, str]] = []
    pos, n = 0, len(text)
    while True:
        while pos < n and text[pos] in _WHITESPACE:
            pos += 1
        if pos >= n:
            items.append((_END, ""))
            return items
        ch = text[pos]
        if ch in _SPECIAL:
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


@dataclass(frozen=True, slots=True)
class Requirement:
    key: str
    operator: str  # in, notin, =, ==, !=, exists, !, gt, lt
    values: tuple[str, ...]

    def matches(self, labels: Mapping[str, str]) -> bool:
        op = self.operator
        if op in ("in", "=", "=="):
            return self.key in labels and labels[self.key] in self.values
        if op in ("notin", "!="):
            return self.key not in labels or labels[self.key] not in self.values
        if op == "exists":
            return self.key in labels
        if op == "!":
            return self.key not in labels
        if self.key not in labels:
            return False
        try:
            actual = int(labels[self.key])
        except ValueError:
            return False
        bound = int(self.values[0])
        return actual > bound if op == "gt" else actual < bound


class _LabelParser:
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
            if tok in (_IDENT, "!"):
                try:
                    reqs.append(self._requirement())
                except SelectorSyntaxError as exc:
                    raise SelectorSyntaxError(f"unable to parse requirement: {exc}") from None
                tok, lit = self._take(True)
                if tok == _END:
                    return reqs
                if tok != ",":
                    raise SelectorSyntaxError(f"found '{lit}', expected: ',' or 'end of string'")
                tok2, lit2 = self._look(True)
                if tok2 not in (_IDENT, "!"):
                    raise SelectorSyntaxError(f"found '{lit2}', expected: identifier after ','")
            elif tok == _END:
                return reqs
            else:
                raise SelectorSyntaxError(f"found '{lit}', expected: !, identifier, or 'end of string'")

    def _requirement(self) -> Requirement:
        operator = ""
        tok, lit = self._take(True)
        if tok == "!":
            operator = "!"
            tok, lit = self._take(True)
        if tok != _IDENT:
            raise SelectorSyntaxError(f"found '{lit}', expected: identifier")
        key = lit
        key_errs = qualified_name_errors(key)
        if key_errs:
            raise SelectorSyntaxError(f'key: Invalid value: "{key}": {"; ".join(key_errs)}')
        nxt, _ = self._look(True)
        if operator == "!" or nxt in (_END, ","):
            return Requirement(key, operator or "exists", ())
        tok, lit = self._take(False)
        ops = {"in": "in", "notin": "notin", "=": "=", "==": "==", "!=": "!=", ">": "gt", "<": "lt"}
        if tok not in ops:
            raise SelectorSyntaxError(f"found '{lit}', expected: in, notin, =, ==, !=, gt, lt")
        op = ops[tok]
        values = self._set_values() if op in ("in", "notin") else self._exact_value()
        for v in values:
            errs = label_value_errors(v)
            if errs:
                raise SelectorSyntaxError(f'values[0][{key}]: Invalid value: "{v}": {"; ".join(errs)}')
        if op in ("gt", "lt"):
            try:
                int(values[0])
            except ValueError:
                raise SelectorSyntaxError(
                    f"values[0]: Invalid value: \"{values[0]}\": for 'Gt', 'Lt' operators, the value must be "
                    "an integer"
                ) from None
        return Requirement(key, op, tuple(sorted(set(values))))

    def _set_values(self) -> tuple[str, ...]:
        tok, lit = self._take(True)
        if tok != "(":
            raise SelectorSyntaxError(f"found '{lit}' expected: '('")
        tok, lit = self._look(True)
        if tok == ")":
            self._take(True)
            return ("",)
        if tok not in (_IDENT, ","):
            raise SelectorSyntaxError(f"found '{lit}', expected: ',', ')' or identifier")
        values: list[str] = []
        while True:
            tok, lit = self._take(True)
            if tok == _IDENT:
                values.append(lit)
                tok2, lit2 = self._look(True)
                if tok2 == ",":
                    continue
                if tok2 == ")":
                    break
                raise SelectorSyntaxError(f"found '{lit2}', expected: ',' or ')'")
            if tok == ",":
                if not values:
                    values.append("")
                tok2, _ = self._look(True)
                if tok2 == ")":
                    values.append("")
                    break
                if tok2 == ",":
                    values.append("")
                continue
            raise SelectorSyntaxError(f"found '{lit}', expected: ',', or identifier")
        tok, _ = self._take(True)
        if tok != ")":
            raise SelectorSyntaxError(f"found '{lit}', expected: ')'")
        return tuple(values)

    def _exact_value(self) -> tuple[str, ...]:
        tok, _ = self._look(True)
        if tok in (_END, ","):
            return ("",)
        tok, lit = self._take(True)
        if tok == _IDENT:
            return (lit,)
        raise SelectorSyntaxError(f"found '{lit}', expected: identifier")


class LabelSelector:
    """A parsed ``labelSelector`` query parameter."""

    __slots__ = ("requirements", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self.requirements = tuple(_LabelParser(text).parse())

    def matches(self, labels: Mapping[str, str]) -> bool:
        return all(r.matches(labels) for r in self.requirements)

    @property
    def empty(self) -> bool:
        return not self.requirements


def parse_label_selector(text: str | None) -> LabelSelector | None:
    """Parse a query-string label selector; ``None``/empty selects everything. Raises a 400 ApiError."""
    if not text:
        return None
    try:
        sel = LabelSelector(text)
    except SelectorSyntaxError as exc:
        raise bad_request(str(exc)) from None
    return None if sel.empty else sel


def match_label_selector_object(selector: Mapping[str, object] | None, labels: Mapping[str, str]) -> bool:
    """Match a ``metav1.LabelSelector`` object (matchLabels/matchExpressions); ``None`` matches nothing."""
    if selector is None:
        return False
    match_labels = selector.get("matchLabels") or {}
    assert isinstance(match_labels, Mapping)
    for k, v in match_labels.items():
        if labels.get(k) != v:
            return False
    expressions = selector.get("matchExpressions") or []
    assert isinstance(expressions, list)
    for expr in expressions:
        key, op, values = expr.get("key", ""), expr.get("operator", ""), expr.get("values") or []
        if op == "In" and not (key in labels and labels[key] in values):
            return False
        if op == "NotIn" and key in labels and labels[key] in values:
            return False
        if op == "Exists" and key not in labels:
            return False
        if op == "DoesNotExist" and key in labels:
            return False
    return True


# --- field selectors -------------------------------------------------------------------------

_FIELD_OPERATORS = ("!=", "==", "=")


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
        for op in _FIELD_OPERATORS:
            if term.startswith(op, i):
                return term[:i], op, term[i + len(op) :]
    return None


def _unescape(value: str) -> str:
    out: list[str] = []
    escaped = False
    for ch in value:
        if escaped:
            if ch not in "\\,=":
                raise SelectorSyntaxError(f"invalid field selector: invalid escape sequence: \\{ch}")
            out.append(ch)
            escaped = False
        elif ch == "\\":
            escaped = True
        elif ch in ",=":
            raise SelectorSyntaxError(f"invalid field selector: unescaped {ch} in value")
        else:
            out.append(ch)
    if escaped:
        raise SelectorSyntaxError("invalid field selector: invalid escape sequence: \\")
    return "".join(out)


@dataclass(frozen=True, slots=True)
class FieldTerm:
    field: str
    equal: bool
    value: str


class FieldSelector:
    """A parsed ``fieldSelector`` query parameter, checked against a resource's selectable fields."""

    __slots__ = ("terms", "text")

    def __init__(self, text: str, supported: tuple[str, ...]) -> None:
        self.text = text
        terms: list[FieldTerm] = []
        for part in sorted(_split_terms(text)):
            if part == "":
                continue
            split = _split_term(part)
            if split is None:
                raise SelectorSyntaxError(f"invalid selector: '{text}'; can't understand '{part}'")
            lhs, op, rhs = split
            value = _unescape(rhs)
            if lhs not in supported:
                raise SelectorSyntaxError(f"field label not supported: {lhs}")
            terms.append(FieldTerm(lhs, op != "!=", value))
        self.terms = tuple(terms)

    def matches(self, fields: Mapping[str, str]) -> bool:
        for t in self.terms:
            actual = fields.get(t.field, "")
            if (actual == t.value) != t.equal:
                return False
        return True


def parse_field_selector(text: str | None, supported: tuple[str, ...]) -> FieldSelector | None:
    if not text:
        return None
    try:
        sel = FieldSelector(text, supported)
    except SelectorSyntaxError as exc:
        raise bad_request(str(exc)) from None
    return sel if sel.terms else None
