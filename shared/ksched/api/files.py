"""Reading Kubernetes objects from files as ``kubectl get -o yaml`` prints them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from ksched.api.base import K8s
from ksched.api.kinds import ObjectError, UnsupportedKind, decode_object, describe


def iter_raw_objects(documents: list[Any], where: str) -> list[tuple[str, Any]]:
    """Flatten YAML documents and ``kind: List`` wrappers into (location, raw object) pairs."""
    out: list[tuple[str, Any]] = []
    for doc_index, doc in enumerate(documents):
        if doc is None:
            continue
        loc = f"{where} document {doc_index + 1}"
        if isinstance(doc, dict) and isinstance(doc.get("kind"), str) and doc["kind"].endswith("List"):
            items = doc.get("items") or []
            if not isinstance(items, list):
                raise ObjectError(f"{loc}: items must be a list")
            out.extend((f"{loc} items[{i}]", item) for i, item in enumerate(items))
        else:
            out.append((loc, doc))
    return out


def load_objects(path: str | Path, skipped: list[str] | None = None) -> list[K8s]:
    """Load every object of a YAML stream or ``kind: List`` file, in file order.

    Objects of kinds the scheduler does not read are left out and described in ``skipped``
    when a list is given; otherwise they are an error.
    """
    p = Path(path)
    try:
        text = p.read_text()
    except OSError as exc:
        raise ObjectError(f"{p}: cannot read: {exc.strerror}") from None
    try:
        documents = list(yaml.load_all(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)))
    except yaml.YAMLError as exc:
        raise ObjectError(f"{p}: not valid YAML: {exc}") from None
    return decode_objects(iter_raw_objects(documents, str(p)), skipped)


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
