"""``ksched queue`` as a service of the shared shell (:func:`ksched.service.lifecycle.serve`): the
process around one :class:`~ksched_queue.service.QueueService` — the NATS connection, /metrics and
the probes, tracing, and leader election through the shared
:class:`~ksched.service.leadership.Leadership` (a standby is ready when connected, and serves once
it leads)."""

from __future__ import annotations

import asyncio
import logging

from ksched.bus.connect import Bus, connect
from ksched.bus.subjects import Subjects
from ksched.client.config import api_client
from ksched.client.rest import Client
from ksched.service.http import service_health_server
from ksched.service.leadership import Leadership
from ksched.service.shutdown import stop_steps
from ksched.service.tasks import TaskGroup
from ksched.tracing.export import service_tracer

from .clock import Clock, SystemClock
from .metrics import bind_gauges, bind_queue_metrics
from .service import QueueService
from .settings import QueueSettings, build_core
from .tracing import QueueTracing

log = logging.getLogger(__name__)


class QueueServer:
    """One queue process. ``started`` is set once it serves, or waits as a standby (``port`` is
    the HTTP port then, useful with port 0)."""

    def __init__(self, settings: QueueSettings, *, clock: Clock | None = None) -> None:
        common = settings.common
        self.settings = settings
        self.clock = clock or SystemClock()
        self.core = build_core(settings, self.clock)
        self.tracer = service_tracer("queue", common)
        QueueTracing(self.tracer, self.core.queue).install(self.core)
        self.tasks = TaskGroup()
        self.health = service_health_server(
            common, "ksched-queue", settings.scheduler_config, self.core.debug_state
        )
        self.health.live_checks["tasks"] = lambda: (not self.tasks.failed.is_set(), str(self.tasks.failure))
        self.leadership = Leadership("queue", common.identity, settings.election)
        """One queue serves; losing the Lease calls ``leadership.on_lost`` (default: exit)."""
        self.bus: Bus | None = None
        self.api: Client | None = None
        self.service: QueueService | None = None
        self.port = 0
        self.started = asyncio.Event()

    async def start(self) -> None:
        common = self.settings.common
        bus = self.bus = await connect(
            common.nats,
            name=common.identity,
            subjects=Subjects(common.subject_prefix),
            initial_timeout=self.settings.nats_initial_timeout,
            jetstream_replicas=common.jetstream_replicas,
            **common.nats_credentials.connect_kwargs(),
        )
        self.tracer.start(bus)
        service = self.service = QueueService(
            self.settings, self.core, bus, clock=self.clock, tasks=self.tasks
        )
        service.acting = self.leadership.acting
        self.health.ready_checks["nats+bootstrap"] = lambda: (
            service.ready if self.leadership.acting() else (bus.ready, "not connected to NATS")
        )
        bind_gauges(self.core.queue.counts, lambda: len(self.core.leases))
        bind_queue_metrics(self.core)
        self.port = await self.health.start()
        if self.leadership.elected:
            self.api = await api_client(common.kubeconfig, component="ksched-queue", master=common.master)
            self.leadership.start(self.api, self.health)
            self.started.set()
        self.tasks.spawn("lead", self._serve_when_leading)

    async def _serve_when_leading(self) -> None:
        assert self.service is not None
        await self.leadership.wait_leader()
        await self.service.start()
        common = self.settings.common
        log.info(
            "queue %s serving profiles %s on %s (prefix %s), metrics on %s:%d",
            common.identity,
            ", ".join(self.settings.profile_names),
            common.nats,
            common.subject_prefix,
            common.http_host,
            self.port,
        )
        self.started.set()

    async def stop(self) -> None:
        self.leadership.stopping = True
        await stop_steps(
            "queue",
            [
                ("queue", self.service.stop if self.service is not None else None),
                ("tasks", self.tasks.cancel_all),
                ("leadership", self.leadership.close),  # stopped serving: step down, release the Lease
                ("api", self.api.close if self.api is not None else None),
                ("tracer", self.tracer.close),
                ("bus", self.bus.close if self.bus is not None else None),
                ("health", self.health.stop),
            ],
        )
