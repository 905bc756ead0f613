"""Label selectors and node selectors compiled once and matched many times.

Semantics follow apimachinery ``labels`` and component-helpers ``nodeaffinity``: a nil
LabelSelector selects nothing, an empty one everything; NodeSelector terms are ORed,
requirements within a term ANDed, and an empty term matches nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from ksched.api.core import Node, NodeSelector, NodeSelectorRequirement, NodeSelectorTerm
from ksched.api.meta import LabelSelector

Labels = Mapping[str, str]
Predicate = Callable[[Labels], bool]


class SelectorError(ValueError):
    """A selector that upstream would refuse to parse (the message names the requirement)."""


def _requirement(key: str, op: str, values: Sequence[str], where: str) -> Predicate:
    vals = frozenset(values)
    if op == "In":
        if not vals:
            raise SelectorError(
                f"{where}: values: Required value: for 'in', 'notin' operators, values set can't be empty"
            )
        if len(vals) == 1:
            (only,) = vals
            return lambda labels: labels.get(key) == only
        return lambda labels: labels.get(key) in vals
    if op == "NotIn":
        if not vals:
            raise SelectorError(
                f"{where}: values: Required value: for 'in', 'notin' operators, values set can't be empty"
            )
        return lambda labels: labels.get(key) not in vals
    if op == "Exists":
        if vals:
            raise SelectorError(
                f"{where}: values: Forbidden: values set must be empty for exists and does not exist"
            )
        return lambda labels: key in labels
    if op == "DoesNotExist":
        if vals:
            raise SelectorError(
                f"{where}: values: Forbidden: values set must be empty for exists and does not exist"
            )
        return lambda labels: key not in labels
    if op in ("Gt", "Lt"):
        if len(values) != 1:
            raise SelectorError(
                f"{where}: values: Invalid value: for 'Gt', 'Lt' operators, exactly one value is required"
            )
        try:
            bound = int(values[0])
        except ValueError:
            msg = "for 'Gt', 'Lt' operators, the value must be an integer"
            raise SelectorError(f"{where}: values[0]: Invalid value: {values[0]!r}: {msg}") from None
        greater = op == "Gt"

        def compare(labels: Labels) -> bool:
            raw = labels.get(key)
            if raw is None:
                return False
            try:
                number = int(raw)
            except ValueError:
                return False
            return number > bound if greater else number < bound

        return compare
    raise SelectorError(f"{where}: operator: Unsupported value: {op!r}")


class Selector:
    """A compiled label selector: ``matches(labels)``; ``nothing``/``everything`` shortcuts."""

    __slots__ = ("_predicates", "empty", "never", "requirements")

    def __init__(
        self,
        predicates: Sequence[Predicate],
        *,
        never: bool = False,
        requirements: tuple[tuple[str, str, tuple[str, ...]], ...] = (),
    ) -> None:
        self._predicates = tuple(predicates)
        self.never = never
        self.empty = not predicates and not never
        self.requirements = requirements

    @classmethod
    def nothing(cls) -> Selector:
        return cls((), never=True)

    @classmethod
    def everything(cls) -> Selector:
        return cls(())

    @classmethod
    def from_set(cls, labels: Labels) -> Selector:
        """Equality on every key (``labels.SelectorFromSet``); an empty set selects everything."""
        reqs = tuple((k, "In", (v,)) for k, v in sorted(labels.items()))
        return cls([_requirement(k, op, vs, k) for k, op, vs in reqs], requirements=reqs)

    @classmethod
    def from_label_selector(cls, sel: LabelSelector | None, where: str = "labelSelector") -> Selector:
        """``metav1.LabelSelectorAsSelector``: None selects nothing, ``{}`` everything."""
        if sel is None:
            return cls.nothing()
        reqs: list[tuple[str, str, tuple[str, ...]]] = [
            (k, "In", (v,)) for k, v in sorted(sel.match_labels.items())
        ]
        for i, expr in enumerate(sel.match_expressions):
            if expr.operator not in ("In", "NotIn", "Exists", "DoesNotExist"):
                raise SelectorError(
                    f"{where}.matchExpressions[{i}].operator: Unsupported value: {expr.operator!r}"
                )
            reqs.append((expr.key, expr.operator, tuple(expr.values)))
        preds = [
            _requirement(k, op, vs, f"{where}.matchExpressions[{i}]") for i, (k, op, vs) in enumerate(reqs)
        ]
        return cls(preds, requirements=tuple(reqs))

    def matches(self, labels: Labels) -> bool:
        if self.never:
            return False
        return all(p(labels) for p in self._predicates)

    def __repr__(self) -> str:
        if self.never:
            return "Selector(<nothing>)"
        return f"Selector({list(self.requirements)!r})"


class NodeSelectorTermMatcher:
    """One NodeSelectorTerm: label requirements and ``metadata.name`` field requirements."""

    __slots__ = ("_fields", "_labels")

    def __init__(self, term: NodeSelectorTerm, where: str) -> None:
        self._labels: Selector | None = None
        self._fields: list[Predicate] | None = None
        if term.match_expressions:
            self._labels = Selector(
                [
                    _requirement(r.key, r.operator, r.values, f"{where}.matchExpressions[{i}]")
                    for i, r in enumerate(term.match_expressions)
                ]
            )
        if term.match_fields:
            self._fields = [
                _field_requirement(r, f"{where}.matchFields[{i}]") for i, r in enumerate(term.match_fields)
            ]

    def matches(self, labels: Labels, node_name: str) -> bool:
        if self._labels is not None and not self._labels.matches(labels):
            return False
        if self._fields is not None and node_name:
            fields = {"metadata.name": node_name}
            return all(p(fields) for p in self._fields)
        return True


def _field_requirement(req: NodeSelectorRequirement, where: str) -> Predicate:
    if req.operator not in ("In", "NotIn"):
        raise SelectorError(
            f'{where}.operator: Unsupported value: {req.operator!r}: supported values: "In", "NotIn"'
        )
    if len(req.values) != 1:
        raise SelectorError(f"{where}.values: Invalid value: {req.values!r}: must have one element")
    key, value = req.key, req.values[0]
    if req.operator == "In":
        return lambda fields: fields.get(key) == value
    return lambda fields: fields.get(key) != value


def is_empty_term(term: NodeSelectorTerm) -> bool:
    return not term.match_expressions and not term.match_fields


class NodeSelectorMatcher:
    """A NodeSelector (ORed terms). Terms that fail to parse never match, as upstream's lazy selector."""

    __slots__ = ("_terms", "errors")

    def __init__(self, selector: NodeSelector, where: str = "nodeSelectorTerms") -> None:
        self._terms: list[NodeSelectorTermMatcher] = []
        self.errors: list[str] = []
        for i, term in enumerate(selector.node_selector_terms):
            if is_empty_term(term):
                continue
            try:
                self._terms.append(NodeSelectorTermMatcher(term, f"{where}[{i}]"))
            except SelectorError as exc:
                self.errors.append(str(exc))

    def matches(self, labels: Labels, node_name: str) -> bool:
        return any(t.matches(labels, node_name) for t in self._terms)

    def matches_node(self, node: Node) -> bool:
        return self.matches(node.metadata.labels, node.metadata.name)
