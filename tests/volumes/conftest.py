"""A fresh namespace in the API (kubesim, or a real cluster) for the PreBind tests."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from kubernetes_asyncio.client import ApiClient, CoreV1Api

from ksched.client.rest import Client
from tests import kube


@dataclass
class KubeNamespace:
    api: ApiClient
    core: CoreV1Api
    ns: str
    suffix: str
    client: Client
    """ksched's API client (what PreBind is given); ``api``/``core`` check its work independently."""

    def name(self, base: str) -> str:
        """A name unique to this test (cluster-scoped objects outlive the namespace)."""
        return f"{base}-{self.suffix}"


async def new_namespace(api: ApiClient, prefix: str, client: Client) -> KubeNamespace:
    suffix = uuid.uuid4().hex[:6]
    core = CoreV1Api(api)
    ns = f"{prefix}-{suffix}"
    await core.create_namespace(kube.body({"metadata": {"name": ns}}))
    return KubeNamespace(api, core, ns, suffix, client)
