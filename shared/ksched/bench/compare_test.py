from __future__ import annotations

from pathlib import Path

from ksched.bench.compare import Settings, percentiles, with_total


def test_percentiles_are_nearest_rank_in_milliseconds() -> None:
    seconds = [i / 1000 for i in range(1, 101)]  # 1 .. 100 ms
    assert percentiles(seconds) == {"p50": 50.0, "p90": 90.0, "p99": 99.0, "max": 100.0}
    assert percentiles([0.004]) == {"p50": 4.0, "p90": 4.0, "p99": 4.0, "max": 4.0}
    assert percentiles([]) == {"p50": None, "p90": None, "p99": None, "max": None}


def test_the_total_sums_the_processes() -> None:
    per_pod = {"informer": 0.5, "binder-0": 0.25}
    assert with_total(per_pod) == {**per_pod, "total": 0.75}


def test_a_rate_is_one_client_and_the_wait_grows_with_the_pods() -> None:
    burst = Settings(kube=Path("k"), pods=2000, clients=3)
    assert (burst.creators, burst.bind_timeout) == (3, 160.0)
    steady = Settings(kube=Path("k"), rate=50.0, clients=3, timeout=10.0)
    assert (steady.creators, steady.bind_timeout) == (1, 10.0)
