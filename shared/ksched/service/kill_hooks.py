"""Crash points for kill -9 tests: with ``KSCHED_TEST_KILL_HOOKS`` set to a directory, a service
that reaches hook ``name`` kills itself (SIGKILL) if the file ``<directory>/<name>`` exists,
removing it first (so the hook fires once per file a test creates). Unset: nothing happens."""

from __future__ import annotations

import logging
import os
import signal
from pathlib import Path

KILL_HOOKS_ENV = "KSCHED_TEST_KILL_HOOKS"

log = logging.getLogger(__name__)


def armed(name: str) -> bool:
    """Whether the test armed hook ``name`` (its file exists); :func:`kill_point` fires it."""
    directory = os.environ.get(KILL_HOOKS_ENV)
    return directory is not None and directory != "" and (Path(directory) / name).exists()


def kill_point(name: str) -> None:
    """SIGKILL this process here if the test armed hook ``name``."""
    directory = os.environ.get(KILL_HOOKS_ENV)
    if not directory:
        return
    armed = Path(directory) / name
    try:
        armed.unlink()
    except FileNotFoundError:
        return
    log.warning("test hook %s: killing this process (SIGKILL)", name)
    os.kill(os.getpid(), signal.SIGKILL)
