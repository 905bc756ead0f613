"""CPU and memory of the benchmark's processes (from ``/proc``), and what they bound.

``per_pod``: CPU milliseconds per bound pod and process. ``ceiling``: the pods/s no number of
scheduler or binder replicas can pass, 1000 divided by the largest per-pod cost among the
processes that run once (the informer and queue leaders, nats-server).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

#: processes of which one instance does the work whatever the replica counts (name prefixes)
SINGLE: tuple[str, ...] = ("informer", "queue", "nats-server")


def cpu_seconds(pid: int | None) -> float:
    """User plus system CPU seconds of a live process (0 when it is gone)."""
    if pid is None:
        return 0.0
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_mib(pid: int | None) -> float:
    if pid is None:
        return 0.0
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        pass
    return 0.0


def per_pod(cpu: Mapping[str, float], pods: int) -> dict[str, float]:
    """CPU milliseconds per pod for each process."""
    return {name: round(seconds * 1000 / pods, 3) if pods else 0.0 for name, seconds in cpu.items()}


def ceiling(ms_per_pod: Mapping[str, float]) -> float | None:
    """1000 / the largest per-pod cost among :data:`SINGLE` processes; None without any."""
    costs = [
        ms for name, ms in ms_per_pod.items() if any(name == s or name.startswith(s + "-") for s in SINGLE)
    ]
    worst = max(costs, default=0.0)
    return round(1000 / worst, 1) if worst > 0 else None
