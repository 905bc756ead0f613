"""Selectors as kubesim meets them: query parameters and ``metav1.LabelSelector`` JSON objects.

The semantics are :mod:`ksched.apimachinery.labels` and :mod:`ksched.apimachinery.fields`; this
module only turns their errors into the API server's 400 answers and decodes JSON selectors.
"""

from __future__ import annotations

from collections.abc import Mapping

import msgspec

from ksched.api.meta import LabelSelector
from ksched.apimachinery import fields, labels
from ksched.apimachinery.fields import FieldSelector
from ksched.apimachinery.labels import Selector, SelectorError, label_selector_as_selector

from .errors import bad_request

__all__ = [
    "FieldSelector",
    "Selector",
    "label_selector_of",
    "matches_label_selector",
    "parse_field_selector",
    "parse_label_selector",
]


def parse_label_selector(text: str | None) -> Selector | None:
    """The ``labelSelector`` query parameter; None when it selects everything. Raises a 400 ApiError."""
    if not text:
        return None
    try:
        selector = labels.parse(text)
    except SelectorError as exc:
        raise bad_request(str(exc)) from None
    return None if selector.empty else selector


def parse_field_selector(text: str | None, supported: tuple[str, ...]) -> FieldSelector | None:
    """The ``fieldSelector`` query parameter for a resource whose selectable fields are ``supported``."""
    if not text:
        return None
    try:
        selector = fields.parse(text)
    except fields.FieldSelectorError as exc:
        raise bad_request(str(exc)) from None
    for term in selector.terms:
        if term.field not in supported:
            raise bad_request(f"field label not supported: {term.field}")
    return None if selector.empty else selector


def label_selector_of(obj: object) -> Selector:
    """``metav1.LabelSelectorAsSelector`` of a JSON selector (None selects nothing).

    Raises :class:`SelectorError` for a selector the API server could not have stored.
    """
    if obj is None:
        return Selector.nothing()
    try:
        selector = msgspec.convert(obj, LabelSelector)
    except msgspec.ValidationError as exc:
        raise SelectorError(str(exc)) from None
    return label_selector_as_selector(selector)


def matches_label_selector(obj: object, object_labels: Mapping[str, str]) -> bool:
    """Whether a JSON selector selects ``object_labels``; an invalid selector selects nothing."""
    try:
        return label_selector_of(obj).matches(object_labels)
    except SelectorError:
        return False


def format_label_selector(obj: object) -> str:
    """``metav1.FormatLabelSelector``: ``app=web,tier in (a,b)`` (requirements by key), ``<none>``
    for an empty selector, ``<error>`` for an invalid one."""
    if not isinstance(obj, dict):
        return "<none>"
    parts: list[tuple[str, str]] = [
        (k, f"{k}={v}") for k, v in sorted((obj.get("matchLabels") or {}).items())
    ]
    for expr in obj.get("matchExpressions") or []:
        if not isinstance(expr, dict):
            return "<error>"
        key, op = str(expr.get("key", "")), expr.get("operator")
        values = ",".join(sorted(str(v) for v in expr.get("values") or []))
        text = {"In": f"{key} in ({values})", "NotIn": f"{key} notin ({values})", "Exists": key}.get(
            str(op), f"!{key}" if op == "DoesNotExist" else ""
        )
        if not text:
            return "<error>"
        parts.append((key, text))
    parts.sort(key=lambda p: p[0])
    return ",".join(text for _, text in parts) or "<none>"
