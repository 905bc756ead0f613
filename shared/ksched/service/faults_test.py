"""Fault points: what a test's file makes a service do, and that nothing happens without one."""

from __future__ import annotations

import os
import signal
from pathlib import Path
from types import SimpleNamespace

import pytest

from ksched.service import faults
from ksched.service.faults import FAULTS_ENV, armed, fault_delay, fault_point
from tests.faults import arm


@pytest.fixture
def signals(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    sent: list[int] = []
    monkeypatch.setattr(os, "kill", lambda pid, sig: sent.append(sig) if pid == os.getpid() else None)
    return sent


@pytest.fixture
def directory(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    monkeypatch.setenv(FAULTS_ENV, str(tmp_path))
    return tmp_path


def test_nothing_happens_without_the_variable(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, signals: list[int]
) -> None:
    monkeypatch.delenv(FAULTS_ENV, raising=False)
    arm(tmp_path, "point")
    fault_point("point")
    assert signals == [] and not armed("point")


@pytest.mark.parametrize(
    ("action", "sig"), [("", signal.SIGKILL), ("kill", signal.SIGKILL), ("stop", signal.SIGSTOP)]
)
def test_an_armed_point_fires_once(directory: Path, signals: list[int], action: str, sig: int) -> None:
    fault_point("point")
    assert signals == []
    path = arm(directory, "point", action)
    assert armed("point")
    fault_point("point")
    fault_point("point")
    assert signals == [sig] and not path.exists()


def test_a_pod_s_point_fires_for_that_pod(directory: Path, signals: list[int]) -> None:
    arm(directory, "before", "stop", "default/p")
    fault_point("before", "default/q")
    fault_point("before")
    assert signals == []
    fault_point("before", "default/p")
    fault_point("before", "default/p")
    assert signals == [signal.SIGSTOP]


def test_an_unknown_action_does_nothing(
    directory: Path, signals: list[int], caplog: pytest.LogCaptureFixture
) -> None:
    arm(directory, "point", "explode")
    fault_point("point")
    assert signals == [] and "unknown action 'explode'" in caplog.text


async def test_a_delay_waits_every_time(directory: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    waited: list[float] = []

    async def sleep(seconds: float) -> None:
        waited.append(seconds)

    # only the faults module's view of asyncio: patching asyncio.sleep itself would turn every other
    # task's sleep loop on the test's event loop (a session fixture's) into a busy loop
    monkeypatch.setattr(faults, "asyncio", SimpleNamespace(sleep=sleep))
    await fault_delay("delay")
    arm(directory, "delay", "delay 0.25")
    await fault_delay("delay")
    await fault_delay("delay")
    assert waited == [0.25, 0.25]
