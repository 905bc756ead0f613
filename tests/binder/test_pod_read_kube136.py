"""The binder's read of a pod (the check of a refused Binding, or of a placement delivered before whose
binding cycle failed: was the pod bound to its node by an earlier delivery?) against the REAL API
server of ``../shared/kube-1.36`` (the session's ``kube136``), under deploy/base's RBAC as shipped and
the binder's own ServiceAccount token. kubesim grants a ServiceAccount no resource verb, so only the
real server shows that deploy/base/rbac.yaml lets the binder make this read: without ``get`` on pods
it is refused (403), and the placement is kept and retried instead of bound or failed
(tests/binder/test_pod_read_refused.py). Skipped without ``../shared`` unless
``KSCHED_REQUIRE_SHARED=1``."""

from __future__ import annotations

import contextlib
import uuid
from pathlib import Path
from typing import Any

from kubernetes_asyncio.client import ApiClient, CoreV1Api
from kubernetes_asyncio.client.exceptions import ApiException
from prometheus_client import REGISTRY

from ksched.bus.messages import ForgetRequest
from ksched.client.config import api_client
from ksched.framework.testing import make_pod
from ksched.launcher.controlplane import ControlPlane
from tests import kube
from tests.binder.harness import BinderHarness
from tests.binder.test_harness import RefusesBinding
from tests.deploy.test_manifests import render
from tests.e2e.realcluster import apply_rbac, service_kubeconfigs

NS = "rc-binder-read"


def failed_reads() -> dict[str, float]:
    """``ksched_binder_pod_reads_failed_total`` by code."""
    return {
        s.labels["code"]: s.value
        for m in REGISTRY.collect()
        if m.name == "ksched_binder_pod_reads_failed"
        for s in m.samples
        if s.name.endswith("_total")
    }


async def test_the_binders_service_account_reads_the_pod_it_checks(
    kube136: ControlPlane, kube136_api: ApiClient, tmp_path: Path
) -> None:
    await apply_rbac(kube136_api, render("base"))
    kubeconfig = (await service_kubeconfigs(kube136_api, kube136, tmp_path))["binder"]
    core = CoreV1Api(kube136_api)
    with contextlib.suppress(ApiException):  # an earlier run of the session may have made it
        await core.create_namespace(kube.body({"metadata": {"name": NS}}))

    async def pending(name: str) -> Any:
        spec: dict[str, Any] = {"containers": [{"name": "c", "image": "registry.k8s.io/pause"}]}
        body = {"metadata": {"name": f"{name}-{uuid.uuid4().hex[:6]}"}, "spec": spec}
        created = await core.create_namespaced_pod(NS, kube.body(body))
        return make_pod(created.metadata.name, NS, uid=created.metadata.uid)

    before = failed_reads()
    async with await api_client(kubeconfig, component="ksched-binder-read") as api:
        harness = BinderHarness(api)
        try:
            # bound to its node by an earlier send whose answer was lost: a repeat, not a failure
            applied = await pending("applied")
            placement = await harness.placement(applied, "rc-node-a")
            target = {"kind": "Node", "name": "rc-node-a"}
            binding = kube.body({"metadata": {"name": applied.metadata.name}, "target": target})
            bound = await kube.undecoded(
                core.create_namespaced_pod_binding(applied.metadata.name, NS, binding, _preload_content=False)
            )
            assert bound.status == 201
            harness.service.frameworks[placement.profile].plugins.bind.insert(0, RefusesBinding())
            assert await harness.service._handle_one(placement) == "bound"
            assert harness.outbox.sent == []  # nothing forgotten or requeued

            # not bound: the refusal stands (a failure, forgotten and requeued)
            refused = await pending("refused")
            placement = await harness.placement(refused, "rc-node-a")
            assert await harness.service._handle_one(placement) == "failed"
            assert [f.pod_uid for f in harness.outbox.of(ForgetRequest)] == [refused.metadata.uid]
        finally:
            await harness.close()
            await core.delete_collection_namespaced_pod(NS, grace_period_seconds=0)
    assert failed_reads() == before  # no read failed (a 403 would count here, and be "refused")
