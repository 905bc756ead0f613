"""Full collections on a clock: automatic ones off and the youngest generation collected less often
while the task runs, one full collection per interval, CPython's thresholds back when it stops; a
bad setting names the variable."""

from __future__ import annotations

import asyncio
import gc
from typing import Any

import pytest

from ksched.service import gc_pacing


async def test_full_collections_run_on_the_clock_and_thresholds_come_back() -> None:
    before = gc.get_threshold()
    full: list[int] = []

    def seen(phase: str, info: dict[str, Any]) -> None:
        if phase == "stop" and info["generation"] == 2:
            full.append(1)

    gc.callbacks.append(seen)
    task = asyncio.create_task(gc_pacing.full_collections(0.05))
    try:
        await asyncio.sleep(0.01)
        assert gc.get_threshold() == (max(before[0], gc_pacing.YOUNG_THRESHOLD), before[1], gc_pacing.NEVER)
        for _ in range(200):  # two intervals at least; a loaded machine delays the task
            if len(full) >= 2:
                break
            await asyncio.sleep(0.05)
        assert len(full) >= 2
    finally:
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        gc.callbacks.remove(seen)
    assert gc.get_threshold() == before


def test_the_interval_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(gc_pacing.INTERVAL_ENV, raising=False)
    assert gc_pacing.interval() == gc_pacing.DEFAULT_INTERVAL
    monkeypatch.setenv(gc_pacing.INTERVAL_ENV, "0")
    assert gc_pacing.interval() == 0
    monkeypatch.setenv(gc_pacing.INTERVAL_ENV, "2.5")
    assert gc_pacing.interval() == 2.5
    for bad in ("soon", "-1"):
        monkeypatch.setenv(gc_pacing.INTERVAL_ENV, bad)
        with pytest.raises(ValueError, match=gc_pacing.INTERVAL_ENV):
            gc_pacing.interval()
