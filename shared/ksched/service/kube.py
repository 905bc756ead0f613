"""Creating the kubernetes_asyncio client: a kubeconfig file, or in-cluster configuration."""

from __future__ import annotations

from kubernetes_asyncio import config
from kubernetes_asyncio.client import ApiClient, Configuration


async def api_client(kubeconfig: str | None, qps_connections: int = 64) -> ApiClient:
    """An ApiClient for ``kubeconfig`` (or the in-cluster service account when None)."""
    cfg = Configuration()
    if kubeconfig:
        await config.load_kube_config(config_file=kubeconfig, client_configuration=cfg)
    else:
        config.load_incluster_config(client_configuration=cfg)  # type: ignore[no-untyped-call]
    cfg.connection_pool_maxsize = qps_connections
    return ApiClient(configuration=cfg)
