"""ksched on the real Kubernetes 1.36.2 control plane of ``../shared/kube-1.36`` (the session's
``kube136`` fixture): every service a process of a :class:`~ksched.launcher.stack.Stack`, a second
scheduler next to a kube-scheduler that is not running (pods name the profile of
deploy/base/config/ksched-config.yaml, ``schedulerName: ksched``), each service under its own
ServiceAccount with the RBAC of deploy/ applied as shipped.

* :func:`apply_rbac`: the namespace, ServiceAccounts, (Cluster)Roles and bindings of a rendered
  kustomize tree, created or replaced; ksched's RBAC objects not in it are deleted, so the cluster
  holds exactly what was rendered (a test module applies deploy/base, another base + a component).
* :func:`service_kubeconfigs`: a kubeconfig per service, its ServiceAccount's token (TokenRequest as
  ``system:masters``; the cluster has no ServiceAccount admission and no token controller), the
  server and CA of the admin kubeconfig.
* A 403 the API server answers a service must fail the test, not end in a retry loop:
  :func:`settle` fails as soon as a service logs one, :func:`assert_nothing_forbidden` at the end.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import yaml
from kubernetes_asyncio import client
from kubernetes_asyncio.client import ApiClient
from kubernetes_asyncio.client.exceptions import ApiException

from ksched.aio import cancel_and_wait
from ksched.launcher.controlplane import ControlPlane
from ksched.launcher.stack import Stack, StackOptions
from tests import kube
from tests.deploy.test_manifests import DEPLOY
from tests.e2e.testing import eventually, kube_api, queue_repairs

NAMESPACE = "ksched"
"""deploy/'s namespace: its ServiceAccounts, the leader-election Role and the Leases."""
PREFIX = "rc-"
"""The name prefix of every namespace and node of these tests (``rc-<topic>``)."""
PROFILE = "ksched"
"""The schedulerName of deploy/base/config/ksched-config.yaml's profile."""
CONFIG = DEPLOY / "base" / "config" / "ksched-config.yaml"
SERVICES = ("informer", "queue", "scheduler", "binder")
PART_OF = "app.kubernetes.io/part-of=ksched"
RBAC_KINDS = ("ServiceAccount", "ClusterRole", "Role", "ClusterRoleBinding", "RoleBinding")
TOKEN_SECONDS = 3600
FORBIDDEN = re.compile(r"forbidden(?!: ValidatingAdmissionPolicy)", re.IGNORECASE)
"""What a 403 of the API server leaves in a service's log (``... is forbidden: User
"system:serviceaccount:ksched:ksched-binder" cannot create resource ...``, reason ``Forbidden``); not
an admission policy's denial (422 Invalid, "is forbidden: ValidatingAdmissionPolicy ... denied"),
which a test makes on purpose."""

Resource = dict[str, Any]


# --- RBAC -----------------------------------------------------------------------------------------


async def _upsert(
    create: Callable[..., Any], replace: Callable[..., Any], name: str, *ns: str, body: Any
) -> None:
    try:
        await create(*ns, body)
    except ApiException as exc:
        if exc.status != 409:
            raise
        await replace(name, *ns, body)


async def apply_rbac(api: ApiClient, resources: list[Resource]) -> None:
    """Make the cluster's ksched RBAC exactly that of ``resources`` (a rendered kustomize tree):
    namespace ``ksched``, its ServiceAccounts, Roles, ClusterRoles and bindings created or replaced;
    ClusterRoles, ClusterRoleBindings, Roles and RoleBindings labelled part-of=ksched that are not
    among them are deleted (what an earlier module applied, e.g. a component's grants)."""
    core, rbac = client.CoreV1Api(api), client.RbacAuthorizationV1Api(api)
    try:
        await core.create_namespace(kube.body({"metadata": {"name": NAMESPACE}}))
    except ApiException as exc:
        if exc.status != 409:
            raise
    wanted = [r for r in resources if r["kind"] in RBAC_KINDS]
    for res in wanted:
        name, ns = res["metadata"]["name"], res["metadata"].get("namespace")
        body = kube.body(res)
        match res["kind"]:
            case "ServiceAccount":
                await _upsert(
                    core.create_namespaced_service_account,
                    core.replace_namespaced_service_account,
                    name,
                    ns,
                    body=body,
                )
            case "ClusterRole":
                await _upsert(rbac.create_cluster_role, rbac.replace_cluster_role, name, body=body)
            case "ClusterRoleBinding":
                await _upsert(
                    rbac.create_cluster_role_binding, rbac.replace_cluster_role_binding, name, body=body
                )
            case "Role":
                await _upsert(rbac.create_namespaced_role, rbac.replace_namespaced_role, name, ns, body=body)
            case "RoleBinding":
                await _upsert(
                    rbac.create_namespaced_role_binding,
                    rbac.replace_namespaced_role_binding,
                    name,
                    ns,
                    body=body,
                )
    keep = {(r["kind"], r["metadata"]["name"]) for r in wanted}
    cluster_wide: Any = {
        "ClusterRole": (rbac.list_cluster_role, rbac.delete_cluster_role),
        "ClusterRoleBinding": (rbac.list_cluster_role_binding, rbac.delete_cluster_role_binding),
    }
    namespaced: Any = {
        "Role": (rbac.list_namespaced_role, rbac.delete_namespaced_role),
        "RoleBinding": (rbac.list_namespaced_role_binding, rbac.delete_namespaced_role_binding),
    }
    for kind, (list_, delete) in cluster_wide.items():
        for item in (await list_(label_selector=PART_OF)).items:
            if (kind, item.metadata.name) not in keep:
                await delete(item.metadata.name)
    for kind, (list_, delete) in namespaced.items():
        for item in (await list_(NAMESPACE, label_selector=PART_OF)).items:
            if (kind, item.metadata.name) not in keep:
                await delete(item.metadata.name, NAMESPACE)


async def service_kubeconfigs(api: ApiClient, plane: ControlPlane, directory: Path) -> dict[str, str]:
    """service -> a kubeconfig file authenticating as ``ksched:ksched-<service>`` (a bound token of
    :data:`TOKEN_SECONDS`), with the server and CA of the admin kubeconfig."""
    admin = yaml.safe_load(plane.admin_kubeconfig.read_text())
    [cluster] = admin["clusters"]
    core = client.CoreV1Api(api)
    out = {}
    for service in SERVICES:
        account = f"ksched-{service}"
        request: Any = {"spec": {"expirationSeconds": TOKEN_SECONDS}}
        answer = await core.create_namespaced_service_account_token(account, NAMESPACE, request)
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [cluster],
            "users": [{"name": account, "user": {"token": answer.status.token}}],
            "contexts": [{"name": account, "context": {"cluster": cluster["name"], "user": account}}],
            "current-context": account,
        }
        path = directory / f"{service}.kubeconfig"
        path.write_text(yaml.safe_dump(config))
        path.chmod(0o600)
        out[service] = str(path)
    return out


async def real_stack(
    plane: ControlPlane, workdir: Path, resources: list[Resource], **options: Any
) -> AsyncIterator[Stack]:
    """A Stack on ``plane`` whose services run as their ServiceAccounts with the RBAC of
    ``resources`` applied, configured by deploy/'s KubeSchedulerConfiguration. As
    :func:`~tests.e2e.testing.running_stack` (queues checked for repairs), and a 403 fails it: at
    once while the services start (an informer refused a list would retry until the start timed
    out), and at the end. Stopped on the way out (its Leases released, so a later module's stack
    leads at once)."""
    async with kube_api(str(plane.admin_kubeconfig)) as api:
        await apply_rbac(api, resources)
        kubeconfigs = await service_kubeconfigs(api, plane, workdir)
    stack = Stack(
        StackOptions(
            workdir=workdir,
            kubeconfig=str(plane.admin_kubeconfig),
            kubeconfigs=kubeconfigs,
            config=str(CONFIG),
            repair_interval="2s",
            **options,
        )
    )
    try:
        starting = asyncio.create_task(stack.start())
        while not starting.done():
            await asyncio.wait({starting}, timeout=0.5)
            if not starting.done() and forbidden(stack):
                await cancel_and_wait(starting)
                assert_nothing_forbidden(stack)
        starting.result()
        yield stack
        queues = [name for name, proc in stack.procs.items() if proc.service == "queue"]
        repaired = {name: await queue_repairs(stack, name) for name in queues}
        assert not any(repaired.values()), f"the queue's safety net had to add back lost pods: {repaired}"
        assert_nothing_forbidden(stack)
    finally:
        try:
            await delete_pods(plane)
        finally:
            await stack.stop()


async def delete_pods(plane: ControlPlane) -> None:
    """Delete the pods of the namespaces ``rc-*`` at once (grace period 0: no kubelet confirms a
    graceful deletion), so that no later module of the session, a drop-in of default-scheduler say,
    meets pods of these tests."""
    async with kube_api(str(plane.admin_kubeconfig)) as api:
        core = client.CoreV1Api(api)
        for ns in (await core.list_namespace()).items:
            if ns.metadata.name.startswith(PREFIX):
                await core.delete_collection_namespaced_pod(ns.metadata.name, grace_period_seconds=0)


# --- 403s -----------------------------------------------------------------------------------------


def forbidden(stack: Stack) -> dict[str, list[str]]:
    """service process -> the lines of its log that tell of a 403 (none: {})."""
    out = {}
    for name, proc in stack.procs.items():
        try:
            text = proc.log_path.read_text(errors="replace")
        except OSError:
            continue
        lines = [line for line in text.splitlines() if FORBIDDEN.search(line)]
        if lines:
            out[name] = lines[:5]
    return out


def assert_nothing_forbidden(stack: Stack) -> None:
    found = forbidden(stack)
    assert not found, (
        f"the API server refused a service what it asked (a grant missing from deploy/): {found}"
    )


async def settle(stack: Stack, check: Callable[[], Any], timeout: float = 30.0, interval: float = 0.2) -> Any:
    """:func:`~tests.e2e.testing.eventually`, failing at once when a service logged a 403."""

    async def guarded() -> Any:
        assert_nothing_forbidden(stack)
        return await check()

    return await eventually(guarded, timeout=timeout, interval=interval)
