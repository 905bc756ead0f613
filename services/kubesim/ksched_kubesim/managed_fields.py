"""``metadata.managedFields`` as the API server's field manager writes them.

Every create, update and patch through the API records which fields the writer (``fieldManager``,
else the User-Agent up to its first ``/``, else ``unknown``) set or changed, as a ``FieldsV1`` set in
an ``Update`` entry (``Apply`` for server-side apply) per manager, operation, API version and
subresource. Internal writes that bypass the handlers (binding, eviction, deletion) leave the entries
alone, as upstream's do. The algorithm follows structured-merge-diff's ``Updater.Update``:

- compare the live object with the new one (a create compares with the kind's zero value, after
  scheme defaulting and before admission): fields added or changed, and fields removed;
- the writer's set becomes its previous set without the removed fields, plus the changed ones;
  every other manager loses the changed and removed fields; empty entries disappear; the
  writer's ``time`` moves only when it changed something;
- ``metadata.name``, ``uid``, ``resourceVersion`` ... are never tracked, nor status on the main
  resource or anything but status and metadata on ``/status`` (the strategies' reset fields).

Lists are atomic unless the schema below names their keys (``listType=map``) or marks them as sets,
as the Go types' ``+listType`` markers do; maps and structs are granular unless marked atomic.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from ksched.api.timestamps import rfc3339

from .jsonio import JSON, decode, encode

MAX_MANAGER_LENGTH = 128
UNKNOWN_MANAGER = "unknown"
#: Who kubesim's own controllers write as (the components they stand in for).
KUBELET_MANAGER = "kubelet"
CONTROLLER_MANAGER = "kube-controller-manager"
PROVISIONER_MANAGER = "csi-provisioner"


@dataclass(frozen=True, slots=True)
class ListMap:
    """An associative list (``+listType=map``) keyed by ``keys``; ``item`` is its elements' schema."""

    keys: tuple[str, ...]
    item: dict[str, Any]


ATOMIC = "atomic"
SET = "set"

_ATOMIC_AFFINITY = {
    "requiredDuringSchedulingIgnoredDuringExecution": ATOMIC,
    "preferredDuringSchedulingIgnoredDuringExecution": ATOMIC,
}
_CONTAINER: dict[str, Any] = {
    "ports": ListMap(("containerPort", "protocol"), {}),
    "env": ListMap(("name",), {}),
    "volumeMounts": ListMap(("mountPath",), {}),
    "volumeDevices": ListMap(("devicePath",), {}),
    "resources": {"claims": ListMap(("name",), {})},
}
_METADATA: dict[str, Any] = {"finalizers": SET, "ownerReferences": ListMap(("uid",), {})}
_POD_SPEC: dict[str, Any] = {
    "volumes": ListMap(("name",), {}),
    "initContainers": ListMap(("name",), _CONTAINER),
    "containers": ListMap(("name",), _CONTAINER),
    "ephemeralContainers": ListMap(("name",), _CONTAINER),
    "nodeSelector": ATOMIC,
    "imagePullSecrets": ListMap(("name",), {}),
    "hostAliases": ListMap(("ip",), {}),
    "affinity": {
        "nodeAffinity": _ATOMIC_AFFINITY,
        "podAffinity": _ATOMIC_AFFINITY,
        "podAntiAffinity": _ATOMIC_AFFINITY,
    },
    "topologySpreadConstraints": ListMap(("topologyKey", "whenUnsatisfiable"), {"labelSelector": ATOMIC}),
    "schedulingGates": ListMap(("name",), {}),
    "resourceClaims": ListMap(("name",), {}),
}
_POD_STATUS: dict[str, Any] = {
    "conditions": ListMap(("type",), {}),
    "podIPs": ListMap(("ip",), {}),
    "resourceClaimStatuses": ListMap(("name",), {}),
}
_CONDITIONS: dict[str, Any] = {"conditions": ListMap(("type",), {})}
_TEMPLATE_SPEC: dict[str, Any] = {
    "selector": ATOMIC,
    "template": {"metadata": _METADATA, "spec": _POD_SPEC},
}

SCHEMAS: dict[str, dict[str, Any]] = {
    "Pod": {"metadata": _METADATA, "spec": _POD_SPEC, "status": _POD_STATUS},
    "Node": {
        "metadata": _METADATA,
        "spec": {"podCIDRs": SET},
        "status": {"conditions": ListMap(("type",), {}), "addresses": ListMap(("type",), {})},
    },
    "ReplicaSet": {"metadata": _METADATA, "spec": _TEMPLATE_SPEC, "status": _CONDITIONS},
    "ReplicationController": {"metadata": _METADATA, "spec": _TEMPLATE_SPEC, "status": _CONDITIONS},
    "StatefulSet": {"metadata": _METADATA, "spec": _TEMPLATE_SPEC, "status": _CONDITIONS},
    "PodDisruptionBudget": {"metadata": _METADATA, "spec": {"selector": ATOMIC}, "status": _CONDITIONS},
    "Service": {"metadata": _METADATA, "spec": {"ports": ListMap(("port", "protocol"), {})}},
}
DEFAULT_SCHEMA: dict[str, Any] = {"metadata": _METADATA, "status": _CONDITIONS}

#: What the live object is on create: the kind's zero value as Go serialises it.
ZERO: dict[str, JSON] = {
    "Pod": {"metadata": {}, "spec": {"containers": None}, "status": {}},
    "TokenReview": {"metadata": {}, "spec": {}, "status": {"user": {}}},
    "SubjectAccessReview": {"metadata": {}, "spec": {}, "status": {"allowed": False}},
}
DEFAULT_ZERO: JSON = {"metadata": {}, "spec": {}, "status": {}}

#: ObjectMeta fields no manager owns (structured-merge-diff's strip set).
_UNTRACKED_META = frozenset(
    {
        "name",
        "namespace",
        "creationTimestamp",
        "selfLink",
        "uid",
        "clusterName",
        "generation",
        "managedFields",
        "resourceVersion",
    }
)
#: /status writes do not own these (pods' status strategy resets them).
_STATUS_RESET_META = frozenset({"deletionTimestamp", "ownerReferences"})

_MISSING: Any = object()

# --- field sets ---------------------------------------------------------------------------------
# A set is a trie of dicts keyed by path element (``f:name``, ``k:{...}``, ``v:...``); the key "."
# marks the path itself as a member, which is also how FieldsV1 writes an inner member.

FieldSet = dict[str, Any]


def _insert(root: FieldSet, path: tuple[str, ...]) -> None:
    node = root
    for element in path:
        node = node.setdefault(element, {})
    node["."] = True


def _difference(target: FieldSet, other: FieldSet) -> None:
    """Remove from ``target`` every path that is a member of ``other`` (not their children)."""
    for key, sub in other.items():
        if key == ".":
            target.pop(".", None)
            continue
        child = target.get(key)
        if child is None:
            continue
        _difference(child, sub)
        if not child:
            del target[key]


def _union(target: FieldSet, other: FieldSet) -> None:
    for key, sub in other.items():
        if key == ".":
            target["."] = True
        else:
            _union(target.setdefault(key, {}), sub)


def _from_v1(fields: Any) -> FieldSet:
    if not isinstance(fields, dict):
        return {}
    if not fields:
        return {".": True}
    out: FieldSet = {}
    for key, sub in fields.items():
        if key == ".":
            out["."] = True
        else:
            child = _from_v1(sub)
            if child:
                out[key] = child
    return out


@functools.lru_cache(maxsize=4096)
def _order(element: str) -> tuple[int, Any]:
    """structured-merge-diff's PathElement order: fields, then keys, then values, by content."""
    kind, _, text = element.partition(":")
    if kind == "f":
        return (0, text)
    value = decode(text)
    if kind == "k" and isinstance(value, dict):
        return (1, tuple((k, _value_order(v)) for k, v in value.items()))
    return (2 if kind == "v" else 3, _value_order(value))


def _value_order(value: Any) -> tuple[int, Any]:
    if value is None:
        return (0, 0)
    if isinstance(value, bool):
        return (1, value)
    if isinstance(value, int | float):
        return (2, value)
    if isinstance(value, str):
        return (3, value)
    return (4, encode(value))


def _to_v1(node: FieldSet) -> JSON:
    children = sorted((k for k in node if k != "."), key=_order)
    out: JSON = {}
    if children and node.get("."):
        out["."] = {}
    for key in children:
        out[key] = _to_v1(node[key])
    return out


# --- comparison ---------------------------------------------------------------------------------


def _key_element(item: Any, keys: tuple[str, ...]) -> str | None:
    if not isinstance(item, dict):
        return None
    return "k:" + encode({k: item[k] for k in sorted(keys) if k in item}).decode()


def _compare(
    lhs: Any, rhs: Any, schema: Any, path: tuple[str, ...], changed: FieldSet, removed: FieldSet
) -> None:
    if lhs is _MISSING and rhs is _MISSING:
        return
    if lhs is _MISSING:
        _insert(changed, path)
        _descend(None, rhs, schema, path, changed, removed)
        return
    if rhs is _MISSING:
        _insert(removed, path)
        _descend(lhs, None, schema, path, changed, removed)
        return
    if schema == ATOMIC or not _granular(lhs, rhs):
        if lhs != rhs:
            _insert(changed, path)
        return
    _descend(lhs, rhs, schema, path, changed, removed)


def _granular(lhs: Any, rhs: Any) -> bool:
    """Both sides are containers of one shape (null counts as an empty container)."""
    if lhs is None:
        return isinstance(rhs, dict | list)
    if rhs is None:
        return isinstance(lhs, dict | list)
    return (isinstance(lhs, dict) and isinstance(rhs, dict)) or (
        isinstance(lhs, list) and isinstance(rhs, list)
    )


def _descend(
    lhs: Any, rhs: Any, schema: Any, path: tuple[str, ...], changed: FieldSet, removed: FieldSet
) -> None:
    """Compare the children of two containers (``None``: the side has none)."""
    if schema == ATOMIC:
        return
    sample = lhs if lhs is not None else rhs
    if isinstance(sample, dict):
        subs = schema if isinstance(schema, dict) else {}
        left = lhs or {}
        right = rhs or {}
        for key in left.keys() | right.keys():
            _compare(
                left.get(key, _MISSING),
                right.get(key, _MISSING),
                subs.get(key),
                (*path, "f:" + key),
                changed,
                removed,
            )
    elif isinstance(sample, list):
        if isinstance(schema, ListMap):
            left_items = _keyed(lhs or [], schema.keys)
            right_items = _keyed(rhs or [], schema.keys)
            for element in left_items.keys() | right_items.keys():
                _compare(
                    left_items.get(element, _MISSING),
                    right_items.get(element, _MISSING),
                    schema.item,
                    (*path, element),
                    changed,
                    removed,
                )
        elif schema == SET:
            left_values = {"v:" + encode(v).decode() for v in lhs or []}
            right_values = {"v:" + encode(v).decode() for v in rhs or []}
            for element in right_values - left_values:
                _insert(changed, (*path, element))
            for element in left_values - right_values:
                _insert(removed, (*path, element))
        elif lhs is not None and rhs is not None and lhs != rhs:
            _insert(changed, path)


def _keyed(items: list[Any], keys: tuple[str, ...]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for item in items:
        element = _key_element(item, keys)
        if element is not None:
            out[element] = item
    return out


def _tracked(obj: JSON, subresource: str | None, has_status: bool, kind: str) -> JSON:
    """The part of ``obj`` a write of this kind and subresource may own."""
    meta = obj.get("metadata") or {}
    skip = _UNTRACKED_META | (
        _STATUS_RESET_META if subresource == "status" and kind == "Pod" else frozenset()
    )
    out: JSON = {"metadata": {k: v for k, v in meta.items() if k not in skip}}
    for key, value in obj.items():
        if key in ("metadata", "kind", "apiVersion"):
            continue
        if subresource == "status" and key != "status":
            continue
        if subresource is None and has_status and key == "status":
            continue
        out[key] = value
    return out


def changes(
    old: JSON | None, new: JSON, kind: str, subresource: str | None, has_status: bool
) -> tuple[FieldSet, FieldSet]:
    """(fields added or changed, fields removed) by a write of ``new`` over ``old`` (None: a create)."""
    base = old if old is not None else ZERO.get(kind, DEFAULT_ZERO)
    schema = SCHEMAS.get(kind, DEFAULT_SCHEMA)
    changed: FieldSet = {}
    removed: FieldSet = {}
    _descend(
        _tracked(base, subresource, has_status, kind),
        _tracked(new, subresource, has_status, kind),
        schema,
        (),
        changed,
        removed,
    )
    meta = changed.get("f:metadata")
    if meta is not None:
        meta.pop(".", None)  # metadata itself is never owned, its fields are
        if not meta:
            del changed["f:metadata"]
    return changed, removed


# --- entries ------------------------------------------------------------------------------------


def manager_name(field_manager: str | None, user_agent: str) -> str:
    """``fieldManager`` if given, else the User-Agent up to its first ``/`` (printable, ≤ 128)."""
    if field_manager:
        return field_manager
    prefix = "".join(ch for ch in user_agent.split("/", 1)[0] if ch.isprintable())
    return prefix.encode()[:MAX_MANAGER_LENGTH].decode(errors="ignore") or UNKNOWN_MANAGER


def _identity(entry: JSON) -> tuple[str, str, str, str]:
    return (
        entry.get("manager", ""),
        entry.get("operation", ""),
        entry.get("apiVersion", "") if entry.get("operation") == "Update" else "",
        entry.get("subresource", ""),
    )


def _sort_key(entry: JSON) -> tuple[str, str, str, str, str]:
    return (
        entry.get("operation", ""),
        entry.get("time") or "",
        entry.get("manager", ""),
        entry.get("subresource", ""),
        entry.get("apiVersion", ""),
    )


def record(
    old: JSON | None,
    new: JSON,
    *,
    manager: str,
    api_version: str,
    kind: str,
    subresource: str | None = None,
    has_status: bool = False,
    operation: str = "Update",
) -> None:
    """Set ``new``'s ``metadata.managedFields`` for a write by ``manager`` over ``old`` (None: create).

    The entries start from ``new``'s own when a main-resource write carries some (``[]`` resets
    them), else from ``old``'s, as upstream's field manager decodes them.
    """
    meta = new.setdefault("metadata", {})
    given = meta.pop("managedFields", None)
    if subresource is None and isinstance(given, list) and (given or old is not None):
        entries = [e for e in given if isinstance(e, dict)]
    else:
        entries = list(((old or {}).get("metadata") or {}).get("managedFields") or [])
    changed, removed = changes(old, new, kind, subresource, has_status)
    me = (manager, operation, api_version if operation == "Update" else "", subresource or "")
    own: FieldSet = {}
    own_entry: JSON | None = None
    kept: list[tuple[JSON, FieldSet]] = []
    for entry in entries:
        fields = _from_v1(entry.get("fieldsV1"))
        fields.pop(".", None)  # the object itself is no field (an empty FieldsV1 reads as one)
        if _identity(entry) == me:
            own, own_entry = fields, entry
            continue
        _difference(fields, changed)
        _difference(fields, removed)
        if fields:
            kept.append((entry, fields))
    if changed or own_entry is not None:
        if own:
            _difference(own, removed)
            _union(own, changed)
        else:
            own = changed
        if own:
            entry = {
                "manager": manager,
                "operation": operation,
                "apiVersion": api_version,
                "time": rfc3339() if changed or own_entry is None else own_entry.get("time"),
                "fieldsType": "FieldsV1",
            }
            if subresource:
                entry["subresource"] = subresource
            kept.append((entry, own))
    out = [_entry(entry, fields) for entry, fields in kept]
    if out:
        meta["managedFields"] = sorted(out, key=_sort_key)


def _entry(entry: JSON, fields: FieldSet) -> JSON:
    """A ManagedFieldsEntry in Go field order with ``fields`` as its FieldsV1."""
    out: JSON = {k: entry[k] for k in ("manager", "operation", "apiVersion", "time") if k in entry}
    out["fieldsType"] = "FieldsV1"
    out["fieldsV1"] = _to_v1(fields)
    if entry.get("subresource"):
        out["subresource"] = entry["subresource"]
    return out
