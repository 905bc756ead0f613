"""PATCH bodies: JSON merge patch (RFC 7386), JSON patch (RFC 6902) and strategic merge patch.

Strategic merge uses a small schema of the list fields whose ``patchStrategy`` is ``merge`` in the
Kubernetes Go types (containers by ``name``, conditions by ``type``, ...); every other list is
replaced, as upstream does. Directives ``$patch``, ``$setElementOrder/``, ``$deleteFromPrimitiveList/``
and ``$retainKeys`` are honoured.
"""

from __future__ import annotations

import copy
from typing import Any

from .errors import ApiError, bad_request, failure
from .time_fields import json_kind

MERGE_PATCH = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
STRATEGIC_PATCH = "application/strategic-merge-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"
APPLY_PATCH_CBOR = "application/apply-patch+cbor"
PATCH_TYPES = (JSON_PATCH, MERGE_PATCH, APPLY_PATCH, STRATEGIC_PATCH)


def patch_error(message: str) -> ApiError:
    """422 for a patch that cannot be applied (the API server's generic Invalid response)."""
    return ApiError(failure(422, "Invalid", message, {}))


# --- JSON merge patch --------------------------------------------------------------------------


def merge_patch(target: Any, patch: Any) -> Any:
    """Apply an RFC 7386 merge patch; returns a new value (the target is not modified)."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result: dict[str, Any] = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def merge_patched_as_go_writes(target: Any, patch: Any) -> Any:
    """``merge_patch(target, patch)`` in the key order the API server's json-patch library writes it
    (gopkg.in/evanphx/json-patch.v4): an object the patch merges into, and an object the patch brings,
    is a Go map (keys sorted); what the patch does not reach keeps its order (raw JSON)."""
    if not isinstance(patch, dict) or not isinstance(target, dict):
        return _go_pruned(patch)
    out = dict(target)
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        elif out.get(key) is None:
            out[key] = _go_pruned(value)
        elif isinstance(out[key], dict) and not isinstance(value, dict):
            out[key] = value  # the patch's raw value, as written
        else:
            out[key] = merge_patched_as_go_writes(out[key], value)
    return dict(sorted(out.items()))


def _go_pruned(value: Any) -> Any:
    """A value the patch brings: objects (also in lists) become Go maps without their null members."""
    if isinstance(value, dict):
        return {k: _go_pruned(v) for k, v in sorted(value.items()) if v is not None}
    if isinstance(value, list):
        return [_go_pruned(v) for v in value]
    return value


def json_patched_as_go_writes(result: Any, operations: list[Any]) -> Any:
    """``result`` of a JSON patch in the key order the json-patch library writes it: the document and
    every object on an operation's path (``path`` and ``from``) are Go maps (keys sorted)."""
    reached: set[tuple[str, ...]] = {()}
    for op in operations:
        for field in ("path", "from"):
            pointer = op.get(field) if isinstance(op, dict) else None
            if isinstance(pointer, str) and pointer.startswith("/"):
                parts = tuple(_pointer(pointer))[:-1]
                reached.update(parts[:i] for i in range(len(parts) + 1))
    return _sorted_where(result, (), reached)


def _sorted_where(value: Any, at: tuple[str, ...], reached: set[tuple[str, ...]]) -> Any:
    if isinstance(value, dict):
        items = sorted(value.items()) if at in reached else value.items()
        return {k: _sorted_where(v, (*at, k), reached) for k, v in items}
    if isinstance(value, list):
        return [_sorted_where(v, (*at, str(i)), reached) for i, v in enumerate(value)]
    return value


# --- JSON patch --------------------------------------------------------------------------------

#: the answer to a JSON patch that does not apply: the API server shows none of the library's error
JSON_PATCH_REJECTED = "the server rejected our request due to an error in our request"


class _Rejected(Exception):
    pass


def _pointer(path: str) -> list[str]:
    if not path.startswith("/"):
        raise _Rejected
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def _position(container: list[Any], part: str, end: int) -> int:
    if not part.isdigit() or int(part) > end:
        raise _Rejected
    return int(part)


def _parent(doc: Any, path: str) -> tuple[Any, str]:
    """The object or array holding ``path``'s last part, and that part (json-patch's findObject)."""
    parts = _pointer(path)
    node = doc
    for part in parts[:-1]:
        if isinstance(node, dict) and node.get(part) is not None:
            node = node[part]
        elif isinstance(node, list):
            node = node[_position(node, part, len(node) - 1)]
        else:
            raise _Rejected
    if not isinstance(node, dict | list):
        raise _Rejected
    return node, parts[-1]


def _apply(doc: Any, op: dict[str, Any]) -> Any:
    """One operation as gopkg.in/evanphx/json-patch.v4 applies it; returns the (new) document."""
    kind, path = op.get("op") or "", op.get("path") or ""
    if kind == "replace" and path == "":
        value = op.get("value")
        if not isinstance(value, dict | list):
            raise _Rejected
        return copy.deepcopy(value)
    if kind in ("move", "copy"):
        source, key = _parent(doc, op.get("from") or "")
        if isinstance(source, dict):
            if kind == "move" and key not in source:
                raise _Rejected
            value = source.pop(key) if kind == "move" else copy.deepcopy(source.get(key))
        else:
            at = _position(source, key, len(source) - 1)
            value = source.pop(at) if kind == "move" else copy.deepcopy(source[at])
        kind, op = "add", {**op, "value": value}
    parent, key = _parent(doc, path)
    value = copy.deepcopy(op.get("value"))
    if kind == "add":
        if isinstance(parent, dict):
            parent[key] = value
        elif key == "-":
            parent.append(value)
        else:
            parent.insert(_position(parent, key, len(parent)), value)
    elif kind == "remove":
        if isinstance(parent, dict):
            if key not in parent:
                raise _Rejected
            del parent[key]
        else:
            parent.pop(_position(parent, key, len(parent) - 1))
    elif kind == "replace":  # a missing key of an object is set, not refused
        if isinstance(parent, dict):
            parent[key] = value
        else:
            parent[_position(parent, key, len(parent) - 1)] = value
    elif kind == "test":
        current = (
            parent.get(key) if isinstance(parent, dict) else parent[_position(parent, key, len(parent) - 1)]
        )
        if current != value:
            raise _Rejected
    else:
        raise _Rejected
    return doc


def _decode_operations(operations: Any) -> list[dict[str, Any]]:
    """The patch as the API server decodes it first (into its ``[]jsonPatchOp``): 400 for a value of
    the wrong JSON type, naming it as encoding/json does."""
    prefix = "error decoding patch: json: cannot unmarshal"
    if operations is None:
        return []
    if not isinstance(operations, list):
        raise bad_request(f"{prefix} {json_kind(operations)} into Go value of type []handlers.jsonPatchOp")
    decoded: list[dict[str, Any]] = []
    for op in operations:
        if op is None:
            decoded.append({})
            continue
        if not isinstance(op, dict):
            raise bad_request(f"{prefix} {json_kind(op)} into Go value of type handlers.jsonPatchOp")
        for field, value in op.items():
            if field in ("op", "path", "from") and value is not None and not isinstance(value, str):
                raise bad_request(
                    f"{prefix} {json_kind(value)} into Go struct field jsonPatchOp.{field} of type string"
                )
        decoded.append(op)
    return decoded


def json_patch(doc: Any, operations: Any) -> Any:
    """Apply an RFC 6902 JSON patch to a deep copy of ``doc`` as the API server's library does (a
    ``replace`` of a missing key sets it, a ``copy`` of one copies null); any operation that does not
    apply is the API server's generic 422, which names nothing."""
    ops = _decode_operations(operations)
    result = copy.deepcopy(doc)
    try:
        for op in ops:
            result = _apply(result, op)
    except _Rejected:
        raise patch_error(JSON_PATCH_REJECTED) from None
    return result


# --- strategic merge patch ---------------------------------------------------------------------

#: field -> (merge key or "" for a list of scalars, schema of the elements)
Schema = dict[str, Any]

_CONTAINER: Schema = {
    "ports": ("containerPort", {}),
    "env": ("name", {}),
    "volumeMounts": ("mountPath", {}),
    "volumeDevices": ("devicePath", {}),
    "resizePolicy": ("resourceName", {}),
}
_METADATA: Schema = {"finalizers": ("", {}), "ownerReferences": ("uid", {})}
_POD_SPEC: Schema = {
    "containers": ("name", _CONTAINER),
    "initContainers": ("name", _CONTAINER),
    "ephemeralContainers": ("name", _CONTAINER),
    "volumes": ("name", {}),
    "imagePullSecrets": ("name", {}),
    "hostAliases": ("ip", {}),
    "schedulingGates": ("name", {}),
    "resourceClaims": ("name", {}),
    "topologySpreadConstraints": ("topologyKey", {}),
}
_CONDITIONS: Schema = {"conditions": ("type", {})}
_POD_STATUS: Schema = {
    "conditions": ("type", {}),
    "podIPs": ("ip", {}),
    "hostIPs": ("ip", {}),
    "resourceClaimStatuses": ("name", {}),
}
_TEMPLATE: Schema = {"metadata": _METADATA, "spec": _POD_SPEC}

SCHEMAS: dict[str, Schema] = {
    "Pod": {"metadata": _METADATA, "spec": _POD_SPEC, "status": _POD_STATUS},
    "Node": {
        "metadata": _METADATA,
        "spec": {"podCIDRs": ("", {})},
        "status": {"conditions": ("type", {}), "addresses": ("type", {})},
    },
    "ReplicaSet": {"metadata": _METADATA, "spec": {"template": _TEMPLATE}, "status": _CONDITIONS},
    "ReplicationController": {"metadata": _METADATA, "spec": {"template": _TEMPLATE}, "status": _CONDITIONS},
    "StatefulSet": {"metadata": _METADATA, "spec": {"template": _TEMPLATE}, "status": _CONDITIONS},
    "Deployment": {"metadata": _METADATA, "spec": {"template": _TEMPLATE}, "status": _CONDITIONS},
    "Job": {"metadata": _METADATA, "spec": {"template": _TEMPLATE}, "status": _CONDITIONS},
    "Service": {"metadata": _METADATA, "spec": {"ports": ("port", {})}, "status": _CONDITIONS},
    "Namespace": {"metadata": _METADATA, "status": _CONDITIONS},
    "ResourceClaim": {"metadata": _METADATA, "status": {"reservedFor": ("uid", {})}},
}
DEFAULT_SCHEMA: Schema = {"metadata": _METADATA, "status": _CONDITIONS}


def _strip_directives(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip_directives(v) for k, v in value.items() if v is not None and not k.startswith("$")}
    if isinstance(value, list):
        return [_strip_directives(v) for v in value if not (isinstance(v, dict) and "$patch" in v)]
    return value


def _index(order: list[Any], item: Any, key: str) -> int:
    probe = item.get(key) if key and isinstance(item, dict) else item
    for i, v in enumerate(order):
        candidate = v.get(key) if key and isinstance(v, dict) else v
        if candidate == probe:
            return i
    return -1


def _normalize_order(merged: list[Any], patch: list[Any], server: list[Any], key: str) -> list[Any]:
    """Order merged items as upstream: patch items in patch order interleaved with server-only items."""
    patch_items = [m for m in merged if _index(patch, m, key) >= 0]
    server_only = [m for m in merged if _index(patch, m, key) < 0]
    patch_items.sort(key=lambda m: _index(patch, m, key))
    server_only.sort(key=lambda m: _index(server, m, key))
    out: list[Any] = []
    i = j = 0
    while i < len(server_only) or j < len(patch_items):
        if i >= len(server_only):
            out.append(patch_items[j])
            j += 1
        elif j >= len(patch_items):
            out.append(server_only[i])
            i += 1
        else:
            li = _index(server, server_only[i], key)
            ri = _index(server, patch_items[j], key)
            if li >= 0 and ri >= 0 and li < ri:
                out.append(server_only[i])
                i += 1
            else:
                out.append(patch_items[j])
                j += 1
    return out


def _merge_list(
    original: list[Any], patch: list[Any], key: str, elem_schema: Schema, field: str
) -> list[Any]:
    if not key:
        merged = list(original)
        for v in patch:
            if v not in merged:
                merged.append(v)
        return _normalize_order(merged, patch, original, "")
    server = list(original)
    plain: list[Any] = []
    for item in patch:
        if not isinstance(item, dict):
            raise patch_error(f"unable to find api field in struct for the merging list {field}")
        directive = item.get("$patch")
        if directive is None:
            if key not in item:
                raise patch_error(f"map: {item} does not contain declared merge key: {key}")
            plain.append(item)
        elif directive == "delete":
            server = [s for s in server if not (isinstance(s, dict) and s.get(key) == item.get(key))]
        elif directive == "replace":
            return [_strip_directives(p) for p in patch if not (isinstance(p, dict) and "$patch" in p)]
        else:
            raise patch_error(f"Unexpected patch type {directive} in merging list")
    merged = list(server)
    for item in plain:
        pos = _index(merged, item, key)
        if pos >= 0 and isinstance(merged[pos], dict):
            merged[pos] = strategic_merge(merged[pos], item, elem_schema)
        else:
            merged.append(_strip_directives(item))
    return _normalize_order(merged, plain, server, key)


def strategic_merge(original: dict[str, Any], patch: dict[str, Any], schema: Schema) -> dict[str, Any]:
    """Apply a strategic merge patch to ``original`` (not modified) and return the result."""
    directive = patch.get("$patch")
    if directive == "replace":
        replaced: dict[str, Any] = _strip_directives({k: v for k, v in patch.items() if k != "$patch"})
        return replaced
    if directive == "delete":
        return {}
    if directive is not None:
        raise patch_error(f"Unexpected patch type {directive}")
    result = dict(original)
    retain = patch.get("$retainKeys")
    if isinstance(retain, list):
        result = {k: v for k, v in result.items() if k in retain}
    orders: dict[str, list[Any]] = {}
    for field, value in patch.items():
        if field in ("$retainKeys", "$patch"):
            continue
        if field.startswith("$setElementOrder/"):
            orders[field.partition("/")[2]] = value
            continue
        if field.startswith("$deleteFromPrimitiveList/"):
            target = field.partition("/")[2]
            current = result.get(target)
            if isinstance(current, list) and isinstance(value, list):
                result[target] = [v for v in current if v not in value]
            continue
        if value is None:
            result.pop(field, None)
            continue
        current = result.get(field)
        sub = schema.get(field)
        if isinstance(value, dict) and isinstance(current, dict):
            result[field] = strategic_merge(current, value, sub if isinstance(sub, dict) else {})
        elif isinstance(value, list) and isinstance(current, list) and isinstance(sub, tuple):
            result[field] = _merge_list(current, value, sub[0], sub[1], field)
        else:
            result[field] = _strip_directives(value)
    for field, order in orders.items():
        current = result.get(field)
        sub = schema.get(field)
        if isinstance(current, list) and isinstance(order, list):
            key = sub[0] if isinstance(sub, tuple) else ""
            known = [o for o in order]
            result[field] = sorted(
                current, key=lambda item: i if (i := _index(known, item, key)) >= 0 else len(known)
            )
    return result


def schema_for(kind: str) -> Schema:
    return SCHEMAS.get(kind, DEFAULT_SCHEMA)


def patched(media: str, current: Any, doc: Any, schema: Schema) -> Any:
    """``current`` with the patch ``doc`` of type ``media`` applied: a JSON patch, a merge patch, or
    else a strategic merge patch by ``schema`` (an apply patch too), whose body must be an object."""
    if media == MERGE_PATCH:
        return merge_patch(current, doc)
    if media == JSON_PATCH:
        return json_patch(current, doc)
    if not isinstance(doc, dict):
        raise bad_request("the body of the request was in an unknown format")
    return strategic_merge(current, doc, schema)
