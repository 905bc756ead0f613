"""A small kustomize renderer for the features deploy/ uses (no kubectl or kustomize binary here).

Supported, with kustomize v5's meaning: ``resources`` (files, or directories holding a
``kustomization.yaml``), ``components`` (``kind: Component``), ``configMapGenerator`` with
``files`` / ``literals`` and ``disableNameSuffixHash: true``, ``images`` (``newName`` /
``newTag`` / ``digest``), ``replicas``, and ``patches`` whose patch (inline or ``path``) is an RFC
6902 JSON patch with a ``target`` of kind and name. Anything else is an error naming the field,
so deploy/ cannot quietly come to depend on a feature this renderer does not implement.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml

Resource = dict[str, Any]

SUPPORTED_FIELDS = {
    "apiVersion",
    "kind",
    "resources",
    "components",
    "configMapGenerator",
    "generatorOptions",
    "images",
    "replicas",
    "patches",
}
POD_TEMPLATE_KINDS = {"Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job"}


class KustomizeError(ValueError):
    pass


def resource_id(res: Resource) -> tuple[str, str, str, str]:
    meta = res.get("metadata") or {}
    return (
        str(res.get("apiVersion")),
        str(res.get("kind")),
        str(meta.get("namespace", "")),
        str(meta["name"]),
    )


def build(directory: str | Path) -> list[Resource]:
    """Render the kustomization in ``directory``."""
    return _build(Path(directory), expect_kind="Kustomization")


def _load_kustomization(directory: Path, expect_kind: str) -> dict[str, Any]:
    path = directory / "kustomization.yaml"
    if not path.is_file():
        raise KustomizeError(f"{directory}: no kustomization.yaml")
    data = yaml.safe_load(path.read_text()) or {}
    unknown = set(data) - SUPPORTED_FIELDS
    if unknown:
        raise KustomizeError(f"{path}: fields not supported by this renderer: {sorted(unknown)}")
    if data.get("kind", "Kustomization") != expect_kind:
        raise KustomizeError(f"{path}: kind {data.get('kind')!r}, expected {expect_kind}")
    return data


def _build(directory: Path, expect_kind: str, resources: list[Resource] | None = None) -> list[Resource]:
    data = _load_kustomization(directory, expect_kind)
    out = resources if resources is not None else []
    for entry in data.get("resources", []):
        target = (directory / entry).resolve()
        if target.is_dir():
            _add(out, _build(target, "Kustomization"), directory)
        else:
            _add(out, [r for r in yaml.safe_load_all(target.read_text()) if r], directory)
    for entry in data.get("components", []):
        _build((directory / entry).resolve(), "Component", out)
    _add(out, _generate_config_maps(directory, data), directory)
    for patch in data.get("patches", []):
        _apply_patch(out, directory, patch)
    for image in data.get("images", []):
        _set_image(out, image)
    for replica in data.get("replicas", []):
        _set_replicas(out, replica)
    return out


def _add(out: list[Resource], new: list[Resource], directory: Path) -> None:
    seen = {resource_id(r) for r in out}
    for res in new:
        rid = resource_id(res)
        if rid in seen:
            raise KustomizeError(f"{directory}: may not add resource with an already registered id: {rid}")
        seen.add(rid)
        out.append(res)


def _generate_config_maps(directory: Path, data: dict[str, Any]) -> list[Resource]:
    global_no_hash = (data.get("generatorOptions") or {}).get("disableNameSuffixHash", False)
    maps = []
    for gen in data.get("configMapGenerator", []):
        no_hash = (gen.get("options") or {}).get("disableNameSuffixHash", global_no_hash)
        if not no_hash:
            raise KustomizeError(f"{directory}: configMapGenerator {gen['name']}: set disableNameSuffixHash")
        unknown = set(gen) - {"name", "namespace", "files", "literals", "options"}
        if unknown:
            raise KustomizeError(f"{directory}: configMapGenerator fields not supported: {sorted(unknown)}")
        values: dict[str, str] = {}
        for item in gen.get("files", []):
            key, _, path = item.rpartition("=")
            source = (directory / path).resolve()
            if directory.resolve() not in source.parents:
                raise KustomizeError(f"{directory}: {path} is not in or below the kustomization directory")
            values[key or source.name] = source.read_text()
        for item in gen.get("literals", []):
            key, _, value = item.partition("=")
            values[key] = value
        meta: dict[str, Any] = {"name": gen["name"]}
        if gen.get("namespace"):
            meta["namespace"] = gen["namespace"]
        maps.append({"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": values})
    return maps


def _matches(res: Resource, target: dict[str, Any]) -> bool:
    unknown = set(target) - {"kind", "name"}
    if unknown:
        raise KustomizeError(f"patch target fields not supported: {sorted(unknown)}")
    return all(
        (res.get("kind") if key == "kind" else res["metadata"]["name"]) == value
        for key, value in target.items()
    )


def _apply_patch(out: list[Resource], directory: Path, patch: dict[str, Any]) -> None:
    text = (directory / patch["path"]).read_text() if "path" in patch else patch["patch"]
    ops = yaml.safe_load(text)
    if not isinstance(ops, list):
        raise KustomizeError(f"{directory}: only JSON 6902 patches (a list of operations) are supported")
    hits = [r for r in out if _matches(r, patch["target"])]
    if not hits:
        raise KustomizeError(f"{directory}: patch target {patch['target']} matches no resource")
    for res in hits:
        for op in ops:
            json_patch(res, op)


def _pointer(path: str) -> list[str]:
    if not path.startswith("/"):
        raise KustomizeError(f"JSON pointer must start with '/': {path!r}")
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def json_patch(doc: Any, op: dict[str, Any]) -> None:
    """Apply one RFC 6902 operation (add, replace, remove) in place."""
    *parents, last = _pointer(op["path"])
    node = doc
    for part in parents:
        node = node[int(part)] if isinstance(node, list) else node[part]
    kind = op["op"]
    if kind not in ("add", "replace", "remove"):
        raise KustomizeError(f"JSON patch op {kind!r} is not supported")
    if isinstance(node, list):
        index = len(node) if last == "-" else int(last)
        if kind == "add":
            node.insert(index, copy.deepcopy(op["value"]))
        elif kind == "replace":
            node[index] = copy.deepcopy(op["value"])
        else:
            del node[index]
        return
    if kind != "add" and last not in node:
        raise KustomizeError(f"JSON patch {kind} {op['path']}: no such member")
    if kind == "remove":
        del node[last]
    else:
        node[last] = copy.deepcopy(op["value"])


def _containers(res: Resource) -> list[dict[str, Any]]:
    if res.get("kind") not in POD_TEMPLATE_KINDS:
        return []
    spec = res["spec"]["template"]["spec"]
    return [*spec.get("initContainers", []), *spec.get("containers", [])]


def _set_image(out: list[Resource], image: dict[str, Any]) -> None:
    for res in out:
        for container in _containers(res):
            ref = container["image"]
            name = ref.split("@")[0].rsplit(":", 1)[0] if ":" in ref.rsplit("/", 1)[-1] else ref.split("@")[0]
            if name != image["name"]:
                continue
            new = image.get("newName", name)
            if "digest" in image:
                container["image"] = f"{new}@{image['digest']}"
            else:
                tag = image.get("newTag", ref[len(name) + 1 :] if len(ref) > len(name) else "")
                container["image"] = f"{new}:{tag}" if tag else new


def _set_replicas(out: list[Resource], replica: dict[str, Any]) -> None:
    hits = [r for r in out if r["metadata"]["name"] == replica["name"] and "replicas" in r.get("spec", {})]
    if not hits:
        raise KustomizeError(f"replicas: no resource named {replica['name']} with spec.replicas")
    for res in hits:
        res["spec"]["replicas"] = replica["count"]
