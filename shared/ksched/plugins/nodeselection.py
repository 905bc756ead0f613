"""NodeSelector terms compiled with upstream's parse rules (component-helpers ``nodeaffinity``).

A term that fails to parse (bad label key or value, wrong value count, unknown operator) never
matches, and its errors are kept in Go's wording. Every matcher works on one node (labels and
name) and on rows of the snapshot through :class:`~ksched.plugins.nodeindex.NodeIndex`;
both paths give the same answer.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ksched.api.core import (
    Node,
    NodeSelector,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    PreferredSchedulingTerm,
)
from ksched.framework.interfaces import BoolArray, Int64Array, Rows
from ksched.plugins import fielderrors as fe
from ksched.plugins.nodeindex import NodeIndex

OBJECT_NAME_FIELD = "metadata.name"
SELECTOR_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")
FIELD_SELECTOR_OPERATORS = ("In", "NotIn")

Labels = Mapping[str, str]


class SelectorParseError(ValueError):
    """Parse errors of a selector, in upstream's wording (``str()`` is the aggregate message)."""

    def __init__(self, errors: Sequence[str]) -> None:
        self.errors = list(dict.fromkeys(errors))
        super().__init__(fe.aggregate_message(self.errors))


@dataclass(frozen=True, slots=True)
class LabelRequirement:
    """One parsed ``matchExpressions`` entry (``labels.Requirement``)."""

    key: str
    op: str
    values: frozenset[str]
    bound: int = 0

    def matches(self, labels: Labels) -> bool:
        value = labels.get(self.key)
        op = self.op
        if op == "In":
            return value is not None and value in self.values
        if op == "NotIn":
            return value is None or value not in self.values
        if op == "Exists":
            return value is not None
        if op == "DoesNotExist":
            return value is None
        if value is None:
            return False
        number = fe.parse_go_int64(value)
        if number is None:
            return False
        return number > self.bound if op == "Gt" else number < self.bound

    def match_rows(self, index: NodeIndex, rows: Rows) -> BoolArray:
        codes, code_of = index.label_codes(self.key)
        row_codes = codes[rows]
        op = self.op
        if op in ("In", "NotIn"):
            wanted = [code_of[v] for v in self.values if v in code_of]
            hit = np.isin(row_codes, wanted) if wanted else np.zeros(len(rows), dtype=np.bool_)
            return hit if op == "In" else ~hit
        if op == "Exists":
            return np.asarray(row_codes >= 0)
        if op == "DoesNotExist":
            return np.asarray(row_codes < 0)
        numbers, valid = index.label_ints(self.key)
        row_numbers = numbers[rows]
        cmp = row_numbers > self.bound if op == "Gt" else row_numbers < self.bound
        return np.asarray(valid[rows] & cmp)


@dataclass(frozen=True, slots=True)
class FieldRequirement:
    """One parsed ``matchFields`` entry: equality (In) or inequality (NotIn) on a node field."""

    key: str
    equal: bool
    value: str

    def matches(self, node_name: str) -> bool:
        actual = node_name if self.key == OBJECT_NAME_FIELD else ""
        return (actual == self.value) == self.equal

    def match_rows(self, index: NodeIndex, rows: Rows) -> BoolArray:
        if self.key != OBJECT_NAME_FIELD:
            same = self.value == ""
            return np.full(len(rows), same == self.equal, dtype=np.bool_)
        target = index.row_of(self.value)
        hit = rows == target if target is not None else np.zeros(len(rows), dtype=np.bool_)
        return np.asarray(hit if self.equal else ~hit)


def _parse_label_requirement(
    req: NodeSelectorRequirement, path: str
) -> tuple[LabelRequirement | None, list[str]]:
    """``labels.NewRequirement`` via ``nodeSelectorRequirementsAsSelector``."""
    op = req.operator
    if op not in SELECTOR_OPERATORS:
        return None, [fe.not_supported(fe.child(path, "operator"), op, SELECTOR_OPERATORS)]
    errs: list[str] = []
    key_errs = fe.label_key_errors(req.key)
    if key_errs:
        errs.append(fe.invalid(fe.child(path, "key"), fe.go_quote(req.key), "; ".join(key_errs)))
    values_path = fe.child(path, "values")
    values = req.values
    bound = 0
    if op in ("In", "NotIn"):
        if not values:
            errs.append(
                fe.invalid(
                    values_path,
                    fe.go_string_slice(values),
                    "for 'in', 'notin' operators, values set can't be empty",
                )
            )
    elif op in ("Exists", "DoesNotExist"):
        if values:
            errs.append(
                fe.invalid(
                    values_path,
                    fe.go_string_slice(values),
                    "values set must be empty for exists and does not exist",
                )
            )
    else:
        if len(values) != 1:
            errs.append(
                fe.invalid(
                    values_path,
                    fe.go_string_slice(values),
                    "for 'Gt', 'Lt' operators, exactly one value is required",
                )
            )
        for i, raw in enumerate(values):
            number = fe.parse_go_int64(raw)
            if number is None:
                errs.append(
                    fe.invalid(
                        fe.index(values_path, i),
                        fe.go_quote(raw),
                        "for 'Gt', 'Lt' operators, the value must be an integer",
                    )
                )
            else:
                bound = number
    for i, raw in enumerate(values):
        value_errs = fe.label_value_errors(raw)
        if value_errs:
            errs.append(
                fe.invalid(
                    fe.index(fe.index(values_path, i), req.key), fe.go_quote(raw), "; ".join(value_errs)
                )
            )
    if errs:
        return None, list(dict.fromkeys(errs))
    return LabelRequirement(req.key, op, frozenset(values), bound), []


def _parse_field_requirement(
    req: NodeSelectorRequirement, path: str
) -> tuple[FieldRequirement | None, list[str]]:
    """``nodeSelectorRequirementsAsFieldSelector`` for one entry."""
    if req.operator not in FIELD_SELECTOR_OPERATORS:
        return None, [fe.not_supported(fe.child(path, "operator"), req.operator, FIELD_SELECTOR_OPERATORS)]
    if len(req.values) != 1:
        return None, [
            fe.invalid(fe.child(path, "values"), fe.go_string_slice(req.values), "must have one element")
        ]
    return FieldRequirement(req.key, req.operator == "In", req.values[0]), []


class CompiledTerm:
    """One NodeSelectorTerm: ANDed label and field requirements; never matches if it failed to parse."""

    __slots__ = ("errors", "fields", "labels")

    def __init__(self, term: NodeSelectorTerm, path: str) -> None:
        self.labels: list[LabelRequirement] | None = None
        self.fields: list[FieldRequirement] | None = None
        self.errors: list[str] = []
        if term.match_expressions:
            parsed = [
                _parse_label_requirement(r, fe.index(fe.child(path, "matchExpressions"), i))
                for i, r in enumerate(term.match_expressions)
            ]
            errs = [e for _, es in parsed for e in es]
            if errs:
                self.errors.extend(errs)
            else:
                self.labels = [r for r, _ in parsed if r is not None]
        if term.match_fields:
            fparsed = [
                _parse_field_requirement(r, fe.index(fe.child(path, "matchFields"), i))
                for i, r in enumerate(term.match_fields)
            ]
            ferrs = [e for _, es in fparsed for e in es]
            if ferrs:
                self.errors.extend(ferrs)
            else:
                self.fields = [r for r, _ in fparsed if r is not None]

    def matches(self, labels: Labels, node_name: str) -> bool:
        if self.errors:
            return False
        if self.labels is not None and not all(r.matches(labels) for r in self.labels):
            return False
        if self.fields is not None and node_name and not all(r.matches(node_name) for r in self.fields):  # noqa: SIM103
            return False
        return True

    def match_rows(self, index: NodeIndex, rows: Rows) -> BoolArray:
        if self.errors:
            return np.zeros(len(rows), dtype=np.bool_)
        out = np.ones(len(rows), dtype=np.bool_)
        for req in self.labels or ():
            out &= req.match_rows(index, rows)
        for freq in self.fields or ():
            out &= freq.match_rows(index, rows)
        return out


def is_empty_term(term: NodeSelectorTerm) -> bool:
    return not term.match_expressions and not term.match_fields


class CompiledNodeSelector:
    """ORed terms (``LazyErrorNodeSelector``): empty terms are dropped, broken terms never match."""

    __slots__ = ("errors", "terms")

    def __init__(self, selector: NodeSelector, path: str = "") -> None:
        terms_path = fe.child(path, "nodeSelectorTerms")
        self.terms = [
            CompiledTerm(term, fe.index(terms_path, i))
            for i, term in enumerate(selector.node_selector_terms)
            if not is_empty_term(term)
        ]
        self.errors = [e for t in self.terms for e in t.errors]

    def matches(self, labels: Labels, node_name: str) -> bool:
        return any(t.matches(labels, node_name) for t in self.terms)

    def matches_node(self, node: Node) -> bool:
        return self.matches(node.metadata.labels, node.metadata.name)

    def matches_node_checked(self, node: Node) -> bool:
        """Like upstream ``LazyErrorNodeSelector.Match``: parse errors surface only when nothing matched."""
        if self.matches_node(node):
            return True
        if self.errors:
            raise SelectorParseError(self.errors)
        return False

    def match_rows(self, index: NodeIndex, rows: Rows) -> BoolArray:
        out = np.zeros(len(rows), dtype=np.bool_)
        for term in self.terms:
            out |= term.match_rows(index, rows)
        return out


def strict_node_selector(selector: NodeSelector, path: str = "") -> CompiledNodeSelector:
    """``nodeaffinity.NewNodeSelector``: any parse error is an error."""
    compiled = CompiledNodeSelector(selector, path)
    if compiled.errors:
        raise SelectorParseError(compiled.errors)
    return compiled


class PreferredTerms:
    """``nodeaffinity.PreferredSchedulingTerms``: the score is the sum of weights of matching terms.

    Terms with weight 0 or an empty preference are ignored; any parse error fails construction.
    """

    __slots__ = ("terms",)

    def __init__(self, terms: Sequence[PreferredSchedulingTerm], path: str = "") -> None:
        parsed: list[tuple[CompiledTerm, int]] = []
        errs: list[str] = []
        for i, term in enumerate(terms):
            if term.weight == 0 or is_empty_term(term.preference):
                continue
            compiled = CompiledTerm(term.preference, fe.index(path, i))
            if compiled.errors:
                errs.extend(compiled.errors)
            else:
                parsed.append((compiled, term.weight))
        if errs:
            raise SelectorParseError(errs)
        self.terms = parsed

    def score(self, labels: Labels, node_name: str) -> int:
        return sum(weight for term, weight in self.terms if term.matches(labels, node_name))

    def score_node(self, node: Node) -> int:
        return self.score(node.metadata.labels, node.metadata.name)

    def score_rows(self, index: NodeIndex, rows: Rows) -> Int64Array:
        out = np.zeros(len(rows), dtype=np.int64)
        for term, weight in self.terms:
            out += term.match_rows(index, rows).astype(np.int64) * weight
        return out
