"""Object-metadata validation shared by every kind (names, labels, annotations)."""

from __future__ import annotations

import re
from typing import Any

from .errors import FieldError, invalid_value, required
from .resources import DNS1035, LABEL, ResourceType
from .selectors import label_value_errors, qualified_name_errors

_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")

SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must "
    "start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and "
    "must start and "
    "end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)
DNS1035_MSG = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic "
    "character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for "
    "validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
)


def name_errors(name: str, style: str) -> list[str]:
    """Problems with ``metadata.name`` for a resource's naming rule."""
    if style == LABEL:
        errs = ["must be no more than 63 characters"] if len(name) > 63 else []
        return errs + ([] if _LABEL.match(name) else [LABEL_MSG])
    if style == DNS1035:
        errs = ["must be no more than 63 characters"] if len(name) > 63 else []
        return errs + ([] if _DNS1035.match(name) else [DNS1035_MSG])
    errs = ["must be no more than 253 characters"] if len(name) > 253 else []
    return errs + ([] if _SUBDOMAIN.match(name) else [SUBDOMAIN_MSG])


def is_subdomain(value: str) -> bool:
    return len(value) <= 253 and bool(_SUBDOMAIN.match(value))


def label_map_errors(path: str, labels: Any) -> list[FieldError]:
    """ValidateLabels: every key a qualified name, every value a label value (labels, nodeSelector)."""
    if labels is None:
        return []
    if not isinstance(labels, dict):
        return [invalid_value(path, labels, "must be a map of strings")]
    errs: list[FieldError] = []
    for key, value in labels.items():
        for msg in qualified_name_errors(key):
            errs.append(invalid_value(path, key, msg))
        if not isinstance(value, str):
            errs.append(invalid_value(f"{path}[{key}]", value, "must be a string"))
            continue
        for msg in label_value_errors(value):
            errs.append(invalid_value(path, value, msg))
    return errs


def validate_metadata(rt: ResourceType, meta: dict[str, Any]) -> list[FieldError]:
    """Validate name, namespace, labels and annotations of an object about to be stored."""
    errs: list[FieldError] = []
    name = meta.get("name") or ""
    if not name:
        errs.append(required("metadata.name", "name or generateName is required"))
    else:
        for msg in name_errors(name, rt.name_style):
            errs.append(invalid_value("metadata.name", name, msg))
    errs.extend(label_map_errors("metadata.labels", meta.get("labels")))
    annotations = meta.get("annotations")
    if annotations is not None and not isinstance(annotations, dict):
        errs.append(invalid_value("metadata.annotations", annotations, "must be a map of strings"))
    elif annotations:
        total = 0
        for key, value in annotations.items():
            for msg in qualified_name_errors(key.lower()):
                errs.append(invalid_value("metadata.annotations", key, msg))
            if not isinstance(value, str):
                errs.append(invalid_value(f"metadata.annotations[{key}]", value, "must be a string"))
                continue
            total += len(key) + len(value)
        if total > 256 * 1024:
            errs.append(
                FieldError("metadata.annotations", "FieldValueTooLong", "must have at most 262144 bytes")
            )
    finalizers = meta.get("finalizers")
    if finalizers is not None and not isinstance(finalizers, list):
        errs.append(invalid_value("metadata.finalizers", finalizers, "must be a list of strings"))
    return errs
