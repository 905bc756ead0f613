"""Generates ``go_types.py``: the Go struct layout of ``v1.PodTemplateSpec`` and every type it reaches.

The Deployment controller names a ReplicaSet after a hash of the Go value of the pod template as
go-spew prints it (``workload_hash``), which names every field of every struct in declaration order
with its Go type. This reads the Go declarations (field names, order, types, JSON names) from the
k8s.io/api and k8s.io/apimachinery sources of the release and writes them as Python data::

    git --git-dir=... show HEAD:vendor/k8s.io/api/core/v1/types.go > core.go
    git --git-dir=... show HEAD:vendor/k8s.io/apimachinery/pkg/apis/meta/v1/types.go > meta.go
    python -m ksched_kubesim.go_types_gen core.go meta.go > services/kubesim/ksched_kubesim/go_types.py
    ruff format services/kubesim/ksched_kubesim/go_types.py

Only declarations are read (names and types, as an API reference lists them), no code.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

_TYPE_DECL = re.compile(r"^type (\w+) (.+?)\s*$")
_FIELD = re.compile(r"^\t(\w+)\s+([^\s`]+)\s*(?:`([^`]*)`)?")
_EMBEDDED = re.compile(r"^\t(\*?[\w.]+)\s*(?:`([^`]*)`)?\s*$")
_JSON_TAG = re.compile(r'json:"([^"]*)"')
_BUILTINS = {"string", "bool", "int", "int32", "int64", "uint", "uint32", "uint64", "float64", "byte"}
#: types of other packages that the printer handles itself (workload_hash)
_EXTERNAL = {"resource.Quantity", "intstr.IntOrString", "types.UID", "v1.FieldsV1"}
ROOT = "v1.PodTemplateSpec"

Field = tuple[str, str, str]


def _qualify(expr: str) -> str:
    """A Go type expression as reflect prints it (``[]Container`` -> ``[]v1.Container``)."""
    if expr.startswith("*"):
        return "*" + _qualify(expr[1:])
    if expr.startswith("[]"):
        return "[]" + _qualify(expr[2:])
    if expr.startswith("map["):
        key, _, value = expr[4:].partition("]")
        return f"map[{_qualify(key)}]{_qualify(value)}"
    if expr in _BUILTINS:
        return "uint8" if expr == "byte" else expr
    if "." in expr:
        prefix, _, name = expr.partition(".")
        return f"v1.{name}" if prefix == "metav1" else expr
    return f"v1.{expr}"


def parse(source: str) -> tuple[dict[str, list[Field]], dict[str, str]]:
    """The structs (Go name, JSON name or '' for inline, type) and named non-struct types of a file."""
    structs: dict[str, list[Field]] = {}
    named: dict[str, str] = {}
    current: list[Field] | None = None
    for line in source.splitlines():
        if current is not None:
            if line.startswith("}"):
                current = None
                continue
            if line.strip().startswith("//") or not line.strip():
                continue
            embedded = _EMBEDDED.match(line)
            field = _FIELD.match(line)
            if embedded and (field is None or field.group(2).startswith("`")):
                type_expr, tag = embedded.group(1), embedded.group(2) or ""
                name = type_expr.lstrip("*").rpartition(".")[2]
                found = _JSON_TAG.search(tag)
                json_name = found.group(1).split(",")[0] if found else ""
                current.append((name, json_name, _qualify(type_expr)))
            elif field:
                name, type_expr, tag = field.group(1), field.group(2), field.group(3) or ""
                found = _JSON_TAG.search(tag)
                json_name = found.group(1).split(",")[0] if found else name
                if json_name == "-":
                    json_name = ""
                current.append((name, json_name or name, _qualify(type_expr)))
            continue
        decl = _TYPE_DECL.match(line)
        if decl is None:
            continue
        name, rest = decl.groups()
        if rest == "struct {":
            current = structs.setdefault(f"v1.{name}", [])
        elif rest == "struct{}":
            structs[f"v1.{name}"] = []
        elif not rest.startswith("="):
            named[f"v1.{name}"] = _qualify(rest)
    return structs, named


def _named_in(expr: str) -> list[str]:
    return re.findall(r"\w+\.\w+", expr)


def reachable(
    structs: dict[str, list[Field]], named: dict[str, str], twice: set[str]
) -> tuple[list[str], list[str]]:
    """The structs and named types reachable from the pod template (none of them declared twice)."""
    seen_structs: list[str] = []
    seen_named: list[str] = []
    todo = [ROOT]
    while todo:
        name = todo.pop()
        if name in seen_structs or name in seen_named or name in _EXTERNAL or name == "v1.Time":
            continue
        if name in twice:
            raise SystemExit(f"{name} is declared in two packages")
        if name in structs:
            seen_structs.append(name)
            for _, _, expr in structs[name]:
                todo.extend(_named_in(expr))
        elif name in named:
            seen_named.append(name)
            todo.extend(_named_in(named[name]))
        else:
            raise SystemExit(f"unknown Go type {name}")
    return sorted(seen_structs), sorted(seen_named)


def render(structs: dict[str, list[Field]], named: dict[str, str], twice: set[str]) -> str:
    struct_names, named_names = reachable(structs, named, twice)
    out = [
        '"""Go struct layout of ``v1.PodTemplateSpec`` and the types it reaches, for ``workload_hash``.',
        "",
        "Generated by ``python -m ksched_kubesim.go_types_gen`` from the k8s.io/api 1.36.2 declarations; do",
        'not edit. STRUCTS: each field as (Go name, JSON name or "" when inlined, Go type as reflect',
        'prints it). NAMED: named non-struct types and their underlying type."""',
        "",
        "from __future__ import annotations",
        "",
        "STRUCTS: dict[str, tuple[tuple[str, str, str], ...]] = {",
    ]
    for name in struct_names:
        fields = structs[name]
        out.append(f"    {name!r}: (")
        out.extend(f"        {f!r}," for f in fields)
        out.append("    ),")
    out.append("}")
    out.append("")
    out.append("NAMED: dict[str, str] = {")
    out.extend(f"    {name!r}: {named[name]!r}," for name in named_names)
    out.append("}")
    return "\n".join(out) + "\n"


def main(argv: list[str]) -> None:
    structs: dict[str, list[Field]] = {}
    named: dict[str, str] = {}
    twice: set[str] = set()
    for path in argv:
        more_structs, more_named = parse(Path(path).read_text())
        twice |= (set(more_structs) | set(more_named)) & (set(structs) | set(named))
        structs.update(more_structs)
        named.update(more_named)
    sys.stdout.write(render(structs, named, twice))


if __name__ == "__main__":
    main(sys.argv[1:])
