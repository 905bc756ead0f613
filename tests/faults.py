"""Arming the fault points of :mod:`ksched.service.faults` from a test."""

from __future__ import annotations

from pathlib import Path


def arm(directory: Path, point: str, action: str = "kill", key: str = "") -> Path:
    """Arm ``point`` (for the pod ``key``, ``namespace/name``, at a point reached per pod) in the
    faults directory with ``action`` (``kill``, ``stop`` or ``delay SECONDS``); returns the file, which
    a kill or a stop removes as it fires."""
    path = directory / point / key if key else directory / point
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(action)
    return path
