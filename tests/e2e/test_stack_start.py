"""A stack that does not come up says why: the service that timed out, its /readyz answer, and the
last lines of every other process's log (the one to blame is often another: the queue waits for the
informer's bootstrap)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ksched.launcher.stack import Stack, StackOptions

pytestmark = pytest.mark.e2e


async def test_a_queue_without_an_informer_names_what_it_waits_for(tmp_path: Path) -> None:
    stack = Stack(StackOptions(workdir=tmp_path, informers=0, schedulers=1, binders=1, nodes=1))
    try:
        with pytest.raises(TimeoutError) as caught:
            await stack.start(timeout=30)  # kubesim's start too: a loaded machine takes seconds
    finally:
        await stack.stop()
    text = str(caught.value)
    first = text.splitlines()[0]
    assert first.startswith("queue not ready in 30 s (its /readyz: HTTP 503"), first
    assert "bootstrap" in text  # the queue's readiness names the informer's bootstrap it waits for
    assert f"--- scheduler-0 (running), {tmp_path / 'scheduler-0.log'}:" in text
    assert f"--- binder-0 (running), {tmp_path / 'binder-0.log'}:" in text
