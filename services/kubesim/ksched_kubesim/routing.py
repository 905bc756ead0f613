"""URL parsing: which resource, namespace, name and subresource a request addresses."""

from __future__ import annotations

from dataclasses import dataclass

from . import errors
from .resources import BINDINGS, BY_PATH, ResourceType

_NAMESPACE_SUBRESOURCES = ("status", "finalize")


@dataclass(frozen=True, slots=True)
class ResourceRequest:
    rt: ResourceType
    namespace: str | None  # None: cluster-scoped resource, or all namespaces
    name: str | None
    subresource: str | None
    watch_path: bool  # the deprecated /watch/ URL prefix


def parse_resource_path(path: str) -> ResourceRequest | tuple[str, str] | None:
    """Parse ``/api/v1/...`` or ``/apis/g/v/...``.

    Returns a ResourceRequest, ``(group, version)`` for a group-version discovery document, or None
    when the path is not under a served group version.
    """
    parts = [p for p in path.split("/") if p]
    if len(parts) >= 2 and parts[0] == "api":
        group, version, rest = "", parts[1], parts[2:]
    elif len(parts) >= 3 and parts[0] == "apis":
        group, version, rest = parts[1], parts[2], parts[3:]
    else:
        return None
    if not rest:
        return (group, version)
    watch_path = False
    if rest[0] == "watch":
        watch_path, rest = True, rest[1:]
        if not rest:
            raise errors.resource_not_found()
    namespace: str | None = None
    if rest[0] == "namespaces" and len(rest) >= 3 and rest[2] not in _NAMESPACE_SUBRESOURCES:
        namespace, rest = rest[1], rest[2:]
    plural = rest[0]
    rt = (
        BINDINGS
        if (group == "" and version == "v1" and plural == "bindings")
        else BY_PATH.get((group, version, plural))
    )
    if rt is None or len(rest) > 3:
        raise errors.resource_not_found()
    name = rest[1] if len(rest) >= 2 else None
    subresource = rest[2] if len(rest) == 3 else None
    if subresource is not None and subresource not in rt.subresources:
        raise errors.resource_not_found()
    if rt.namespaced and namespace is None and name is not None:
        raise errors.resource_not_found()
    if not rt.namespaced and namespace is not None:
        raise errors.resource_not_found()
    return ResourceRequest(rt, namespace, name, subresource, watch_path)
