"""``ksched_informer_unpublished_ops`` counts the snapshot ops the informer has not yet had acknowledged
by JetStream: it rises with cluster changes and falls back when a flush publishes them."""

from __future__ import annotations

from pathlib import Path

from ksched_informer.service import InformerService
from ksched_kubesim import KubeSim
from prometheus_client import REGISTRY

from ksched.config import default_config
from tests.informer.conftest import informer_options
from tests.polling import until


def unpublished() -> float:
    value = REGISTRY.get_sample_value("ksched_informer_unpublished_ops")
    assert value is not None
    return value


async def test_unpublished_ops_rise_with_changes_and_fall_when_published(
    sim: tuple[KubeSim, Path], nats_url: str, bus_prefix: str, bus_factory: object
) -> None:
    kube, kubeconfig = sim
    # a long flush interval: the changes wait for the explicit flush below
    options = informer_options(nats_url, kubeconfig, bus_prefix, "lag-test", flush_interval=60.0)
    service = InformerService(options, default_config())
    await service.start()
    try:
        await until(lambda: service.ready)
        await service.flush()
        assert unpublished() == 0
        for i in range(3):
            kube.create({"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"lag-{i}"}})
        await until(lambda: len(service.cache.ops) >= 3)
        assert unpublished() == len(service.cache.ops) >= 3
        await service.flush()
        assert unpublished() == len(service.cache.ops) == 0
    finally:
        await service.stop()
