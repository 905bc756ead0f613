"""Discovery documents: /version, /api, /apis, group versions, and aggregated discovery (v2)."""

from __future__ import annotations

from ksched.features import DEFAULT as DEFAULT_GATES
from ksched.features import FeatureGates

from .jsonio import JSON
from .resources import BINDINGS, GROUP_ORDER, RESOURCES, ResourceType, group_versions

AGGREGATED_CONTENT_TYPE = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"

VERSION: JSON = {
    "major": "1",
    "minor": "36",
    "emulationMajor": "1",
    "emulationMinor": "36",
    "minCompatibilityMajor": "1",
    "minCompatibilityMinor": "35",
    "gitVersion": "v1.36.2",
    "gitCommit": "98b35193b2ac7a23a673325f5e9b830ecd5ba406",
    "gitTreeState": "clean",
    "buildDate": "2026-11-21T09:53:35Z",
    "goVersion": "go1.27.3",
    "compiler": "gc",
    "platform": "linux/amd64",
}

_SUBRESOURCE_VERBS = {
    "status": ("get", "patch", "update"),
    "binding": ("create",),
    "eviction": ("create",),
    "finalize": ("update",),
    "scale": ("get", "patch", "update"),
}


def _subresource_kind(rt: ResourceType, sub: str) -> tuple[str, str, str]:
    """(group, version, kind) answered by a subresource; empty group/version mean the parent's."""
    if sub == "binding":
        return "", "", "Binding"
    if sub == "eviction":
        return "policy", "v1", "Eviction"
    if sub == "scale":
        return "autoscaling", "v1", "Scale"
    return "", "", rt.kind


def _resources_of(api_version: str, gates: FeatureGates) -> list[ResourceType]:
    out = [r for r in RESOURCES if r.api_version == api_version and r.served(gates)]
    if api_version == "v1":
        out.append(BINDINGS)
    return out


def resource_list(api_version: str, gates: FeatureGates = DEFAULT_GATES) -> JSON | None:
    """The APIResourceList of ``/api/v1`` or ``/apis/<group>/<version>``."""
    resources = _resources_of(api_version, gates)
    if not resources:
        return None
    entries: list[JSON] = []
    for rt in resources:
        entry: JSON = {
            "name": rt.plural,
            "singularName": rt.singular,
            "namespaced": rt.namespaced,
            "kind": rt.kind,
            "verbs": list(rt.verbs),
        }
        if rt.short_names:
            entry["shortNames"] = list(rt.short_names)
        if rt.categories:
            entry["categories"] = list(rt.categories)
        if rt.storage_version_hash:
            entry["storageVersionHash"] = rt.storage_version_hash
        entries.append(entry)
        for sub in rt.subresources:
            group, version, kind = _subresource_kind(rt, sub)
            sub_entry: JSON = {"name": f"{rt.plural}/{sub}", "singularName": "", "namespaced": rt.namespaced}
            if group:
                sub_entry["group"] = group
                sub_entry["version"] = version
            sub_entry["kind"] = kind
            sub_entry["verbs"] = list(_SUBRESOURCE_VERBS.get(sub, ("get",)))
            entries.append(sub_entry)
    entries.sort(key=lambda e: e["name"])
    body: JSON = {"kind": "APIResourceList"}
    if api_version != "v1":
        body["apiVersion"] = "v1"
    body["groupVersion"] = api_version
    body["resources"] = entries
    return body


def api_versions(server_address: str) -> JSON:
    return {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}],
    }


def _group(name: str, gates: FeatureGates) -> JSON:
    versions = [{"groupVersion": f"{name}/{v}", "version": v} for v in group_versions(name, gates)]
    return {"name": name, "versions": versions, "preferredVersion": dict(versions[0])}


def _served_groups(gates: FeatureGates) -> list[str]:
    return [g for g in GROUP_ORDER if group_versions(g, gates)]


def group_list(gates: FeatureGates = DEFAULT_GATES) -> JSON:
    groups = [_group(g, gates) for g in _served_groups(gates)]
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}


def group(name: str, gates: FeatureGates = DEFAULT_GATES) -> JSON | None:
    if name not in _served_groups(gates):
        return None
    return {"kind": "APIGroup", "apiVersion": "v1", **_group(name, gates)}


def _aggregated_resources(api_version: str, gates: FeatureGates) -> list[JSON]:
    out: list[JSON] = []
    for rt in sorted(_resources_of(api_version, gates), key=lambda r: r.plural):
        entry: JSON = {
            "resource": rt.plural,
            "responseKind": {"group": "", "version": "", "kind": rt.kind},
            "scope": "Namespaced" if rt.namespaced else "Cluster",
            "singularResource": rt.singular,
            "verbs": list(rt.verbs),
        }
        if rt.short_names:
            entry["shortNames"] = list(rt.short_names)
        if rt.categories:
            entry["categories"] = list(rt.categories)
        subs = []
        for sub in sorted(rt.subresources):
            group_name, version, kind = _subresource_kind(rt, sub)
            subs.append(
                {
                    "subresource": sub,
                    "responseKind": {"group": group_name, "version": version, "kind": kind},
                    "verbs": list(_SUBRESOURCE_VERBS.get(sub, ("get",))),
                }
            )
        if subs:
            entry["subresources"] = subs
        out.append(entry)
    return out


def aggregated_core(gates: FeatureGates = DEFAULT_GATES) -> JSON:
    return {
        "kind": "APIGroupDiscoveryList",
        "apiVersion": "apidiscovery.k8s.io/v2",
        "metadata": {},
        "items": [
            {
                "metadata": {},
                "versions": [
                    {"version": "v1", "resources": _aggregated_resources("v1", gates), "freshness": "Current"}
                ],
            }
        ],
    }


def aggregated_groups(gates: FeatureGates = DEFAULT_GATES) -> JSON:
    items = [
        {
            "metadata": {"name": name},
            "versions": [
                {
                    "version": version,
                    "resources": _aggregated_resources(f"{name}/{version}", gates),
                    "freshness": "Current",
                }
                for version in group_versions(name, gates)
            ],
        }
        for name in _served_groups(gates)
    ]
    return {
        "kind": "APIGroupDiscoveryList",
        "apiVersion": "apidiscovery.k8s.io/v2",
        "metadata": {},
        "items": items,
    }


def wants_aggregated(accept: str) -> bool:
    """Whether the Accept header asks for aggregated discovery (what client-go and kubectl send)."""
    return "as=APIGroupDiscoveryList" in accept and "apidiscovery.k8s.io" in accept and "v=v2" in accept
