"""The outcome of a group commit on the API (docs/gang.md, "The group's outcome"): the PodGroup's
``PodGroupScheduled=True``, written by the informer that holds the commit, driven by the commit
record. A commit record stays until its outcome is settled (and its members are bound), so a
successor that finds the record after a failover writes the outcome again; the write is idempotent
(a fresh read, written only when it changes, a True never regressed)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from ksched.service.tasks import TaskGroup

log = logging.getLogger(__name__)

Write = Callable[[str, str], Awaitable[bool]]
"""Writes PodGroupScheduled=True on the PodGroup (namespace, name); True once settled (written, already
so, no such PodGroup, refused for good), False when a later try may succeed."""


class GroupOutcomes:
    """The commits whose outcome is not written yet, each written by one background job that retries
    (with backoff) while this informer acts; one that stops acting leaves it to its successor."""

    def __init__(
        self,
        write: Write,
        acting: Callable[[], bool],
        tasks: TaskGroup,
        retry: float = 0.5,
        max_retry: float = 30.0,
    ) -> None:
        self.write = write
        self.acting = acting
        self.tasks = tasks
        self.retry = retry
        self.max_retry = max_retry
        #: commit id -> ``namespace/name`` of its group, while its outcome is not written
        self.unwritten: dict[str, str] = {}

    def committed(self, commit_id: str, group: str) -> None:
        """The group commit ``commit_id`` of ``group`` is recorded: write its outcome."""
        if commit_id in self.unwritten:
            return
        self.unwritten[commit_id] = group
        self.tasks.job("pod-group-outcome", self._write(commit_id, group))

    def written(self, commit_id: str) -> bool:
        """Whether ``commit_id``'s outcome is settled (its record may go once no member is assumed)."""
        return commit_id not in self.unwritten

    async def _write(self, commit_id: str, group: str) -> None:
        namespace, _, name = group.partition("/")
        pause = self.retry
        while self.acting():
            if await self.write(namespace, name):
                del self.unwritten[commit_id]
                return
            log.warning("PodGroupScheduled of %s not written yet; trying again in %.1f s", group, pause)
            await asyncio.sleep(pause)
            pause = min(2 * pause, self.max_retry)
