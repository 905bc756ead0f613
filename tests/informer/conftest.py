"""Shared by the informer tests: a kubesim over HTTP, and informer options on loopback."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from ksched_informer.options import InformerOptions
from ksched_kubesim import KubeSim

from ksched.service.options import CommonOptions
from tests.fixtures.kubesim import fast_config


@pytest.fixture
async def sim(tmp_path: Path) -> AsyncIterator[tuple[KubeSim, Path]]:
    async with KubeSim(fast_config()) as sim:
        yield sim, sim.write_kubeconfig(tmp_path / "kubeconfig")


def informer_options(
    nats_url: str, kubeconfig: Path, prefix: str, identity: str, **kw: Any
) -> InformerOptions:
    """An informer of ``kubeconfig``'s cluster on ``nats_url``, HTTP on a free loopback port."""
    common = CommonOptions(
        identity=identity,
        nats=nats_url,
        kubeconfig=str(kubeconfig),
        subject_prefix=prefix,
        **({"feature_gates": kw.pop("feature_gates")} if "feature_gates" in kw else {}),
    )
    return InformerOptions(common=common, **kw)
