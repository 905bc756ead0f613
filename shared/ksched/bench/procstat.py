"""CPU and memory of the benchmark's processes (from ``/proc``), and what they bound.

``per_pod``: CPU milliseconds per bound pod and process. ``ceiling``: the pods/s no number of
scheduler or binder replicas can pass, 1000 divided by the largest per-pod cost among the
processes that run once (the informer and queue leaders, nats-server).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
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


class CpuMeter:
    """CPU seconds of named processes since :meth:`start`, across restarts: a process that exits
    counts with what it had used at the last :meth:`sample` (call it often), its successor from 0."""

    def __init__(self, pids: Callable[[], Mapping[str, int | None]]) -> None:
        self._pids = pids
        self._base: dict[str, tuple[int | None, float]] = {}
        self._last: dict[str, float] = {}
        self._gone: dict[str, float] = {}

    def start(self) -> None:
        self._base = {name: (pid, cpu_seconds(pid)) for name, pid in self._pids().items()}
        self._last = {name: cpu for name, (_, cpu) in self._base.items()}
        self._gone = {}

    def sample(self) -> dict[str, float]:
        """Each process's CPU seconds since :meth:`start`, now."""
        out: dict[str, float] = {}
        for name, pid in self._pids().items():
            base_pid, base = self._base.get(name, (pid, 0.0))
            if pid != base_pid:  # restarted: keep what the old one used, count the new one from 0
                self._gone[name] = self._gone.get(name, 0.0) + self._last.get(name, base) - base
                self._base[name] = (pid, 0.0)
                base = 0.0
            now = cpu_seconds(pid)
            if now == 0.0 and pid is not None and not Path(f"/proc/{pid}").exists():
                now = self._last.get(name, base)  # exited, not restarted yet
            self._last[name] = now
            out[name] = round(self._gone.get(name, 0.0) + now - base, 2)
        return out


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
