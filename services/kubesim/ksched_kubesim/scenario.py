"""Scenario files: Kubernetes objects as ``kubectl get -o yaml`` prints them (a YAML stream, or
``kind: List`` documents), read by ``ksched.api.files`` and loaded into kubesim as given (status
kept, resourceVersion reassigned)."""

from __future__ import annotations

from pathlib import Path

from ksched.api.files import parse_raw_objects, read_raw_objects
from ksched.api.kinds import ObjectError

from .jsonio import JSON
from .resources import ResourceType, by_kind


class ScenarioError(ObjectError):
    """A scenario file that cannot be loaded; the message names the file, the document and the
    object."""


def _served(located: list[tuple[str, JSON]]) -> list[tuple[ResourceType, JSON]]:
    out: list[tuple[ResourceType, JSON]] = []
    for where, obj in located:
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


def parse_objects(text: str, source: str = "<scenario>") -> list[tuple[ResourceType, JSON]]:
    """Parse a YAML (or JSON) stream into (resource, object) pairs, checking each object's type."""
    try:
        located = parse_raw_objects(text, source)
    except ObjectError as exc:
        raise ScenarioError(str(exc)) from None
    return _served(located)


def load_file(path: str | Path) -> list[tuple[ResourceType, JSON]]:
    try:
        located = read_raw_objects(path)
    except ObjectError as exc:
        raise ScenarioError(str(exc)) from None
    return _served(located)
