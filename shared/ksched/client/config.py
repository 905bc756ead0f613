"""Making the API client: a kubeconfig file, the in-cluster service account, or ``--master``.

The configuration is kubernetes_asyncio's, filled by its public loaders (exec plugins, token files,
the in-cluster token's refresh hook); the :class:`~ksched.client.rest.Client` made from it resolves
the proxy once and never reads netrc (:mod:`ksched.client.proxy`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from kubernetes_asyncio import config
from kubernetes_asyncio.client import Configuration

from ksched.client.rest import Client


def api_reachable(kubeconfig: str | None, env: Mapping[str, str] | None = None) -> bool:
    """Whether :func:`api_client` has a configuration: a kubeconfig, or running in a cluster.

    In a cluster means client-go's ``InClusterConfig`` precondition: ``KUBERNETES_SERVICE_HOST``
    and ``KUBERNETES_SERVICE_PORT`` both set (``env`` defaults to the process environment).
    """
    e = os.environ if env is None else env
    return bool(kubeconfig) or bool(e.get("KUBERNETES_SERVICE_HOST") and e.get("KUBERNETES_SERVICE_PORT"))


async def load_configuration(kubeconfig: str | None, master: str | None = None) -> Configuration:
    """The configuration of ``kubeconfig`` (or the in-cluster service account when None).

    ``master`` (kube-scheduler's ``--master``) replaces the server address, as client-go's
    BuildConfigFromFlags: with neither a kubeconfig nor in-cluster configuration, it is the whole
    configuration (no credentials)."""
    cfg = Configuration()
    if kubeconfig:
        await config.load_kube_config(config_file=kubeconfig, client_configuration=cfg)
    elif not master or api_reachable(None):
        config.load_incluster_config(client_configuration=cfg)  # type: ignore[no-untyped-call]
    if master:
        cfg.host = master.rstrip("/")
    return cfg


async def api_client(
    kubeconfig: str | None,
    qps_connections: int = 64,
    component: str = "ksched",
    master: str | None = None,
) -> Client:
    """A :class:`Client` for ``kubeconfig`` (:func:`load_configuration`) with at most
    ``qps_connections`` connections, naming ``component`` in its User-Agent."""
    cfg = await load_configuration(kubeconfig, master)
    return Client(cfg, connections=qps_connections, component=component)
