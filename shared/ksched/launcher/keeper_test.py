"""keep_services: restarts what exited, backs off while a restart fails, leaves kubesim alone."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any, cast

import pytest

from ksched.launcher import keeper
from ksched.launcher.stack import Proc, Stack


class _Process:
    def __init__(self, returncode: int | None) -> None:
        self.returncode = returncode
        self.pid = 42


class _Stack:
    """The part of Stack the keeper uses: ``queue`` and ``kubesim`` have exited; ``queue``'s first
    ``fail`` restarts do not come up."""

    def __init__(self, fail: int) -> None:
        self.procs = {
            name: Proc(name, name, [], None, Path(f"/tmp/{name}.log"), cast(Any, _Process(-9)))
            for name in ("queue", "kubesim")
        }
        self.fail = fail
        self.restarts: list[float] = []

    def exited(self) -> list[str]:
        return [name for name, p in self.procs.items() if p.process is not None and p.process.returncode]

    async def restart(self, name: str, timeout: float) -> None:
        self.restarts.append(asyncio.get_running_loop().time())
        if len(self.restarts) <= self.fail:
            raise RuntimeError(f"{name} exited; see the log:\nlast line")
        self.procs[name].process = cast(Any, _Process(None))


async def _keep(stack: _Stack, seconds: float) -> list[str]:
    said: list[str] = []
    task = asyncio.create_task(keeper.keep_services(cast(Stack, stack), said.append, check_seconds=0.01))
    await asyncio.sleep(seconds)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    return said


async def test_an_exited_service_is_started_again_and_kubesim_is_not() -> None:
    stack = _Stack(fail=0)
    said = await _keep(stack, 0.1)
    assert len(stack.restarts) == 1
    assert said[0].startswith("queue exited (status -9); starting it again")
    assert said[1] == "queue is up again (pid 42)"
    assert not any("kubesim" in line for line in said)


async def test_a_service_that_does_not_come_up_is_tried_again_later_and_later(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(keeper, "FIRST_DELAY", 0.05)
    stack = _Stack(fail=2)
    said = await _keep(stack, 0.6)
    assert len(stack.restarts) == 3  # failed, failed, up
    first, second = stack.restarts[1] - stack.restarts[0], stack.restarts[2] - stack.restarts[1]
    assert 0.05 <= first < second and second >= 0.1  # the delay doubles
    assert "queue did not come up again (queue exited; see the log:); next try in 0s" in said
    assert said[-1] == "queue is up again (pid 42)"
