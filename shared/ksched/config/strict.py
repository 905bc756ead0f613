"""Strict decoding as kube-scheduler does it: every unknown field is an error naming its path.

``unknown_fields(data, Type)`` walks decoded YAML/JSON against a Struct type and yields the
path of each field the type does not have (``profiles[0].plugins.score.enabeld``), in document
order, so all of them are reported at once (msgspec stops at the first).
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from typing import Any

import msgspec.inspect as mi

from ksched.apimachinery.field import child, index


@functools.cache
def _info(tp: Any) -> mi.Type:
    return mi.type_info(tp)


def _containers(tp: mi.Type) -> list[mi.Type]:
    """The struct/list/dict members of a (possibly union) type."""
    members = tp.types if isinstance(tp, mi.UnionType) else (tp,)
    return [m for m in members if isinstance(m, mi.StructType | mi.ListType | mi.DictType)]


def _walk(value: Any, tp: mi.Type, path: str) -> Iterator[str]:
    for member in _containers(tp):
        if isinstance(member, mi.StructType) and isinstance(value, dict):
            fields = {f.encode_name: f.type for f in member.fields}
            for key, item in value.items():
                where = child(path, str(key))
                field_type = fields.get(key)
                if field_type is None:
                    yield where
                else:
                    yield from _walk(item, field_type, where)
            return
        if isinstance(member, mi.ListType) and isinstance(value, list):
            for i, item in enumerate(value):
                yield from _walk(item, member.item_type, index(path, i))
            return
        if isinstance(member, mi.DictType) and isinstance(value, dict):
            for key, item in value.items():
                yield from _walk(item, member.value_type, child(path, str(key)))
            return


def unknown_fields(data: Any, tp: Any, path: str = "") -> list[str]:
    """Paths (``a.b[0].c``) of the fields in ``data`` that the Struct type ``tp`` does not define."""
    return list(_walk(data, _info(tp), path))
