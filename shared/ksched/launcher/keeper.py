"""What a kubelet does for ``ksched up``: start again every service that exits.

A singleton that lost its Lease exits with status 75 to come back as a standby (docs/ha.md), and a
crashed service is restarted the same way; one that keeps failing to come up is tried again after
a delay that doubles from 1 s to 60 s (a crash loop's backoff). kubesim is not restarted: it is
the cluster, and a new one would listen on another port."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from ksched.launcher.stack import Stack

CHECK_SECONDS = 1.0
FIRST_DELAY = 1.0
MAX_DELAY = 60.0


async def keep_services(
    stack: Stack,
    say: Callable[[str], None],
    *,
    check_seconds: float = CHECK_SECONDS,
    restart_timeout: float = 60.0,
) -> None:
    """Until cancelled: every ``check_seconds``, start again the services of ``stack`` that exited,
    telling ``say`` what happened."""
    loop = asyncio.get_running_loop()
    delay: dict[str, float] = {}
    due: dict[str, float] = {}
    while True:
        await asyncio.sleep(check_seconds)
        for name in stack.exited():
            proc = stack.procs[name]
            if proc.service == "kubesim" or due.get(name, 0.0) > loop.time():
                continue
            status = proc.process.returncode if proc.process is not None else None
            say(f"{name} exited (status {status}); starting it again (log: {proc.log_path})")
            try:
                await stack.restart(name, restart_timeout)
            except (RuntimeError, TimeoutError, OSError) as exc:
                wait = delay[name] = min(delay.get(name, FIRST_DELAY / 2) * 2, MAX_DELAY)
                due[name] = loop.time() + wait
                say(f"{name} did not come up again ({str(exc).splitlines()[0]}); next try in {wait:.0f}s")
            else:
                delay.pop(name, None)
                due.pop(name, None)
                say(f"{name} is up again (pid {proc.pid})")
