from __future__ import annotations

import os

from ksched.bench import procstat


def test_per_pod_is_cpu_milliseconds_per_bound_pod() -> None:
    assert procstat.per_pod({"informer": 1.5, "binder-0": 0.3}, 1000) == {"informer": 1.5, "binder-0": 0.3}
    assert procstat.per_pod({"informer": 1.5}, 0) == {"informer": 0.0}


def test_the_ceiling_counts_only_processes_that_run_once() -> None:
    costs = {
        "kubesim": 9.0,
        "scheduler-0": 5.0,
        "binder-1": 4.0,
        "informer": 0.8,
        "queue-0": 2.0,
        "nats-server": 1.0,
    }
    assert procstat.ceiling(costs) == 500.0  # the queue's 2 ms; replicated and kubesim costs aside
    assert procstat.ceiling({"scheduler-0": 5.0}) is None


def test_cpu_seconds_of_this_process_and_of_none() -> None:
    assert procstat.cpu_seconds(os.getpid()) > 0
    assert procstat.cpu_seconds(None) == 0.0
    assert procstat.rss_mib(os.getpid()) > 0
