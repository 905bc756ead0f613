"""The writer of group commits' outcomes (docs/gang.md, "The group's outcome"): one job per commit
that tries again with backoff until the write is settled, and leaves it to the successor once this
informer stops acting; a commit is pending (its record kept) until then."""

from __future__ import annotations

import asyncio

from ksched_informer.outcomes import GroupOutcomes

from ksched.service.tasks import TaskGroup


async def test_a_write_is_tried_again_until_settled() -> None:
    calls: list[tuple[str, str]] = []

    async def write(namespace: str, name: str) -> bool:
        calls.append((namespace, name))
        return len(calls) == 3  # the API answers at the third try

    tasks = TaskGroup()
    outcomes = GroupOutcomes(write, lambda: True, tasks, retry=0.01)
    outcomes.committed("c1", "ns/train")
    outcomes.committed("c1", "ns/train")  # once per commit
    assert not outcomes.written("c1")
    for _ in range(100):
        if outcomes.written("c1"):
            break
        await asyncio.sleep(0.01)
    assert outcomes.written("c1") and calls == [("ns", "train")] * 3
    await tasks.cancel_all()


async def test_an_informer_that_stops_acting_leaves_the_write_to_its_successor() -> None:
    acting = True
    calls = 0

    async def write(namespace: str, name: str) -> bool:
        nonlocal acting, calls
        calls += 1
        acting = False  # the Lease is lost meanwhile
        return False

    tasks = TaskGroup()
    outcomes = GroupOutcomes(write, lambda: acting, tasks, retry=0.01)
    outcomes.committed("c1", "ns/train")
    await asyncio.sleep(0.1)
    assert calls == 1 and not outcomes.written("c1")  # still pending: the record stays for the successor
    await tasks.cancel_all()
