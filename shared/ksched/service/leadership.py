"""One active instance of a singleton service (informer, queue): the shared way to campaign.

:class:`Leadership` wraps the :class:`~ksched.client.leader.LeaseElector` for a service: without
an :class:`~ksched.client.leader.ElectionConfig` the instance acts at once; with one it is a
standby until it leads (ready as a standby: connected, nothing to serve), and losing the Lease
calls ``on_lost`` once (default: exit the process at once, docs/ha.md). A crash of the election
itself counts as losing it."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from ksched.client.leader import ElectionConfig, ElectionThread, exit_on_lost_leadership
from ksched.client.rest import Client
from ksched.service.http import HealthServer

log = logging.getLogger(__name__)


class Leadership:
    """Whether and when ``service`` acts; ``start()`` campaigns, ``close()`` steps down."""

    def __init__(self, service: str, identity: str, config: ElectionConfig | None) -> None:
        self.service = service
        self.identity = identity
        self.config = config
        self.elector: ElectionThread | None = None
        self.on_lost: Callable[[], None] = self._exit
        """What losing the leadership does (default: exit the process, from the election thread at
        once, however busy the service's loop is; a replacement runs on the service's loop)."""
        self.stopping = False
        self._lost = False

    @property
    def elected(self) -> bool:
        """Whether this instance runs an election at all."""
        return self.config is not None

    @property
    def standby(self) -> bool:
        """Waiting for the Lease."""
        return self.elector is not None and not self.elector.is_leader

    def acting(self) -> bool:
        """Whether this instance may act (serve, write): it leads, or runs alone."""
        return self.config is None or (self.elector is not None and self.elector.is_leader)

    def start(self, api: Client, health: HealthServer) -> None:
        """Campaign for the Lease through ``api``; ``health`` reports the election's readiness."""
        assert self.config is not None, "no election configured"
        self.elector = ElectionThread(
            api,
            self.config,
            on_stopped_leading=self._stopped_leading,
            on_stopped_leading_now=self._stopped_now,
        )
        health.ready_checks["leader-election"] = self.elector.status
        self.elector.start().add_done_callback(self._election_ended)
        log.info("%s %s: standby, waiting for lease %s", self.service, self.identity, self.elector.lease_ref)

    async def wait_leader(self) -> None:
        """Return once this instance may act."""
        if self.elector is not None:
            await self.elector.wait_leader()

    def describe(self) -> dict[str, Any] | None:
        """For /debug."""
        return self.elector.describe() if self.elector is not None else None

    async def close(self) -> None:
        """Stop campaigning: step down and release the Lease. Call once the service stopped acting."""
        self.stopping = True
        if self.elector is not None:
            await self.elector.stop()

    def _stopped_leading(self) -> None:
        if self.stopping or self._lost:
            return
        self._lost = True
        self.on_lost()

    def _stopped_now(self) -> None:
        """In the election thread: exit before anything more is written, however busy the loop."""
        if self.on_lost == self._exit and not self.stopping and not self._lost:
            self._exit()

    def _election_ended(self, task: asyncio.Future[None]) -> None:
        """After losing, the callback already ran; an exception (a bug) counts as losing too."""
        if not self.stopping and not task.cancelled() and task.exception() is not None:
            log.error("%s: leader election failed: %r", self.service, task.exception())
            self._stopped_leading()

    def _exit(self) -> None:
        assert self.elector is not None
        exit_on_lost_leadership(self.service, self.elector)
