"""The names the workload controllers derive from hashes, computed as kube-controller-manager does.

* ``pod_template_hash``: a Deployment's ReplicaSet is ``<deployment>-<hash>`` and its pods carry
  ``pod-template-hash: <hash>``. Upstream hashes the Go value of the pod template with 32-bit FNV-1a
  as go-spew prints it (``%#v`` with sorted map keys, no methods, no pointer addresses), then the
  collision count (4 little-endian bytes and 4 zero bytes) when the Deployment has one, and spells the
  decimal sum with ``SafeEncodeString``. The print names every field of every struct in declaration
  order with its Go type, so the Go layout of the template is data here (``go_types``). The value is
  the one the controller holds: the object decoded from protobuf, where empty lists and maps are nil.
* ``revision_hash``: a StatefulSet's ControllerRevision is ``<set>-<hash>`` (its pods'
  ``controller-revision-hash``): 32-bit FNV-1 of the revision's data, the JSON patch
  ``{"spec":{"template":{..., "$patch":"replace"}}}`` that Go encodes with sorted keys, then the
  collision count in decimal.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import cache
from typing import Any

from ksched.apimachinery.quantity import Quantity, QuantityError, parse_json_quantity

from .go_types import NAMED, STRUCTS

#: upstream rand.SafeEncodeString's alphabet (no vowels, no confusable characters)
ALPHANUMS = "bcdfghjklmnpqrstvwxz2456789"
_FNV_OFFSET = 2166136261
_FNV_PRIME = 16777619
_INTS = ("int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64")
_ZERO_TIME = "{Time:(time.Time){wall:(uint64)0 ext:(int64)0 loc:(*time.Location)<nil>}}"


def safe_encode(text: str) -> str:
    """Upstream ``rand.SafeEncodeString``."""
    return "".join(ALPHANUMS[ord(c) % len(ALPHANUMS)] for c in text)


def fnv1a_32(data: bytes, h: int = _FNV_OFFSET) -> int:
    for byte in data:
        h = ((h ^ byte) * _FNV_PRIME) & 0xFFFFFFFF
    return h


def fnv1_32(data: bytes, h: int = _FNV_OFFSET) -> int:
    for byte in data:
        h = ((h * _FNV_PRIME) & 0xFFFFFFFF) ^ byte
    return h


# --- go-spew's %#v of a Go value given as its JSON ---------------------------------------------


@cache
def _underlying(go_type: str) -> str:
    """The type a named non-struct type is defined as (``v1.ResourceList`` -> ``map[...]...``)."""
    return NAMED.get(go_type, go_type)


def _map_parts(go_type: str) -> tuple[str, str]:
    """(key type, value type) of ``map[K]V``."""
    depth = 0
    for i, char in enumerate(go_type[4:], start=4):
        if char == "[":
            depth += 1
        elif char == "]":
            if depth == 0:
                return go_type[4:i], go_type[i + 1 :]
            depth -= 1
    raise ValueError(go_type)


def spew(go_type: str, value: Any, typed: bool = True) -> str:
    """``value`` (decoded JSON; None for absent) as go-spew prints the Go value of ``go_type``.

    ``typed``: whether the type is printed before the value (not for list items and map entries).
    """
    prefix = f"({go_type})" if typed else ""
    if go_type.startswith("*"):
        if value is None:
            return f"({go_type})<nil>" if typed else "<nil>"
        return (prefix if typed else "<*>") + spew(go_type[1:], value, typed=False)
    special = _SPECIAL.get(go_type)
    if special is not None:
        return prefix + special(value)
    fields = STRUCTS.get(go_type)
    if fields is not None:
        return prefix + _struct(fields, value if isinstance(value, dict) else {})
    kind = _underlying(go_type)
    if kind.startswith("[]"):
        if not value:  # nil, or empty: nil once through protobuf
            return prefix + "<nil>"
        return prefix + "[" + " ".join(spew(kind[2:], item, typed=False) for item in value) + "]"
    if kind.startswith("map["):
        if not value:
            return prefix + "<nil>"
        key_type, value_type = _map_parts(kind)
        entries = (
            f"{spew(key_type, key, typed=False)}:{spew(value_type, value[key], typed=False)}"
            for key in sorted(value)
        )
        return prefix + "map[" + " ".join(entries) + "]"
    if kind == "string":
        return prefix + (value if isinstance(value, str) else "")
    if kind == "bool":
        return prefix + ("true" if value else "false")
    if kind in _INTS:
        return prefix + str(int(value or 0))
    raise ValueError(f"no printer for Go type {go_type}")


def _struct(fields: tuple[tuple[str, str, str], ...], obj: dict[str, Any]) -> str:
    parts = []
    for name, json_name, go_type in fields:
        value = obj if json_name == "" else obj.get(json_name)
        parts.append(f"{name}:{spew(go_type, value)}")
    return "{" + " ".join(parts) + "}"


def _quantity(value: Any) -> str:
    """``resource.Quantity``'s fields as parsed from its protobuf string (canonical form)."""
    q: Quantity | None
    try:
        q = None if value is None else parse_json_quantity(value)
    except QuantityError:
        q = None
    if q is None:
        int_part, dec, text, fmt = "{value:(int64)0 scale:(resource.Scale)0}", "(*inf.Dec)<nil>", "", ""
    elif q._dec_scale is None:
        int_part = f"{{value:(int64){q.mantissa} scale:(resource.Scale){q.exponent}}}"
        dec, text, fmt = "(*inf.Dec)<nil>", q._text or "", str(q.format)
    else:
        int_part = "{value:(int64)0 scale:(resource.Scale)0}"
        unscaled = q.mantissa * 10 ** (q.exponent + q._dec_scale)
        words, rest = [], abs(unscaled)
        while rest:
            words.append(str(rest & 0xFFFFFFFFFFFFFFFF))
            rest >>= 64
        negative = "true" if unscaled < 0 else "false"
        dec = (
            f"(*inf.Dec){{unscaled:(big.Int){{neg:(bool){negative} abs:(big.nat)[{' '.join(words)}]}} "
            f"scale:(inf.Scale){q._dec_scale}}}"
        )
        text, fmt = "", str(q.format)
    return (
        f"{{i:(resource.int64Amount){int_part} d:(resource.infDecAmount){{Dec:{dec}}} "
        f"s:(string){text} Format:(resource.Format){fmt}}}"
    )


def _int_or_string(value: Any) -> str:
    if isinstance(value, str):
        return f"{{Type:(intstr.Type)1 IntVal:(int32)0 StrVal:(string){value}}}"
    return f"{{Type:(intstr.Type)0 IntVal:(int32){int(value or 0)} StrVal:(string)}}"


def _time(_value: Any) -> str:
    """``metav1.Time``: a template's timestamps are zero (the API server does not set them)."""
    return _ZERO_TIME


_SPECIAL: dict[str, Callable[[Any], str]] = {
    "resource.Quantity": _quantity,
    "intstr.IntOrString": _int_or_string,
    "v1.Time": _time,
    "types.UID": lambda value: value if isinstance(value, str) else "",
    "v1.FieldsV1": lambda _value: "{Raw:([]uint8)<nil>}",
}


def pod_template_hash(template: dict[str, Any], collision_count: int | None = None) -> str:
    """The ``pod-template-hash`` of a Deployment's ``spec.template`` (upstream ``controller.ComputeHash``)."""
    h = fnv1a_32(spew("v1.PodTemplateSpec", template).encode())
    if collision_count is not None:
        h = fnv1a_32((collision_count & 0xFFFFFFFF).to_bytes(4, "little") + bytes(4), h)
    return safe_encode(str(h))


def go_json(value: Any) -> bytes:
    """``value`` as Go's encoding/json writes a ``map[string]interface{}``: sorted keys, HTML escaped."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    for char, escaped in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026")):
        text = text.replace(char, escaped)
    return text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029").encode()


def revision_data(template: dict[str, Any]) -> dict[str, Any]:
    """A StatefulSet ControllerRevision's ``data``: the patch that restores ``spec.template``."""
    return {"spec": {"template": {**template, "$patch": "replace"}}}


def revision_hash(template: dict[str, Any], collision_count: int = 0) -> str:
    """The hash in a StatefulSet's ControllerRevision name (upstream ``HashControllerRevision``)."""
    h = fnv1_32(go_json(revision_data(template)) + str(collision_count).encode())
    return safe_encode(str(h))
