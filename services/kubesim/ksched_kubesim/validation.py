"""Object-metadata validation shared by every kind (names, labels, annotations)."""

from __future__ import annotations

from typing import Any

from ksched.apimachinery.field import too_long
from ksched.apimachinery.validation import (
    dns1035_label_errors,
    dns1123_label_errors,
    dns1123_subdomain_errors,
    label_key_errors,
    label_value_errors,
)

from .errors import FieldError, invalid_value, required
from .resources import DNS1035, LABEL, ResourceType

_TOTAL_ANNOTATION_SIZE_LIMIT = 256 * 1024


def name_errors(name: str, style: str) -> list[str]:
    """Problems with ``metadata.name`` for a resource's naming rule."""
    if style == LABEL:
        return dns1123_label_errors(name)
    if style == DNS1035:
        return dns1035_label_errors(name)
    return dns1123_subdomain_errors(name)


def label_map_errors(path: str, labels: Any) -> list[FieldError]:
    """ValidateLabels: every key a qualified name, every value a label value (labels, nodeSelector)."""
    if labels is None:
        return []
    if not isinstance(labels, dict):
        return [invalid_value(path, labels, "must be a map of strings")]
    errs: list[FieldError] = []
    for key, value in labels.items():
        for msg in label_key_errors(key):
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
            for msg in label_key_errors(key.lower()):
                errs.append(invalid_value("metadata.annotations", key, msg))
            if not isinstance(value, str):
                errs.append(invalid_value(f"metadata.annotations[{key}]", value, "must be a string"))
                continue
            total += len(key.encode()) + len(value.encode())
        if total > _TOTAL_ANNOTATION_SIZE_LIMIT:
            errs.append(too_long("metadata.annotations", _TOTAL_ANNOTATION_SIZE_LIMIT))
    finalizers = meta.get("finalizers")
    if finalizers is not None and not isinstance(finalizers, list):
        errs.append(invalid_value("metadata.finalizers", finalizers, "must be a list of strings"))
    return errs
