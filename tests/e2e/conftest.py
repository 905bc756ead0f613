"""Fixtures shared by the end-to-end tests; each module provides its own ``stack``. A failing test
that used a stack reports each service's state and last log lines (CI keeps nothing else)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Generator

import pytest
from kubernetes_asyncio.client import ApiClient

from ksched.launcher.stack import Stack
from tests.e2e.testing import kube_api, process_state

LOG_LINES = 25
"""Last log lines of each service reported with a failed test."""


@pytest.fixture
async def api(stack: Stack) -> AsyncIterator[ApiClient]:
    """A client of the module's stack's API server."""
    async with kube_api(stack.kubeconfig) as a:
        yield a


def _state(pid: int | None, returncode: int | None) -> str:
    if pid is None:
        return "not started"
    if returncode is not None:
        return f"exited {returncode}"
    state = process_state(pid)
    return f"pid {pid}, state {state}" if state is not None else "gone"


def stack_report(stack: Stack) -> str:
    """Each service process's state and its last :data:`LOG_LINES` log lines."""
    parts = []
    for name, proc in stack.procs.items():
        returncode = proc.process.returncode if proc.process is not None else None
        parts.append(f"--- {name} ({_state(proc.pid, returncode)}) {proc.log_path}")
        parts.append(stack.log_tail(name, LOG_LINES))
    return "\n".join(parts)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    stack = getattr(item, "funcargs", {}).get("stack")
    if report.failed and report.when == "call" and isinstance(stack, Stack):
        report.sections.append(("ksched services", stack_report(stack)))
    return report
