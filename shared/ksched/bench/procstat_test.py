from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable

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


def _busy(seconds: float) -> subprocess.Popen[bytes]:
    """A child process that burns ``seconds`` of CPU, then sleeps until killed."""
    code = (
        f"import time\nend = time.process_time() + {seconds}\n"
        "while time.process_time() < end: pass\ntime.sleep(60)"
    )
    return subprocess.Popen([sys.executable, "-c", code])


def _until(check: Callable[[], bool]) -> None:
    deadline = time.monotonic() + 20
    while not check():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def test_the_cpu_meter_keeps_what_a_restarted_process_used() -> None:
    first = _busy(0.3)
    pids: dict[str, int | None] = {"informer": first.pid}
    meter = procstat.CpuMeter(lambda: pids)
    meter.start()
    try:
        _until(lambda: meter.sample()["informer"] >= 0.25)
        first.kill()
        first.wait()
        assert meter.sample()["informer"] >= 0.25  # exited, not restarted: what it used counts
        second = _busy(0.2)
        pids["informer"] = second.pid
        try:
            _until(lambda: meter.sample()["informer"] >= 0.45)  # both processes' CPU, never negative
        finally:
            second.kill()
            second.wait()
    finally:
        first.kill()
