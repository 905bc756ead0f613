"""``ksched scheduler`` as a service of the shared shell (:func:`ksched.service.lifecycle.serve`): the
process around one :class:`~ksched_scheduler.service.SchedulerService` — /metrics, the probes and
the debug state, the NATS connection, the Kubernetes API client (events, conditions, results; none
outside a cluster), tracing, and the graceful stop."""

from __future__ import annotations

import logging
from typing import Any

from ksched.bus.connect import Bus, connect
from ksched.bus.subjects import Subjects
from ksched.client.config import api_client, api_reachable
from ksched.client.rest import Client
from ksched.config.types import KubeSchedulerConfiguration
from ksched.extenders import HTTPExtenders
from ksched.reporting.reporter import Reporter
from ksched.reporting.result_writer import ResultWriter
from ksched.service.http import service_health_server
from ksched.service.shutdown import stop_replica
from ksched.service.tasks import TaskGroup
from ksched.tracing.export import service_tracer
from ksched_scheduler.core import percentiles
from ksched_scheduler.options import SchedulerOptions
from ksched_scheduler.service import SchedulerService

log = logging.getLogger(__name__)


class SchedulerServer:
    """One scheduler replica's process; ``service`` does the scheduling."""

    def __init__(self, options: SchedulerOptions, config: KubeSchedulerConfiguration) -> None:
        self.options = options
        common = options.common
        self.identity = common.identity
        self.subjects = Subjects(common.subject_prefix)
        self.tasks = TaskGroup()
        self.tracer = service_tracer("scheduler", common)
        self.service = SchedulerService(options, config, tasks=self.tasks, tracer=self.tracer)
        self.health = service_health_server(common, "ksched-scheduler", config, self.debug_state)
        self.bus: Bus | None = None
        self.api: Client | None = None
        self.results: ResultWriter | None = None

    @property
    def extenders(self) -> HTTPExtenders:
        return self.service.extenders

    async def start(self) -> None:
        common = self.options.common
        port = await self.health.start()
        log.info("scheduler %s: health and metrics on http://%s:%d", self.identity, common.http_host, port)
        self.health.live_checks["tasks"] = lambda: (not self.tasks.failed.is_set(), str(self.tasks.failure))
        self.health.ready_checks["nats"] = lambda: (self.bus is not None and self.bus.ready, "not connected")
        self.health.ready_checks["snapshot"] = lambda: (
            self.service.follower is not None and self.service.follower.synced.is_set(),
            "snapshot replica not in sync",
        )
        self.bus = await connect(
            common.nats,
            name=f"scheduler:{self.identity}",
            subjects=self.subjects,
            jetstream_replicas=common.jetstream_replicas,
            **common.nats_credentials.connect_kwargs(),
        )
        if api_reachable(common.kubeconfig):
            self.api = await api_client(common.kubeconfig, component="ksched-scheduler", master=common.master)
            self.service.api = self.api
            self.service.reporter = Reporter(self.api, self.tasks)
            if self.options.record_results:
                self.results = self.service.results = ResultWriter(self.api)
        self.tracer.start(self.bus)
        await self.service.start(self.bus)

    async def stop(self) -> None:
        """Graceful: stop popping, let assumes and reports under way finish, then disconnect."""
        await stop_replica("scheduler", self)

    def debug_state(self) -> dict[str, Any]:
        follower = self.service.follower
        replica = follower.replica if follower is not None else None
        return {
            "identity": self.identity,
            "epoch": replica.epoch if replica else "",
            "generation": replica.generation if replica else -1,
            "nodes": len(replica.snapshot.nodes) if replica else 0,
            "held_leases": len(self.service.core.held),
            "bootstrap_seconds": round(follower.bootstrap_seconds, 3) if follower else None,
            "delta_lag_ms": percentiles(follower.lag_samples) if follower else {},
            "inflight_placements": len(self.service.core.inflight),
            "tasks": self.tasks.names(),
            "background_jobs": self.tasks.jobs,
        }
