"""Affinity terms parsed once per pod (upstream ``fwk.AffinityTerm`` / ``GetAffinityTerms``).

Terms are interned: two pods with the same term (same namespaces, selectors and topology key)
share one :class:`AffinityTerm` object, so indexes can count terms by identity. Pods are grouped
into :class:`LabelClass` values (namespace + labels) so a term is evaluated once per class.

matchLabelKeys / mismatchLabelKeys are deliberately ignored here: with the 1.36 default gates the
API server merges them into ``labelSelector`` when the pod is created, and the scheduler only
reads the merged selector (merging again would be wrong once the pod's labels change).
"""

from __future__ import annotations

import weakref
from collections.abc import Mapping, Sequence
from typing import Final

from ksched.api.core import Affinity, Pod, PodAffinityTerm, WeightedPodAffinityTerm
from ksched.api.meta import LabelSelector
from ksched.apimachinery.field import aggregate_message
from ksched.apimachinery.labels import Selector, SelectorError, label_selector_as_selector
from ksched.framework.podinfo import PodInfo

_TERMS_CACHE_KEY: Final = "InterPodAffinity/terms"
_CLASS_CACHE_KEY: Final = "InterPodAffinity/class"
_MEMO_LIMIT: Final = 8192

_NOTHING = Selector.nothing()
_EVERYTHING = Selector.everything()
_EMPTY_LABELS: Mapping[str, str] = {}


def _selector_key(sel: Selector) -> tuple[object, ...]:
    return ("never",) if sel.never else sel.requirements


class LabelClass:
    """Pods that look alike to every affinity term: same namespace and same labels (interned)."""

    __slots__ = ("__weakref__", "labels", "namespace")

    def __init__(self, namespace: str, labels: Mapping[str, str]) -> None:
        self.namespace = namespace
        self.labels = dict(labels)

    def __repr__(self) -> str:
        return f"LabelClass({self.namespace!r}, {self.labels!r})"


_classes: weakref.WeakValueDictionary[tuple[str, frozenset[tuple[str, str]]], LabelClass] = (
    weakref.WeakValueDictionary()
)


def label_class(namespace: str, labels: Mapping[str, str]) -> LabelClass:
    key = (namespace, frozenset(labels.items()))
    cls = _classes.get(key)
    if cls is None:
        cls = LabelClass(namespace, labels)
        _classes[key] = cls
    return cls


def label_class_of(pi: PodInfo) -> LabelClass:
    """The pod's class, memoized on the PodInfo (re-derived when its labels object is replaced)."""
    labels = pi.pod.metadata.labels
    entry = pi.cache.get(_CLASS_CACHE_KEY)
    if isinstance(entry, tuple) and entry[0] is labels and entry[1] == pi.pod.metadata.namespace:
        cls: LabelClass = entry[2]
        return cls
    cls = label_class(pi.pod.metadata.namespace, labels)
    pi.cache[_CLASS_CACHE_KEY] = (labels, pi.pod.metadata.namespace, cls)
    return cls


class AffinityTerm:
    """A processed PodAffinityTerm. Matching: namespace listed (or namespace selector matches the
    namespace labels given) and the label selector matches the pod's labels."""

    __slots__ = (
        "__weakref__",
        "_memo",
        "namespace_selector",
        "namespaces",
        "selector",
        "topology_key",
        "uses_namespace_labels",
    )

    def __init__(
        self, namespaces: frozenset[str], selector: Selector, namespace_selector: Selector, topology_key: str
    ) -> None:
        self.namespaces = namespaces
        self.selector = selector
        self.namespace_selector = namespace_selector
        self.topology_key = topology_key
        #: whether the result depends on namespace labels (otherwise memoized per LabelClass)
        self.uses_namespace_labels = not (namespace_selector.never or namespace_selector.empty)
        self._memo: dict[LabelClass, bool] = {}

    def matches(self, namespace: str, labels: Mapping[str, str], ns_labels: Mapping[str, str] | None) -> bool:
        if namespace in self.namespaces or self.namespace_selector.matches(ns_labels or _EMPTY_LABELS):
            return self.selector.matches(labels)
        return False

    def matches_class(self, cls: LabelClass, ns_labels: Mapping[str, str] | None = None) -> bool:
        """``matches`` for a class of pods; memoized when namespace labels cannot matter."""
        if self.uses_namespace_labels:
            return self.matches(cls.namespace, cls.labels, ns_labels)
        memo = self._memo
        hit = memo.get(cls)
        if hit is None:
            if len(memo) >= _MEMO_LIMIT:
                memo.clear()
            hit = memo[cls] = self.matches(cls.namespace, cls.labels, None)
        return hit

    def matches_pod(self, pod: Pod, ns_labels: Mapping[str, str] | None) -> bool:
        return self.matches(pod.metadata.namespace, pod.metadata.labels, ns_labels)

    def __repr__(self) -> str:
        return (
            f"AffinityTerm(namespaces={sorted(self.namespaces)!r}, selector={self.selector!r}, "
            f"namespaceSelector={self.namespace_selector!r}, topologyKey={self.topology_key!r})"
        )


_terms: weakref.WeakValueDictionary[tuple[object, ...], AffinityTerm] = weakref.WeakValueDictionary()


def intern_term(
    namespaces: frozenset[str], selector: Selector, namespace_selector: Selector, topology_key: str
) -> AffinityTerm:
    key = (namespaces, _selector_key(selector), _selector_key(namespace_selector), topology_key)
    term = _terms.get(key)
    if term is None:
        term = AffinityTerm(namespaces, selector, namespace_selector, topology_key)
        _terms[key] = term
    return term


class WeightedTerm:
    __slots__ = ("term", "weight")

    def __init__(self, term: AffinityTerm, weight: int) -> None:
        self.term = term
        self.weight = weight

    def __repr__(self) -> str:
        return f"WeightedTerm({self.weight}, {self.term!r})"


class TermError(ValueError):
    """A term whose selector does not parse (message as apimachinery words it)."""


_selectors: dict[tuple[object, ...], Selector] = {}


def _compile(sel: LabelSelector | None) -> Selector:
    if sel is None:
        return _NOTHING
    if not sel.match_labels and not sel.match_expressions:
        return _EVERYTHING
    key = (
        tuple(sorted(sel.match_labels.items())),
        tuple((e.key, e.operator, tuple(e.values)) for e in sel.match_expressions),
    )
    compiled = _selectors.get(key)
    if compiled is None:
        try:
            compiled = label_selector_as_selector(sel)
        except SelectorError as exc:
            raise TermError(str(exc)) from None
        if len(_selectors) >= _MEMO_LIMIT:
            _selectors.clear()
        _selectors[key] = compiled
    return compiled


def make_term(namespace: str, term: PodAffinityTerm) -> AffinityTerm:
    """Upstream ``newAffinityTerm`` for a pod in ``namespace``; raises TermError."""
    selector = _compile(term.label_selector)
    if not term.namespaces and term.namespace_selector is None:
        names = frozenset((namespace,))
    else:
        names = frozenset(term.namespaces)
    return intern_term(names, selector, _compile(term.namespace_selector), term.topology_key)


def _terms_of(namespace: str, terms: Sequence[PodAffinityTerm]) -> tuple[AffinityTerm, ...]:
    return tuple(make_term(namespace, t) for t in terms)


def _weighted_of(namespace: str, terms: Sequence[WeightedPodAffinityTerm]) -> tuple[WeightedTerm, ...]:
    return tuple(WeightedTerm(make_term(namespace, t.pod_affinity_term), t.weight) for t in terms)


class ParsedAffinity:
    """The four term lists of a pod; a list that failed to parse is empty and ``error`` says why."""

    __slots__ = (
        "error",
        "namespace",
        "preferred_affinity",
        "preferred_anti_affinity",
        "required_affinity",
        "required_anti_affinity",
        "source",
    )

    def __init__(self, namespace: str, affinity: Affinity | None) -> None:
        self.source = affinity
        self.namespace = namespace
        self.required_affinity: tuple[AffinityTerm, ...] = ()
        self.required_anti_affinity: tuple[AffinityTerm, ...] = ()
        self.preferred_affinity: tuple[WeightedTerm, ...] = ()
        self.preferred_anti_affinity: tuple[WeightedTerm, ...] = ()
        errors: list[str] = []
        pa = affinity.pod_affinity if affinity is not None else None
        paa = affinity.pod_anti_affinity if affinity is not None else None
        if pa is not None:
            try:
                self.required_affinity = _terms_of(
                    namespace, pa.required_during_scheduling_ignored_during_execution
                )
            except TermError as exc:
                errors.append(f"requiredAffinityTerms: {exc}")
        if paa is not None:
            try:
                self.required_anti_affinity = _terms_of(
                    namespace, paa.required_during_scheduling_ignored_during_execution
                )
            except TermError as exc:
                errors.append(f"requiredAntiAffinityTerms: {exc}")
        if pa is not None:
            try:
                self.preferred_affinity = _weighted_of(
                    namespace, pa.preferred_during_scheduling_ignored_during_execution
                )
            except TermError as exc:
                errors.append(f"preferredAffinityTerms: {exc}")
        if paa is not None:
            try:
                self.preferred_anti_affinity = _weighted_of(
                    namespace, paa.preferred_during_scheduling_ignored_during_execution
                )
            except TermError as exc:
                errors.append(f"preferredAntiAffinityTerms: {exc}")
        self.error: str | None = aggregate_message(errors) if errors else None


def parse_pod(pod: Pod) -> ParsedAffinity:
    return ParsedAffinity(pod.metadata.namespace, pod.spec.affinity)


def parsed_terms(pi: PodInfo) -> ParsedAffinity:
    """The pod's parsed terms, memoized on the PodInfo (re-parsed if its affinity object changes)."""
    pod = pi.pod
    parsed = pi.cache.get(_TERMS_CACHE_KEY)
    if (
        isinstance(parsed, ParsedAffinity)
        and parsed.source is pod.spec.affinity
        and parsed.namespace == pod.metadata.namespace
    ):
        return parsed
    parsed = parse_pod(pod)
    pi.cache[_TERMS_CACHE_KEY] = parsed
    return parsed


_hint_cache: dict[int, ParsedAffinity] = {}


def parsed_for_hint(pod: Pod) -> ParsedAffinity:
    """Parsed terms of a pod seen by a queueing hint (no PodInfo there); a small identity cache."""
    affinity = pod.spec.affinity
    if affinity is None:
        return parse_pod(pod)
    hit = _hint_cache.get(id(affinity))
    if hit is not None and hit.source is affinity and hit.namespace == pod.metadata.namespace:
        return hit
    if len(_hint_cache) >= 1024:
        _hint_cache.clear()
    parsed = _hint_cache[id(affinity)] = parse_pod(pod)
    return parsed


def pod_matches_all_terms(terms: Sequence[AffinityTerm], pod: Pod) -> bool:
    """Upstream ``podMatchesAllAffinityTerms``: false for no terms; namespace labels are not consulted."""
    if not terms:
        return False
    return all(t.matches_pod(pod, None) for t in terms)


def class_matches_all_terms(terms: Sequence[AffinityTerm], cls: LabelClass) -> bool:
    if not terms:
        return False
    return all(t.matches_class(cls) for t in terms)


def resolve_namespaces(term: AffinityTerm, namespaces: Mapping[str, Mapping[str, str]]) -> AffinityTerm:
    """Upstream ``mergeAffinityTermNamespacesIfNotEmpty`` for the incoming pod's terms, as 1.36.2
    actually behaves: the namespaces the selector picks (``namespaces`` maps name -> labels) join
    the names, but the selector itself stays (the term is passed by value, so only the shared
    namespace set is updated). Incoming terms are then matched with no namespace labels, where the
    selector still matches when it accepts an empty label set (only NotIn/DoesNotExist
    requirements): such a term covers every namespace. The result folds that in: Everything or
    Nothing. Empty (all namespaces) and nil selectors are kept as they are."""
    if not term.uses_namespace_labels:
        return term
    picked = {name for name, labels in namespaces.items() if term.namespace_selector.matches(labels)}
    rest = _EVERYTHING if term.namespace_selector.matches(_EMPTY_LABELS) else _NOTHING
    return intern_term(term.namespaces | picked, term.selector, rest, term.topology_key)
