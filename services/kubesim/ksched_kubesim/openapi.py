"""A minimal OpenAPI v3 surface: the index and, per group version, the PATCH operations with their
``fieldValidation`` parameter — what kubectl checks to use server-side field validation instead of
downloading schemas (kubectl apply/create work with their default ``--validate``). No schemas.
"""

from __future__ import annotations

import hashlib

from ksched.features import DEFAULT as DEFAULT_GATES
from ksched.features import FeatureGates

from .jsonio import JSON
from .resources import RESOURCES, ResourceType


def _gv_path(api_version: str) -> str:
    return "api/v1" if api_version == "v1" else f"apis/{api_version}"


def _hash(api_version: str, gates: FeatureGates) -> str:
    """The document's hash in its URL, which clients cache by (kubectl's disk cache): it changes with
    the resources the group version serves."""
    served = ",".join(
        sorted(rt.plural for rt in RESOURCES if rt.api_version == api_version and rt.served(gates))
    )
    return hashlib.sha256(f"kubesim/{api_version}/{served}".encode()).hexdigest()[:32].upper()


def index(gates: FeatureGates = DEFAULT_GATES) -> JSON:
    versions = sorted({rt.api_version for rt in RESOURCES if rt.served(gates)})
    return {
        "paths": {
            _gv_path(v): {"serverRelativeURL": f"/openapi/v3/{_gv_path(v)}?hash={_hash(v, gates)}"}
            for v in versions
        }
    }


def _patch_operation(rt: ResourceType) -> JSON:
    return {
        "patch": {
            "operationId": f"patch{rt.kind}",
            "parameters": [
                {"name": "dryRun", "in": "query", "schema": {"type": "string"}},
                {"name": "fieldManager", "in": "query", "schema": {"type": "string"}},
                {"name": "fieldValidation", "in": "query", "schema": {"type": "string"}},
                {"name": "force", "in": "query", "schema": {"type": "boolean"}},
            ],
            "responses": {},
            "x-kubernetes-action": "patch",
            "x-kubernetes-group-version-kind": {"group": rt.group, "version": rt.version, "kind": rt.kind},
        }
    }


def group_version(path: str, gates: FeatureGates = DEFAULT_GATES) -> JSON | None:
    """The document for ``/openapi/v3/api/v1`` or ``/openapi/v3/apis/<group>/<version>``."""
    gv = path.removeprefix("/openapi/v3/").strip("/")
    resources = [rt for rt in RESOURCES if _gv_path(rt.api_version) == gv and rt.served(gates)]
    if not resources:
        return None
    paths: JSON = {}
    for rt in resources:
        base = f"/{gv}/namespaces/{{namespace}}/{rt.plural}" if rt.namespaced else f"/{gv}/{rt.plural}"
        paths[f"{base}/{{name}}"] = _patch_operation(rt)
    return {
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": "v1.36.2"},
        "paths": paths,
        "components": {"schemas": {}},
    }
