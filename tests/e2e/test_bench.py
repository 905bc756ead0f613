"""``ksched bench e2e`` end to end at a small size: every process's CPU per bound pod (nats-server
and kubesim included), the single-leader ceiling, and a scheduler_perf shape over TLS."""

from __future__ import annotations

import pytest

from ksched.bench.e2e import Settings, measure
from ksched.bench.hops import HOPS


async def test_bench_reports_cpu_per_pod_of_every_process_and_the_ceiling() -> None:
    result = await measure(
        Settings(nodes=12, pods=40, binders=2, workers=8, shape="spread", tls=True, rate=100.0)
    )
    assert result["bound"] == 40
    per_pod = result["cpu_ms_per_pod"]
    assert set(per_pod) == {
        "kubesim",
        "informer",
        "queue",
        "scheduler-0",
        "binder-0",
        "binder-1",
        "nats-server",
    }
    assert all(ms > 0 for ms in per_pod.values()), per_pod
    single = max(per_pod["informer"], per_pod["queue"], per_pod["nats-server"])
    assert result["ceiling_pods_per_second"] == round(1000 / single, 1)
    assert (result["shape"], result["tls"], result["rate"]) == ("spread", True, 100.0)
    assert result["seconds"] >= 39 / 100.0  # the last pod was created no earlier than 0.39 s in
    # the CPU is read once the binders' Scheduled events are written too
    assert result["api_writes_lag_seconds"] is not None and result["api_writes_lag_seconds"] >= 0
    nats = result["nats_per_pod"]
    # every service's connection is named after its process; each published and received per pod
    assert {"informer", "queue", "scheduler-0", "binder-0", "binder-1"} <= set(nats), nats
    assert all(nats[name]["msgs_in"] > 0 and nats[name]["msgs_out"] > 0 for name in ("informer", "queue"))
    rows = [row["msgs_in"] for name, row in nats.items() if name != "total"]
    assert nats["total"]["msgs_in"] == pytest.approx(sum(rows), abs=0.005 * len(rows))  # each row rounded
    hops = result["hops"]  # from the pods' trace events: every hop of the pods bound in one attempt
    assert set(hops) == set(HOPS) and 0 < hops["total"]["pods"] <= 40, hops
    assert hops["cycle"]["p50"] > 0 and hops["total"]["p50"] >= hops["cycle"]["p50"]
