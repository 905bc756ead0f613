"""The pods' manifests as read (every field, not only what the scheduler decodes), for outputs that
print the pods themselves (``--output simulator``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ksched.api.files import read_raw_objects


def raw_objects(path: str) -> list[dict[str, Any]]:
    """The objects of a cluster file (read and checked before by ``load_objects``)."""
    return [obj for _, obj in read_raw_objects(path)]


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
