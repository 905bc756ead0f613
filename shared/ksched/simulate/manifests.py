"""The pods' manifests as read (every field, not only what the scheduler decodes), for outputs that
print the pods themselves (``--output simulator``)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from ksched.api.files import iter_raw_objects


def raw_objects(path: str) -> list[dict[str, Any]]:
    """The objects of a cluster file (read and checked before by ``load_objects``)."""
    documents = list(
        yaml.load_all(Path(path).read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    )
    return [obj for _, obj in iter_raw_objects(documents, path) if isinstance(obj, dict)]


def pod_manifests(objects: Sequence[dict[str, Any]], pod_files: Sequence[str]) -> dict[str, dict[str, Any]]:
    """``namespace/name`` -> manifest of every Pod of ``objects`` and of the ``--pod`` files (a pod
    of those without a namespace is in ``default``, as they are scheduled)."""
    out: dict[str, dict[str, Any]] = {}
    for obj in objects:
        if obj.get("kind") == "Pod":
            meta = obj.get("metadata") or {}
            out[f"{meta.get('namespace') or ''}/{meta.get('name', '')}"] = obj
    for path in pod_files:
        for obj in raw_objects(path):
            if obj.get("kind") == "Pod":
                meta = obj.get("metadata") or {}
                out[f"{meta.get('namespace') or 'default'}/{meta.get('name', '')}"] = obj
    return out
