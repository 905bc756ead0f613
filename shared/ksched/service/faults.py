"""Fault points for tests: with ``KSCHED_TEST_FAULTS`` naming a directory, a service acts at point
``name`` as the file ``<directory>/<name>`` says; unset (production), nothing happens.

A point reached for one pod takes the pod's ``namespace/name`` as ``key`` and reads
``<directory>/<name>/<namespace>/<name>`` instead. The file holds one action:

- ``kill`` (or nothing): SIGKILL; ``stop``: SIGSTOP (the test continues it with SIGCONT). The file is
  removed as the action fires, so it fires once per file a test creates, in whichever process gets
  there first.
- ``delay SECONDS``, at the points that wait (:func:`fault_delay`): wait that long, every time (the
  file stays).

The points, each a constant documented beside its call: ``informer-after-ledger``,
``scheduler-after-group-commit``, ``before-assume`` (per pod), ``binder-mid-batch``, ``before-prebind``
(per pod), ``before-named-event``, and ``named-event-delay`` (waits).
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
from pathlib import Path

FAULTS_ENV = "KSCHED_TEST_FAULTS"

log = logging.getLogger(__name__)

_SIGNALS = {"kill": (signal.SIGKILL, "killing"), "stop": (signal.SIGSTOP, "stopping")}


def _file(name: str, key: str = "") -> Path | None:
    directory = os.environ.get(FAULTS_ENV)
    if not directory:
        return None
    return Path(directory) / name / key if key else Path(directory) / name


def armed(name: str) -> bool:
    """Whether the test armed point ``name`` (its file exists); :func:`fault_point` fires it."""
    path = _file(name)
    return path is not None and path.is_file()


def fault_point(name: str, key: str = "") -> None:
    """Kill or stop this process here if the test armed point ``name`` (for ``key``)."""
    path = _file(name, key)
    if path is None:
        return
    try:
        action = path.read_text().strip() or "kill"
        path.unlink()  # once: a process that lost the race finds it gone
    except (FileNotFoundError, IsADirectoryError):  # not armed (a directory: the points of pods)
        return
    if action not in _SIGNALS:
        log.error("fault point %s: unknown action %r", name, action)
        return
    sig, doing = _SIGNALS[action]
    log.warning("fault point %s%s: %s this process", name, f" ({key})" if key else "", doing)
    os.kill(os.getpid(), sig)


async def fault_delay(name: str) -> None:
    """Wait here the seconds of the test's ``delay SECONDS`` for point ``name``."""
    path = _file(name)
    if path is None:
        return
    try:
        action, seconds = path.read_text().split()
    except (FileNotFoundError, IsADirectoryError, ValueError):
        return
    if action == "delay":
        await asyncio.sleep(float(seconds))
