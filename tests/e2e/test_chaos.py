"""The 2-minute chaos run inside ``make test`` (``make chaos`` is the 5,000-node, 20,000-pod one):
every fault of ``ksched bench chaos`` once, in a seeded order, while 900 pods are created; nothing
lost, nothing bound twice, no node overcommitted, and every fault recovered from."""

from __future__ import annotations

from pathlib import Path

import pytest

from ksched.bench.chaos import FAULTS, ChaosOptions, double_bound, run

pytestmark = pytest.mark.e2e


async def test_every_fault_under_load_loses_nothing(tmp_path: Path) -> None:
    lines: list[str] = []
    report = await run(ChaosOptions(nodes=60, pods=900, seed=7, workdir=tmp_path), log=lines.append)
    print(report.table())
    assert sorted(f.fault for f in report.faults) == sorted(FAULTS)
    assert report.bound == 900, report.table()
    assert (report.lost, report.double_bound, report.overcommitted_nodes) == (0, 0, 0), (
        report.double_bound_examples
    )
    unrecovered = [f.fault for f in report.faults if f.recovered_after is None]
    assert not unrecovered, report.table()


def _event(pod: str, reason: str, note: str = "", series: bool = False) -> dict[str, object]:
    event: dict[str, object] = {"regarding": {"name": pod}, "reason": reason, "note": note}
    if series:
        event["series"] = {"count": 2}
    return event


def test_double_bound_reads_the_schedulers_events() -> None:
    events = [
        _event("once", "Scheduled", "Successfully assigned chaos/once to n1"),
        _event("twice", "Scheduled"),
        _event("twice", "Scheduled"),
        _event("series", "Scheduled", series=True),
        _event("refused", "Scheduled"),
        _event("refused", "FailedScheduling", "pod chaos/refused is already assigned to node n2"),
        _event("pending", "FailedScheduling", "0/3 nodes are available: 3 Insufficient cpu."),
    ]
    assert double_bound(events) == {"twice", "series", "refused"}
