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


# --- JSON patch --------------------------------------------------------------------------------


def _pointer(path: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        raise patch_error(f'JSON pointer "{path}" must start with "/"')
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def _walk(doc: Any, parts: list[str], path: str) -> Any:
    node = doc
    for part in parts:
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            raise patch_error(f'doc is missing path: "{path}": missing value')
    return node


def _container(doc: Any, parts: list[str], path: str) -> tuple[Any, str]:
    return _walk(doc, parts[:-1], path), parts[-1]


def _get(doc: Any, path: str) -> Any:
    return _walk(doc, _pointer(path), path)


def _add(doc: Any, path: str, value: Any) -> Any:
    parts = _pointer(path)
    if not parts:
        return value
    parent, last = _container(doc, parts, path)
    if isinstance(parent, dict):
        parent[last] = value
    elif isinstance(parent, list):
        if last == "-":
            parent.append(value)
        elif last.isdigit() and int(last) <= len(parent):
            parent.insert(int(last), value)
        else:
            raise patch_error(f'add operation does not apply: doc is missing path: "{path}": missing value')
    else:
        raise patch_error(f'doc is missing path: "{path}": missing value')
    return doc


def _remove(doc: Any, path: str, op: str = "remove") -> Any:
    parts = _pointer(path)
    if not parts:
        raise patch_error(f'{op} operation does not apply: doc is missing path: "{path}": missing value')
    parent, last = _container(doc, parts, path)
    if isinstance(parent, dict) and last in parent:
        return parent.pop(last)
    if isinstance(parent, list) and last.isdigit() and int(last) < len(parent):
        return parent.pop(int(last))
    raise patch_error(f'{op} operation does not apply: doc is missing path: "{path}": missing value')


def json_patch(doc: Any, operations: Any) -> Any:
    """Apply an RFC 6902 JSON patch to a deep copy of ``doc``."""
    if not isinstance(operations, list):
        raise bad_request("json: cannot unmarshal object into Go value of type jsonpatch.Patch")
    result = copy.deepcopy(doc)
    for op in operations:
        if not isinstance(op, dict):
            raise bad_request("json: cannot unmarshal into Go value of type jsonpatch.Operation")
        kind = op.get("op")
        path, source = op.get("path", ""), op.get("from", "")
        if not isinstance(path, str):
            raise patch_error("path must be a string")
        if not isinstance(source, str):
            raise patch_error("from must be a string")
        if kind == "add":
            result = _add(result, path, copy.deepcopy(op.get("value")))
        elif kind == "remove":
            _remove(result, path)
        elif kind == "replace":
            _remove(result, path, "replace")
            result = _add(result, path, copy.deepcopy(op.get("value")))
        elif kind == "move":
            value = _remove(result, source, "move")
            result = _add(result, path, value)
        elif kind == "copy":
            result = _add(result, path, copy.deepcopy(_get(result, source)))
        elif kind == "test":
            if _get(result, path) != op.get("value"):
                raise patch_error(f"testing value {path} failed: test failed")
        else:
            raise patch_error(f"Unexpected kind: {kind}")
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
