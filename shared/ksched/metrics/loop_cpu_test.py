"""LoopCpu: every event-loop callback's CPU charged to its task (or callback), on the CPU clock."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from ksched.metrics import loop_cpu


def burn(seconds: float) -> None:
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass


async def busy() -> None:
    for _ in range(3):
        burn(0.02)
        await asyncio.sleep(0)


async def idle() -> None:
    await asyncio.sleep(0.2)  # waiting costs no CPU


async def test_tasks_are_charged_their_cpu_and_waiting_is_not(tmp_path: Path) -> None:
    accounting = loop_cpu.LoopCpu()
    accounting.install()
    try:
        await asyncio.gather(
            asyncio.create_task(busy(), name="worker"), asyncio.create_task(idle(), name="sleeper")
        )
        asyncio.get_running_loop().call_soon(burn, 0.01)
        await asyncio.sleep(0.01)
    finally:
        accounting.uninstall()
    worker = accounting.seconds["task:busy[worker]"]
    assert 0.06 <= worker < 0.2, dict(accounting.seconds)
    assert accounting.runs["task:busy[worker]"] == 4  # three steps and the last
    assert accounting.seconds["task:idle[sleeper]"] < 0.01
    assert accounting.seconds["burn"] >= 0.01

    path = accounting.write(tmp_path / "cpu", "queue")
    report = path.read_text()
    assert path.name.startswith("queue-") and "s of CPU" in report
    assert report.splitlines()[2].endswith("task:busy[worker]")  # the largest first


async def test_tasks_without_a_name_of_their_own_share_their_coroutine_s_label() -> None:
    accounting = loop_cpu.LoopCpu()
    accounting.install()
    try:
        await asyncio.gather(*(asyncio.create_task(busy()) for _ in range(2)))
    finally:
        accounting.uninstall()
    assert accounting.runs["task:busy"] == 8 and "task:busy[worker]" not in accounting.seconds


async def test_uninstalled_the_loop_runs_as_before() -> None:
    accounting = loop_cpu.LoopCpu()
    accounting.install()
    accounting.uninstall()
    await asyncio.sleep(0)
    assert not accounting.seconds


def test_the_directory_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(loop_cpu.ENV, raising=False)
    assert loop_cpu.directory() is None
    monkeypatch.setenv(loop_cpu.ENV, "/tmp/x")
    assert loop_cpu.directory() == Path("/tmp/x")
