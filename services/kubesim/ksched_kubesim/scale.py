"""The ``/scale`` subresource of Deployments, ReplicaSets and StatefulSets (``autoscaling/v1`` Scale):
what ``kubectl scale`` and autoscalers read and write. A Scale carries the object's name, namespace,
uid, resourceVersion and creationTimestamp; writing one sets ``spec.replicas`` of the object."""

from __future__ import annotations

from typing import Any

from . import errors, patch
from .errors import invalid, invalid_value
from .jsonio import JSON, decode
from .registry import Registry
from .resources import ResourceType
from .selectors import format_label_selector

SCALE_API_VERSION = "autoscaling/v1"


def scale_of(obj: JSON) -> JSON:
    """The Scale of a stored object."""
    meta = obj["metadata"]
    scale_meta = {
        key: meta[key]
        for key in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
        if key in meta
    }
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    return {
        "kind": "Scale",
        "apiVersion": SCALE_API_VERSION,
        "metadata": scale_meta,
        "spec": {"replicas": spec.get("replicas", 0)} if spec.get("replicas") else {},
        "status": {
            "replicas": status.get("replicas", 0),
            "selector": format_label_selector(spec.get("selector")),
        },
    }


def get_scale(registry: Registry, rt: ResourceType, namespace: str, name: str) -> JSON:
    return scale_of(registry.get(rt, namespace, name).obj())


def _check(body: Any, name: str) -> int:
    if not isinstance(body, dict):
        raise errors.bad_request("the body of the request was in an unknown format")
    kind = body.get("kind")
    if kind and kind != "Scale":
        raise errors.bad_request(f"{kind} is not a Scale")
    replicas = (body.get("spec") or {}).get("replicas", 0) if isinstance(body.get("spec"), dict) else 0
    if not isinstance(replicas, int) or isinstance(replicas, bool):
        raise errors.bad_request(
            'Scale in version "v1" cannot be handled as a Scale: json: cannot unmarshal '
            "into Go struct field ScaleSpec.spec.replicas of type int32"
        )
    if replicas < 0:
        raise invalid(
            "Scale",
            "autoscaling",
            name,
            [invalid_value("spec.replicas", replicas, "must be greater than or equal to 0")],
        )
    return replicas


def update_scale(
    registry: Registry, rt: ResourceType, namespace: str, name: str, body: Any, dry_run: bool, manager: str
) -> JSON:
    """PUT ``/scale``: ``spec.replicas`` of the object (a resourceVersion in the Scale is a precondition)."""
    replicas = _check(body, name)
    entry = registry.get(rt, namespace, name)
    given_rv = ((body.get("metadata") or {}) if isinstance(body, dict) else {}).get("resourceVersion")
    if given_rv and given_rv != str(entry.rv):
        raise errors.stale(rt.plural, rt.group, name)
    obj = entry.obj()
    obj["spec"] = {**(obj.get("spec") or {}), "replicas": replicas}
    updated = registry.update(rt, namespace, name, obj, None, dry_run, manager)
    return scale_of(updated.obj())


def patch_scale(
    registry: Registry,
    rt: ResourceType,
    namespace: str,
    name: str,
    content_type: str,
    raw: bytes,
    dry_run: bool,
    manager: str,
) -> JSON:
    """PATCH ``/scale``: the patch applies to the Scale, whose replicas are then written."""
    media = content_type.split(";", 1)[0].strip().lower()
    if media not in (patch.MERGE_PATCH, patch.JSON_PATCH, patch.STRATEGIC_PATCH):
        raise errors.unsupported_media_type(
            media, [patch.JSON_PATCH, patch.MERGE_PATCH, patch.STRATEGIC_PATCH]
        )
    try:
        doc = decode(raw or b"{}")
    except Exception as exc:
        raise errors.bad_request(f"error decoding patch: {exc}") from None
    result = patch.patched(media, get_scale(registry, rt, namespace, name), doc, {})
    return update_scale(registry, rt, namespace, name, result, dry_run, manager)
