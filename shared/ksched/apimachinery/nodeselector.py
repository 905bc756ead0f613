"""Node selectors as component-helpers ``scheduling/corev1/nodeaffinity`` builds them (1.36.2).

A term's ``matchExpressions`` become label requirements through ``labels.NewRequirement`` (so a
bad key such as ``"bad key"``, a bad value such as ``"a b"``, a wrong value count or an unknown
operator is a parse error of the term) and its ``matchFields`` become ``metadata.name`` equalities.
Terms are ORed, requirements within a term ANDed; an empty term is dropped. A term that failed to
parse never matches (:class:`NodeSelector` is upstream's ``LazyErrorNodeSelector``); the strict
constructors raise :class:`NodeSelectorError` instead. Every user of node selectors (NodeAffinity,
PodTopologySpread, VolumeBinding, plugin args validation) goes through this module.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ksched.api.core import Node, NodeSelectorRequirement, NodeSelectorTerm, Pod, PreferredSchedulingTerm
from ksched.api.core import NodeSelector as NodeSelectorSpec
from ksched.apimachinery import field
from ksched.apimachinery.labels import Operator, Requirement, Selector, requirement_errors

OBJECT_NAME_FIELD = "metadata.name"
SELECTOR_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")
FIELD_SELECTOR_OPERATORS = ("In", "NotIn")
_OPERATORS = {
    "In": Operator.IN,
    "NotIn": Operator.NOT_IN,
    "Exists": Operator.EXISTS,
    "DoesNotExist": Operator.DOES_NOT_EXIST,
    "Gt": Operator.GREATER_THAN,
    "Lt": Operator.LESS_THAN,
}

Labels = Mapping[str, str]


class NodeSelectorError(ValueError):
    """Parse errors of a node selector; ``errors`` are the messages, ``str()`` their aggregate."""

    def __init__(self, errors: Sequence[str | field.FieldError]) -> None:
        self.errors = list(dict.fromkeys(str(e) for e in errors))
        super().__init__(field.aggregate_message(self.errors))


@dataclass(frozen=True, slots=True)
class FieldRequirement:
    """One ``matchFields`` entry: ``key`` equal (In) or not equal (NotIn) to ``value``."""

    key: str
    equal: bool
    value: str

    def matches(self, node_name: str) -> bool:
        actual = node_name if self.key == OBJECT_NAME_FIELD else ""
        return (actual == self.value) == self.equal


def _label_requirements(
    exprs: Sequence[NodeSelectorRequirement], path: str
) -> tuple[list[Requirement], list[field.FieldError]]:
    """``nodeSelectorRequirementsAsSelector``."""
    reqs: list[Requirement] = []
    errs: list[field.FieldError] = []
    for i, expr in enumerate(exprs):
        where = field.index(path, i)
        op = _OPERATORS.get(expr.operator)
        if op is None:
            errs.append(
                field.not_supported(field.child(where, "operator"), expr.operator, SELECTOR_OPERATORS)
            )
            continue
        req_errs = requirement_errors(expr.key, op, expr.values, where)
        if req_errs:
            errs.extend(req_errs)
        else:
            reqs.append(Requirement(expr.key, op, tuple(expr.values)))
    return reqs, errs


def _field_requirements(
    exprs: Sequence[NodeSelectorRequirement], path: str
) -> tuple[list[FieldRequirement], list[field.FieldError]]:
    """``nodeSelectorRequirementsAsFieldSelector``."""
    reqs: list[FieldRequirement] = []
    errs: list[field.FieldError] = []
    for i, expr in enumerate(exprs):
        where = field.index(path, i)
        if expr.operator not in FIELD_SELECTOR_OPERATORS:
            errs.append(
                field.not_supported(field.child(where, "operator"), expr.operator, FIELD_SELECTOR_OPERATORS)
            )
        elif len(expr.values) != 1:
            errs.append(
                field.invalid(field.child(where, "values"), list(expr.values), "must have one element")
            )
        else:
            reqs.append(FieldRequirement(expr.key, expr.operator == "In", expr.values[0]))
    return reqs, errs


def is_empty_term(term: NodeSelectorTerm) -> bool:
    return not term.match_expressions and not term.match_fields


class Term:
    """One parsed NodeSelectorTerm (``nodeSelectorTerm``); ``errors`` non-empty means it never matches."""

    __slots__ = ("errors", "fields", "labels")

    def __init__(self, term: NodeSelectorTerm, path: str) -> None:
        self.labels: Selector | None = None
        self.fields: tuple[FieldRequirement, ...] | None = None
        self.errors: list[field.FieldError] = []
        if term.match_expressions:
            reqs, errs = _label_requirements(term.match_expressions, field.child(path, "matchExpressions"))
            self.errors.extend(errs)
            self.labels = Selector(reqs)
        if term.match_fields:
            freqs, ferrs = _field_requirements(term.match_fields, field.child(path, "matchFields"))
            self.errors.extend(ferrs)
            self.fields = tuple(freqs)

    def matches(self, labels: Labels, node_name: str) -> bool:
        """``nodeSelectorTerm.match``: fields are only checked for a node that has a name."""
        if self.errors:
            return False
        if self.labels is not None and not self.labels.matches(labels):
            return False
        return not (
            self.fields is not None and node_name and not all(r.matches(node_name) for r in self.fields)
        )


class NodeSelector:
    """ORed terms (``LazyErrorNodeSelector``): empty terms are dropped, broken terms never match."""

    __slots__ = ("errors", "terms")

    def __init__(self, selector: NodeSelectorSpec, path: str = "") -> None:
        terms_path = field.child(path, "nodeSelectorTerms")
        self.terms = [
            Term(term, field.index(terms_path, i))
            for i, term in enumerate(selector.node_selector_terms)
            if not is_empty_term(term)
        ]
        self.errors = [str(e) for t in self.terms for e in t.errors]

    def matches(self, labels: Labels, node_name: str) -> bool:
        return any(t.matches(labels, node_name) for t in self.terms)

    def matches_node(self, node: Node) -> bool:
        """``NodeSelector.Match``: parse errors count as no match."""
        return self.matches(node.metadata.labels, node.metadata.name)

    def match(self, node: Node) -> bool:
        """``LazyErrorNodeSelector.Match``: the parse errors are raised when no term matched."""
        if self.matches_node(node):
            return True
        if self.errors:
            raise NodeSelectorError(self.errors)
        return False


class PreferredSchedulingTerms:
    """``nodeaffinity.PreferredSchedulingTerms``: the score is the sum of the matching terms' weights.

    Terms with weight 0 or an empty preference are ignored; any parse error fails construction.
    """

    __slots__ = ("terms",)

    def __init__(self, terms: Sequence[PreferredSchedulingTerm], path: str = "") -> None:
        parsed: list[tuple[Term, int]] = []
        errs: list[field.FieldError] = []
        for i, term in enumerate(terms):
            if term.weight == 0 or is_empty_term(term.preference):
                continue
            compiled = Term(term.preference, field.index(path, i))
            if compiled.errors:
                errs.extend(compiled.errors)
            else:
                parsed.append((compiled, term.weight))
        if errs:
            raise NodeSelectorError(errs)
        self.terms = parsed

    def score(self, labels: Labels, node_name: str) -> int:
        return sum(weight for term, weight in self.terms if term.matches(labels, node_name))

    def score_node(self, node: Node) -> int:
        return self.score(node.metadata.labels, node.metadata.name)


class RequiredNodeAffinity:
    """A pod's ``nodeSelector`` AND its required node affinity (``GetRequiredNodeAffinity``)."""

    __slots__ = ("affinity", "node_selector")

    def __init__(self, pod: Pod) -> None:
        self.node_selector = tuple(pod.spec.node_selector.items())
        aff = pod.spec.affinity
        required = (
            aff.node_affinity.required_during_scheduling_ignored_during_execution
            if aff is not None and aff.node_affinity is not None
            else None
        )
        self.affinity = NodeSelector(required) if required is not None else None

    @property
    def is_empty(self) -> bool:
        return not self.node_selector and self.affinity is None

    def matches(self, labels: Labels, node_name: str) -> bool:
        """Parse errors of the affinity count as no match (as upstream's Filter ignores them)."""
        if any(labels.get(k) != v for k, v in self.node_selector):
            return False
        return self.affinity is None or self.affinity.matches(labels, node_name)

    def matches_node(self, node: Node) -> bool:
        return self.matches(node.metadata.labels, node.metadata.name)

    def match(self, node: Node) -> bool:
        """``RequiredNodeAffinity.Match``: like :meth:`matches_node`, but raise the parse errors
        (:class:`NodeSelectorError`) when no term matched."""
        labels = node.metadata.labels
        if any(labels.get(k) != v for k, v in self.node_selector):
            return False
        return self.affinity is None or self.affinity.match(node)
