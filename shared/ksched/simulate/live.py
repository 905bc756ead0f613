"""Reading a live cluster for ``ksched simulate --from-cluster``: every kind the plugins read, listed
read-only, as the objects of a cluster file.

The list is the informer's (:data:`ksched.api.collections.ALL`), so an offline run sees what the
services see, and kube-scheduler's own rights are enough to read it. An optional collection (the
alpha PodGroups, the Coscheduling CRD) the cluster does not serve or the caller may not list counts
as empty, with a note on standard error for a refusal.

Items come back as plain mappings with ``apiVersion`` and ``kind`` set (list items carry neither)
and without ``managedFields`` (as ``kubectl get -o yaml`` prints them), ready to be decoded like a
file's objects or written out with :func:`dump_cluster`.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import msgspec
import yaml

from ksched.api.collections import ALL, Collection
from ksched.client.config import api_client, api_reachable
from ksched.client.pager import ListError, list_all


class ClusterReadError(RuntimeError):
    """The cluster could not be listed; the message says which collection and why."""


async def list_cluster(kubeconfig: str | None, extra: Sequence[Collection] = ()) -> list[dict[str, Any]]:
    """Every object of the collections the scheduler reads, nodes first, then pods, then the rest,
    then those of ``extra`` (the pod-group kinds the feature gates turn on)."""
    if not api_reachable(kubeconfig):
        raise ClusterReadError(
            "no cluster to read: give --kubeconfig (or set KUBECONFIG), or run inside a cluster"
        )
    try:
        api = await api_client(kubeconfig, component="ksched-simulate")
    except Exception as exc:  # the kubeconfig loader raises several types for a bad kubeconfig
        raise ClusterReadError(f"kubeconfig {kubeconfig}: {exc}") from None
    objects: list[dict[str, Any]] = []
    async with api:
        for collection in (*ALL, *extra):
            objects.extend(await _list(api, collection))
    return objects


async def _list(api: Any, collection: Collection) -> list[dict[str, Any]]:
    try:
        items, _ = await list_all(api, collection, msgspec.Raw)
    except ListError as exc:
        if exc.status == 404 and collection.optional:
            return []  # a CRD this cluster does not serve
        if exc.status == 403 and collection.optional:
            print(
                f"ksched simulate: --from-cluster: {collection.kind}: list {collection.path} is forbidden "
                f"(HTTP 403); read as empty",
                file=sys.stderr,
            )
            return []
        hint = " (the caller needs list on it: see docs/simulate.md)" if exc.status == 403 else ""
        raise ClusterReadError(f"{collection.kind}: {exc}{hint}") from None
    except OSError as exc:
        raise ClusterReadError(f"{collection.kind}: cannot reach the API server: {exc}") from None
    return [_as_file_object(collection, raw) for raw in items]


def _as_file_object(collection: Collection, raw: msgspec.Raw) -> dict[str, Any]:
    item: dict[str, Any] = msgspec.json.decode(raw)
    metadata = item.get("metadata")
    if isinstance(metadata, dict):
        metadata.pop("managedFields", None)
    return {"apiVersion": collection.api_version, "kind": collection.object_kind, **item}


def dump_cluster(objects: list[dict[str, Any]], path: str | Path) -> None:
    """Write ``objects`` as a ``kind: List`` cluster file that ``ksched simulate --cluster`` reads."""
    document = {"apiVersion": "v1", "kind": "List", "items": objects}
    Path(path).write_text(yaml.safe_dump(document, sort_keys=False))
