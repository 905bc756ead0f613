"""Label selector validation with apimachinery's wording (``metav1.LabelSelectorAsSelector``).

The API server rejects invalid selectors, so the scheduler meets them only in hand-made objects;
upstream then fails the pod with ``parsing pod: ...`` and we reproduce that message.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

from ksched.api.meta import LabelSelector

_QNAME_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_QNAME_RE = re.compile(f"^{_QNAME_FMT}$")
_QNAME_MSG = (
    "must consist of alphanumeric characters, '-', '_' or '.', "
    "and must start and end with an alphanumeric character"
)
_QNAME_MAX = 63
_VALUE_FMT = f"({_QNAME_FMT})?"
_VALUE_RE = re.compile(f"^{_VALUE_FMT}$")
_VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', "
    "and must start and end with an alphanumeric character"
)
_VALUE_MAX = 63
_DNS_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS_SUBDOMAIN_FMT = f"{_DNS_LABEL_FMT}(\\.{_DNS_LABEL_FMT})*"
_DNS_SUBDOMAIN_RE = re.compile(f"^{_DNS_SUBDOMAIN_FMT}$")
_DNS_SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
    "and must start and end with an alphanumeric character"
)
_DNS_SUBDOMAIN_MAX = 253

#: label selector operators -> the selection operator names NewRequirement checks
_OPERATORS = {"In": "in", "NotIn": "notin", "Exists": "exists", "DoesNotExist": "!"}


def _regex_error(msg: str, fmt: str, *examples: str) -> str:
    if not examples:
        return f"{msg} (regex used for validation is '{fmt}')"
    shown = " or ".join(f"'{e}', " for e in examples)
    return f"{msg} (e.g. {shown}regex used for validation is '{fmt}')"


def _max_len_error(length: int) -> str:
    return f"must be no more than {length} characters"


def go_quote(value: str) -> str:
    """Go's ``%q`` for the common case (printable text)."""
    return json.dumps(value, ensure_ascii=False)


def _go_string_slice(values: Sequence[str]) -> str:
    return "[]string{" + ", ".join(go_quote(v) for v in values) + "}"


def qualified_name_errors(value: str) -> list[str]:
    """``validation.IsQualifiedName``: an optional DNS subdomain prefix, '/', and a name."""
    errs: list[str] = []
    parts = value.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errs.append("prefix part must be non-empty")
        else:
            if len(prefix) > _DNS_SUBDOMAIN_MAX:
                errs.append("prefix part " + _max_len_error(_DNS_SUBDOMAIN_MAX))
            if not _DNS_SUBDOMAIN_RE.match(prefix):
                errs.append(
                    "prefix part " + _regex_error(_DNS_SUBDOMAIN_MSG, _DNS_SUBDOMAIN_FMT, "example.com")
                )
    else:
        return [
            "a qualified name "
            + _regex_error(_QNAME_MSG, _QNAME_FMT, "MyName", "my.name", "123-abc")
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]
    if not name:
        errs.append("name part must be non-empty")
    elif len(name) > _QNAME_MAX:
        errs.append("name part " + _max_len_error(_QNAME_MAX))
    if not _QNAME_RE.match(name):
        errs.append("name part " + _regex_error(_QNAME_MSG, _QNAME_FMT, "MyName", "my.name", "123-abc"))
    return errs


def label_value_errors(value: str) -> list[str]:
    """``validation.IsValidLabelValue``."""
    errs: list[str] = []
    if len(value) > _VALUE_MAX:
        errs.append(_max_len_error(_VALUE_MAX))
    if not _VALUE_RE.match(value):
        errs.append(_regex_error(_VALUE_MSG, _VALUE_FMT, "MyValue", "my_value", "12345"))
    return errs


def requirement_errors(key: str, op: str, values: Sequence[str]) -> list[str]:
    """``labels.NewRequirement`` field errors; ``op`` is a selection operator (``in``, ``=``, ...)."""
    errs: list[str] = []
    key_errs = qualified_name_errors(key)
    if key_errs:
        errs.append(f"key: Invalid value: {go_quote(key)}: {'; '.join(key_errs)}")
    bad_count = ""
    if op in ("in", "notin") and not values:
        bad_count = "for 'in', 'notin' operators, values set can't be empty"
    elif op == "=" and len(values) != 1:
        bad_count = "exact-match compatibility requires one single value"
    elif op in ("exists", "!") and values:
        bad_count = "values set must be empty for exists and does not exist"
    if bad_count:
        errs.append(f"values: Invalid value: {_go_string_slice(values)}: {bad_count}")
    for i, value in enumerate(values):
        value_errs = label_value_errors(value)
        if value_errs:
            errs.append(f"values[{i}][{key}]: Invalid value: {go_quote(value)}: {'; '.join(value_errs)}")
    return errs


def aggregate_message(messages: Sequence[str]) -> str:
    """``utilerrors.NewAggregate(...).Error()``: one message as is, several deduplicated in brackets."""
    seen: list[str] = []
    for m in messages:
        if m not in seen:
            seen.append(m)
    if len(seen) == 1:
        return seen[0]
    return "[" + ", ".join(seen) + "]"


def label_selector_error(selector: LabelSelector | None) -> str | None:
    """The error ``LabelSelectorAsSelector`` returns for ``selector``, or None when it is valid."""
    if selector is None:
        return None
    for key, value in sorted(selector.match_labels.items()):
        errs = requirement_errors(key, "=", [value])
        if errs:
            return aggregate_message(errs)
    for expr in selector.match_expressions:
        op = _OPERATORS.get(expr.operator)
        if op is None:
            return f"{go_quote(expr.operator)} is not a valid label selector operator"
        errs = requirement_errors(expr.key, op, expr.values)
        if errs:
            return aggregate_message(errs)
    return None
