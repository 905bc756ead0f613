"""Fixtures of the service fuzzers: kubesim and an informer (those of tests/informer), and
:class:`~tests.fuzz.cluster.Cluster` around them."""

from __future__ import annotations

from pathlib import Path

import pytest
from ksched_informer.service import InformerService
from ksched_kubesim import KubeSim

from tests.fixtures.nats import BusFactory
from tests.fuzz.cluster import Cluster
from tests.informer.conftest import sim  # noqa: F401 (fixture)
from tests.informer.test_service import informer  # noqa: F401 (fixture)


@pytest.fixture
async def cluster(
    sim: tuple[KubeSim, Path],  # noqa: F811
    informer: InformerService,  # noqa: F811
    bus_factory: BusFactory,
) -> Cluster:
    made = Cluster(informer, sim[0], await bus_factory("fuzz"))
    await made.start()
    return made
