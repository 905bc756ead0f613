"""The RBAC grants of a ServiceAccount in rendered manifests, shared by the manifest and e2e tests."""

from __future__ import annotations

from typing import Any

Resource = dict[str, Any]
Grant = tuple[str, str, str]  # (apiGroup, resource, verb)


def grants_of(resources: list[Resource], account: str) -> set[Grant]:
    roles = {(r["kind"], r["metadata"]["name"]): r for r in resources if r["kind"] in ("Role", "ClusterRole")}
    grants: set[Grant] = set()
    for binding in resources:
        if binding["kind"] not in ("RoleBinding", "ClusterRoleBinding"):
            continue
        if {"kind": "ServiceAccount", "name": account, "namespace": "ksched"} not in binding["subjects"]:
            continue
        role = roles[(binding["roleRef"]["kind"], binding["roleRef"]["name"])]
        for rule in role["rules"]:
            assert "resourceNames" not in rule
            grants |= {(g, r, v) for g in rule["apiGroups"] for r in rule["resources"] for v in rule["verbs"]}
    return grants
