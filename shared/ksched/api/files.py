"""Reading Kubernetes objects from files as ``kubectl get -o yaml`` prints them: the one reader of
``ksched simulate``'s cluster files and kubesim's scenarios.

A file is a YAML (or JSON) stream; each document is an object or a List. A List is read as kubectl
reads one (cli-runtime's ``FlattenListVisitor``): any object whose ``items`` is a list, and any
``kind`` ending in ``List`` (``List``, or ``PodList`` as the API serves it), its items in order and
nested Lists flattened. Empty documents and null items are skipped. Errors name the file, the
document (numbered from 1; kubectl's messages name the file but no document) and the item
(``cluster.yaml document 2 items[3]``).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

from ksched.api.base import K8s
from ksched.api.kinds import ObjectError, UnsupportedKind, decode_object, describe

_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _is_list(doc: dict[str, Any]) -> bool:
    """Whether ``doc`` is a List wrapper (see the module's docstring)."""
    kind = doc.get("kind")
    return (isinstance(kind, str) and kind.endswith("List")) or isinstance(doc.get("items"), list)


def _flatten(doc: Any, where: str) -> Iterator[tuple[str, dict[str, Any]]]:
    if doc is None:
        return
    if not isinstance(doc, dict):
        raise ObjectError(f"{where}: expected a Kubernetes object (a mapping), got {type(doc).__name__}")
    if not _is_list(doc):
        yield where, doc
        return
    items = doc.get("items") or []
    if not isinstance(items, list):
        raise ObjectError(f"{where}: items must be a list, got {type(items).__name__}")
    for i, item in enumerate(items):
        yield from _flatten(item, f"{where} items[{i}]")


def parse_raw_objects(text: str, source: str) -> list[tuple[str, dict[str, Any]]]:
    """The (location, raw object) pairs of a YAML or JSON stream, in order, its Lists flattened;
    ``source`` names it in errors."""
    try:
        documents = list(yaml.load_all(text, Loader=_LOADER))
    except yaml.YAMLError as exc:
        raise ObjectError(f"{source}: not valid YAML: {exc}") from None
    return [pair for n, doc in enumerate(documents, 1) for pair in _flatten(doc, f"{source} document {n}")]


def read_raw_objects(path: str | Path) -> list[tuple[str, dict[str, Any]]]:
    """The (location, raw object) pairs of the file at ``path``."""
    p = Path(path)
    try:
        text = p.read_text()
    except OSError as exc:
        raise ObjectError(f"{p}: cannot read: {exc.strerror}") from None
    return parse_raw_objects(text, str(p))


def load_objects(path: str | Path, skipped: list[str] | None = None) -> list[K8s]:
    """Load every object of a YAML stream or ``kind: List`` file, in file order.

    Objects of kinds the scheduler does not read are left out and described in ``skipped``
    when a list is given; otherwise they are an error.
    """
    return decode_objects(read_raw_objects(path), skipped)


def decode_objects(located: list[tuple[str, Any]], skipped: list[str] | None = None) -> list[K8s]:
    """Decode (location, raw object) pairs in order; unsupported kinds as :func:`load_objects` says."""
    objects: list[K8s] = []
    for loc, raw in located:
        try:
            obj = decode_object(raw, loc)
        except UnsupportedKind as exc:
            if skipped is None:
                raise
            skipped.append(str(exc))
            continue
        if not getattr(getattr(obj, "metadata", None), "name", ""):
            # as the API server: an unnamed node would otherwise be a node called "" to schedule on
            raise ObjectError(f"{loc}: {describe(raw)}: metadata.name: Required value: name is required")
        objects.append(obj)
    return objects
