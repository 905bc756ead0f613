"""Whether a scheduler replica talks to the Kubernetes API is decided as leader election decides it
(``ksched.client.config.api_reachable``): a kubeconfig, or both in-cluster variables."""

from __future__ import annotations

import pytest
from ksched_scheduler.options import SchedulerOptions
from ksched_scheduler.server import SchedulerServer

from ksched.client.config import api_reachable
from ksched.config import default_config
from ksched.service.options import CommonOptions


def test_in_cluster_needs_host_and_port() -> None:
    assert not api_reachable(None, {})
    assert not api_reachable(None, {"KUBERNETES_SERVICE_HOST": "10.0.0.1"})
    assert not api_reachable("", {"KUBERNETES_SERVICE_PORT": "443"})
    assert api_reachable(None, {"KUBERNETES_SERVICE_HOST": "10.0.0.1", "KUBERNETES_SERVICE_PORT": "443"})
    assert api_reachable("/etc/kubeconfig", {})


async def test_a_replica_outside_a_cluster_runs_without_the_api(
    nats_url: str, bus_prefix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A half-set in-cluster environment is not a cluster: the replica starts without an API client
    (it used to try the in-cluster configuration and fail to start)."""
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1")
    monkeypatch.delenv("KUBERNETES_SERVICE_PORT", raising=False)
    options = SchedulerOptions(
        common=CommonOptions(
            identity="sched-api-test", nats=nats_url, kubeconfig=None, subject_prefix=bus_prefix
        )
    )
    server = SchedulerServer(options, default_config())
    try:
        await server.start()
        assert server.api is None and server.service.reporter is None
    finally:
        await server.stop()
