"""Scenario files: Kubernetes objects as ``kubectl get -o yaml`` prints them (a YAML stream, or
``kind: List`` documents), loaded into kubesim as given (status kept, resourceVersion reassigned)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

from .jsonio import JSON
from .resources import ResourceType, by_kind


class ScenarioError(ValueError):
    """A scenario file that cannot be loaded; the message names the file and the object."""


def _flatten(doc: Any, where: str) -> Iterator[tuple[str, JSON]]:
    if doc is None:
        return
    if not isinstance(doc, dict):
        raise ScenarioError(f"{where}: expected a Kubernetes object (a mapping), got {type(doc).__name__}")
    if doc.get("kind") == "List" or (str(doc.get("kind", "")).endswith("List") and "items" in doc):
        items = doc.get("items") or []
        if not isinstance(items, list):
            raise ScenarioError(f"{where}: items must be a list")
        for i, item in enumerate(items):
            yield from _flatten(item, f"{where} items[{i}]")
        return
    yield where, doc


def parse_objects(text: str, source: str = "<scenario>") -> list[tuple[ResourceType, JSON]]:
    """Parse a YAML (or JSON) stream into (resource, object) pairs, checking each object's type."""
    try:
        documents = list(yaml.load_all(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)))
    except yaml.YAMLError as exc:
        raise ScenarioError(f"{source}: invalid YAML: {exc}") from None
    out: list[tuple[ResourceType, JSON]] = []
    for d, doc in enumerate(documents):
        for where, obj in _flatten(doc, f"{source} document {d}"):
            kind, api_version = obj.get("kind"), obj.get("apiVersion")
            meta = obj.get("metadata")
            name = meta.get("name") if isinstance(meta, dict) else None
            label = f"{where} ({kind or '?'} {name or '?'})"
            if not kind or not api_version:
                raise ScenarioError(f"{label}: apiVersion and kind are required")
            if not isinstance(meta, dict) or not name:
                raise ScenarioError(f"{label}: metadata.name is required")
            rt = by_kind(str(api_version), str(kind))
            if rt is None:
                raise ScenarioError(f"{label}: kubesim does not serve {kind} in {api_version}")
            out.append((rt, obj))
    return out


def load_file(path: str | Path) -> list[tuple[ResourceType, JSON]]:
    p = Path(path)
    try:
        text = p.read_text()
    except OSError as exc:
        raise ScenarioError(f"{p}: cannot read scenario file: {exc.strerror}") from None
    return parse_objects(text, str(p))
