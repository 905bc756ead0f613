"""``ksched bench compare`` at a tiny size against the real 1.36.2 control planes of
``../shared/kube-1.36``: every shape in a burst, and ``plain`` at a steady rate. Both sides must bind
every pod, and the last lines are one JSON report per shape with the figures of each side.

The two invocations run at the same time, each with ``--sides-at-once`` (their figures are not
comparable then; only their shape is checked), to keep the test near a minute."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from ksched.bench.shapes import SHAPES
from tests.fixtures.kube136 import kube_folder

pytestmark = pytest.mark.e2e

NODES, PODS = 20, 40
SIDE_PROCESSES = {
    "kube_scheduler": {"kube-scheduler", "total"},
    "ksched": {"informer", "queue", "scheduler-0", "binder-0", "nats-server", "total"},
}


async def _compare(kube: Path, workdir: Path, *args: str) -> tuple[int, list[str], str]:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "ksched.cli",
        "bench",
        "compare",
        "--kube",
        str(kube),
        "--nodes",
        str(NODES),
        "--pods",
        str(PODS),
        "--sides-at-once",
        "--workdir",
        str(workdir),
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(), 240)
    return process.returncode or 0, out.decode().splitlines(), err.decode()


def _check_side(report: dict[str, Any], side: str) -> None:
    figures = report[side]
    assert figures["bound"] == PODS, figures
    assert figures["pods_per_second"] > 0
    assert set(figures["cpu_ms_per_pod"]) == SIDE_PROCESSES[side]
    per_process = [ms for name, ms in figures["cpu_ms_per_pod"].items() if name != "total"]
    assert figures["cpu_ms_per_pod"]["total"] == pytest.approx(sum(per_process), abs=0.01)
    assert set(figures["control_plane_cpu_ms_per_pod"]) == {"kube-apiserver", "etcd", "total"}
    latency = figures["latency_ms"]
    assert set(latency) == {"p50", "p90", "p99", "max"}
    assert 0 <= latency["p50"] <= latency["p90"] <= latency["p99"] <= latency["max"]
    assert figures["client"]["create_failed"] == 0


async def test_compare_binds_every_pod_on_both_sides_and_reports_each_shape(tmp_path: Path) -> None:
    kube = kube_folder()
    burst, steady = await asyncio.gather(
        _compare(kube, tmp_path / "burst", "--shape", ",".join(SHAPES)),
        _compare(kube, tmp_path / "steady", "--shape", "plain", "--rate", "40"),
    )
    for (code, lines, err), shapes, rate in ((burst, SHAPES, 0.0), (steady, ("plain",), 40.0)):
        assert code == 0, "\n".join([*lines[-20:], err[-3000:]])
        reports = [json.loads(line) for line in lines[-len(shapes) :]]
        assert [r["shape"] for r in reports] == list(shapes)
        assert any(line.startswith("[kube-scheduler] ") for line in lines)  # progress lines first
        for report in reports:
            assert report["ok"] is True
            assert (report["nodes"], report["pods"], report["rate"]) == (NODES, PODS, rate)
            assert report["clients"] == (1 if rate else 2)
            assert report["ksched_credentials"].startswith("admin.kubeconfig")
            for side in SIDE_PROCESSES:
                _check_side(report, side)
    steady_report = json.loads(steady[1][-1])
    # at 40 pods/s the 40 pods take about a second to create on each side
    assert all(steady_report[side]["seconds"] >= 0.9 for side in SIDE_PROCESSES)
