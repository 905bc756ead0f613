"""CPU time by event-loop callback (``KSCHED_LOOP_CPU=DIR``): where a service's CPU goes, exactly.

Every callback the event loop runs (a step of a task, a protocol's ``data_received``, a timer) is
timed on the process's CPU clock and charged to a label: ``task:<coroutine>[<task name>]`` for a
task's step, the callback's qualified name otherwise. Nothing is sampled, so nothing is charged
that the process did not spend: a sampling profiler on a busy machine charges a system call the
time the process then waited for a core (docs/benchmarks-history.md, "Socket sends are not where the CPU
goes"). What runs outside callbacks (start-up before the loop, the loop's own polling) is reported
as the rest. Costs about a microsecond per callback.

The report goes to ``DIR/<service>-<pid>.txt`` when the service stops and every
:data:`WRITE_EVERY` seconds meanwhile. It needs asyncio's own event loop (uvloop's callbacks are
not Python objects): a service that runs on uvloop runs on asyncio's loop while accounting.
"""

from __future__ import annotations

import asyncio
import asyncio.events
import os
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

ENV = "KSCHED_LOOP_CPU"
WRITE_EVERY = 5.0
"""Seconds between two writes of the report while the service runs."""
TOP = 40
"""Labels listed in a report (the largest)."""


def label(callback: Callable[..., Any]) -> str:
    """What a callback is charged to: a task step to its coroutine and what tells its tasks apart
    (the task's name unless it is asyncio's ``Task-<n>``, else the subject of a NATS subscription's
    task), any other callback to its qualified name."""
    owner = getattr(callback, "__self__", None)
    if not isinstance(owner, asyncio.Task):
        return str(getattr(callback, "__qualname__", None) or type(callback).__qualname__)
    coro = owner.get_coro()
    name = owner.get_name()
    if name.startswith("Task-") and name[5:].isdigit():
        frame = getattr(coro, "cr_frame", None)
        subject = getattr(frame.f_locals.get("self"), "subject", None) if frame is not None else None
        name = subject if isinstance(subject, str) else ""
    qualname = getattr(coro, "__qualname__", type(coro).__name__)
    return f"task:{qualname}[{name}]" if name else f"task:{qualname}"


class LoopCpu:
    """The CPU seconds and runs of each label, accounted once :meth:`install` patched the loop."""

    def __init__(self, clock: Callable[[], float] = time.process_time) -> None:
        self.clock = clock
        self.seconds: defaultdict[str, float] = defaultdict(float)
        self.runs: Counter[str] = Counter()
        self._original: Callable[[asyncio.Handle], None] | None = None

    def install(self) -> None:
        """Time every callback of asyncio's event loops in this process from now on."""
        if self._original is not None:
            return
        original = asyncio.events.Handle._run
        seconds, runs, clock = self.seconds, self.runs, self.clock

        def timed_run(handle: asyncio.Handle) -> None:
            name = label(handle._callback)  # type: ignore[attr-defined]
            started = clock()
            try:
                original(handle)
            finally:
                seconds[name] += clock() - started
                runs[name] += 1

        self._original = original
        asyncio.events.Handle._run = timed_run  # type: ignore[method-assign,assignment]

    def uninstall(self) -> None:
        if self._original is not None:
            asyncio.events.Handle._run = self._original  # type: ignore[method-assign,assignment]
            self._original = None

    def report(self, title: str) -> str:
        """The labels by CPU seconds, largest first, and the process's CPU outside callbacks."""
        total = self.clock()
        inside = sum(self.seconds.values())
        lines = [
            f"{title}: {total:.3f} s of CPU, {inside:.3f} s in event-loop callbacks, "
            f"{total - inside:.3f} s outside them (start-up, the loop's polling)",
            "cpu_seconds  runs  label",
        ]
        for name, spent in sorted(self.seconds.items(), key=lambda item: -item[1])[:TOP]:
            lines.append(f"{spent:11.3f}  {self.runs[name]}  {name}")
        return "\n".join(lines) + "\n"

    def write(self, directory: Path, service: str) -> Path:
        directory.mkdir(parents=True, exist_ok=True)
        path = directory / f"{service}-{os.getpid()}.txt"
        path.write_text(self.report(f"ksched {service} (pid {os.getpid()})"))
        return path

    async def write_every(self, directory: Path, service: str, every: float = WRITE_EVERY) -> None:
        """Write the report every ``every`` seconds until cancelled."""
        while True:
            await asyncio.sleep(every)
            self.write(directory, service)


def directory() -> Path | None:
    """``KSCHED_LOOP_CPU``'s directory (None: not accounting)."""
    value = os.environ.get(ENV, "").strip()
    return Path(value) if value else None
