"""A binder keeps at most ``API_CONNECTIONS`` connections to the API server (one per two workers
with more than 32), however many of its requests are in flight: each connection costs a TLS
handshake on both sides (docs/benchmarks-history.md)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from ksched_binder.service import API_CONNECTIONS, api_connections, binder_api

from ksched.service.options import CommonOptions


async def test_a_burst_of_requests_shares_the_binder_s_connections(kubesim_kubeconfig: Path) -> None:
    api = await binder_api(CommonOptions(identity="b1", kubeconfig=str(kubesim_kubeconfig)), workers=32)
    async with api:
        assert api.http1 is not None
        answers = await asyncio.gather(
            *(api.request("GET", "/api/v1/nodes?limit=1") for _ in range(4 * API_CONNECTIONS))
        )
        assert {status for status, _ in answers} == {200}
        assert 1 <= len(api.http1._open) <= API_CONNECTIONS


def test_more_workers_get_more_connections() -> None:
    assert [api_connections(w) for w in (1, 32, 33, 64, 200)] == [16, 16, 16, 32, 100]
