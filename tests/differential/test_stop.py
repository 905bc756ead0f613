"""``ksched differential`` stopped with SIGTERM (a CI job's timeout, ``kill``) starts no new case,
stops its clusters once the case under way ends, and reports what it compared: a run killed half-way
used to leave its kube-apiservers, etcds and schedulers running."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.fixtures.kube136 import kube_folder

pytestmark = pytest.mark.e2e


def _processes_under(folder: Path) -> list[str]:
    """The command lines of the processes that name ``folder`` (the clusters' parts do)."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if str(folder) in cmdline:
            found.append(cmdline)
    return found


@pytest.mark.timeout(300)
def test_sigterm_stops_the_clusters_and_reports_what_was_compared(tmp_path: Path) -> None:
    kube = kube_folder()
    workdir = tmp_path / "run"
    command = [sys.executable, "-m", "ksched.cli", "differential", "--kube", str(kube), "--cases", "100"]
    command += ["--seed", "3", "--categories", "resources", "--store", "", "--workdir", str(workdir)]
    run = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert run.stdout is not None
    lines = []
    for line in run.stdout:
        lines.append(line.rstrip())
        if line.startswith("[1/100]"):  # one case compared
            run.send_signal(signal.SIGTERM)
            break
    try:
        rest, _ = run.communicate(timeout=120)
    except subprocess.TimeoutExpired as exc:
        run.kill()
        raise AssertionError(f"not stopped: {exc.output!r}") from exc
    lines += rest.splitlines()
    assert run.returncode == 0, "\n".join(lines)
    assert any(line.startswith("stopped after ") for line in lines), lines  # the case under way ended
    report = json.loads(lines[-1])
    assert 1 <= report["cases"] < 100 and report["disagreements"] == 0
    deadline = time.monotonic() + 10
    while _processes_under(workdir) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _processes_under(workdir)
