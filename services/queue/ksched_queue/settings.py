"""The queue service's typed configuration, and building the queue it describes."""

from __future__ import annotations

from dataclasses import dataclass, field

from ksched.bus.credentials import NatsCredentials
from ksched.config import KubeSchedulerConfiguration, build_frameworks
from ksched.features import DEFAULT as DEFAULT_GATES
from ksched.features import GANG_SCHEDULING, GENERIC_WORKLOAD, FeatureGates
from ksched.framework.runtime import Framework
from ksched.framework.snapshot import Snapshot
from ksched.plugins.dynamicresources import NAME as DRA_NAME
from ksched.plugins.dynamicresources import DynamicResources
from ksched.service.leader import ElectionConfig
from ksched.service.options import CommonOptions, scheduler_config
from ksched.service.tracing_config import TracingConfig

from .clock import Clock, SystemClock
from .core import QueueCore
from .gangs import QueueGangs
from .leases import DEFAULT_LEASE_SECONDS, LeaseTable
from .metrics import observe_incoming
from .priority_queue import (
    DEFAULT_POD_INITIAL_BACKOFF,
    DEFAULT_POD_MAX_BACKOFF,
    DEFAULT_POD_MAX_IN_UNSCHEDULABLE,
    IncomingObserver,
    SchedulingQueue,
)
from .profiles import profiles_from_frameworks

DEFAULT_HTTP_PORT = 10261


@dataclass(frozen=True)
class QueueSettings:
    """Everything ``ksched queue`` runs with. Durations are seconds."""

    scheduler_config: KubeSchedulerConfiguration
    nats: str = "nats://127.0.0.1:4222"
    subject_prefix: str = "ksched"
    identity: str = "queue"
    http_host: str = "127.0.0.1"
    http_port: int = DEFAULT_HTTP_PORT
    http_token: str | None = None
    """Bearer token of /metrics and /debug (ksched.service.http)."""
    lease_seconds: float = DEFAULT_LEASE_SECONDS
    pod_max_in_unschedulable: float = DEFAULT_POD_MAX_IN_UNSCHEDULABLE
    backoff_flush_interval: float = 1.0
    """Upstream flushes completed backoffs every second, aligned to whole seconds."""
    unschedulable_flush_interval: float = 30.0
    """Upstream checks for pods unschedulable too long every 30 s."""
    lease_check_interval: float = 0.5
    bootstrap_timeout: float = 30.0
    bootstrap_retry: float = 1.0
    repair_interval: float = 60.0
    """How often the queue compares what it holds with the informer's pending pods (the safety net)."""
    max_pop_wait: float = 30.0
    """Upper bound on a PopRequest's long poll, whatever it asks for."""
    nats_initial_timeout: float | None = None
    """Wait for the first NATS connection this long (None: forever, for a service started first)."""
    nats_credentials: NatsCredentials = field(default_factory=NatsCredentials)
    kubeconfig: str | None = None
    """The API is used for the leader-election Lease only (None: in-cluster)."""
    election: ElectionConfig | None = None
    """Leader election; None: this instance is the only one and serves at once."""
    jetstream_replicas: int = 1
    """Replicas of the feed and trace streams, if the queue is the first to create them."""
    feature_gates: FeatureGates = DEFAULT_GATES
    """GenericWorkload: pod groups are popped whole; GangScheduling: its PreEnqueue and hints."""
    tracing: TracingConfig | None = None
    """OpenTelemetry export of the trace (``--tracing-config-file``; None: off)."""

    @property
    def pod_initial_backoff(self) -> float:
        value = self.scheduler_config.pod_initial_backoff_seconds
        return float(DEFAULT_POD_INITIAL_BACKOFF if value is None else value)

    @property
    def pod_max_backoff(self) -> float:
        value = self.scheduler_config.pod_max_backoff_seconds
        return float(DEFAULT_POD_MAX_BACKOFF if value is None else value)

    @property
    def profile_names(self) -> list[str]:
        return [p.scheduler_name or "" for p in self.scheduler_config.profiles]

    @classmethod
    def from_options(
        cls,
        options: CommonOptions,
        *,
        lease_seconds: float = DEFAULT_LEASE_SECONDS,
        pod_max_in_unschedulable: float = DEFAULT_POD_MAX_IN_UNSCHEDULABLE,
        repair_interval: float = 60.0,
    ) -> QueueSettings:
        """Settings from the common flags; ``--config`` is loaded (upstream defaults without it).
        Raises :class:`ksched.config.ConfigError` for a bad configuration."""
        config = scheduler_config(options)
        if lease_seconds <= 0:
            raise ValueError(f"--lease-duration must be positive, got {lease_seconds} s")
        if pod_max_in_unschedulable <= 0:
            raise ValueError(
                f"--pod-max-in-unschedulable-pods-duration must be positive, got {pod_max_in_unschedulable} s"
            )
        if repair_interval <= 0:
            raise ValueError(f"--repair-interval must be positive, got {repair_interval} s")
        return cls(
            scheduler_config=config,
            repair_interval=repair_interval,
            nats=options.nats,
            subject_prefix=options.subject_prefix,
            identity=options.identity,
            http_host=options.http_host,
            http_port=options.http_port,
            http_token=options.http_token,
            lease_seconds=lease_seconds,
            pod_max_in_unschedulable=pod_max_in_unschedulable,
            nats_credentials=options.nats_credentials,
            jetstream_replicas=options.jetstream_replicas,
            feature_gates=options.feature_gates,
            tracing=options.tracing,
        )


def without_claims_in_view(fw: Framework) -> None:
    """The queue holds no ResourceClaims (its snapshot stays empty): DynamicResources' PreEnqueue and
    hints judge by the pod and the event's claim alone; PreFilter in the scheduler checks the rest."""
    plugin = fw.plugin(DRA_NAME)
    if isinstance(plugin, DynamicResources):
        plugin.claims_in_view = False


def build_core(
    settings: QueueSettings,
    clock: Clock | None = None,
    on_incoming: IncomingObserver | None = observe_incoming,
) -> QueueCore:
    """The queue of ``settings``: one queue profile per scheduling profile (PreEnqueue plugins,
    queueing hints, QueueSort), backoffs from the configuration, leases."""
    clock = clock or SystemClock()
    snapshot = Snapshot()  # the queue's plugins read only its objects (PodGroups)
    frameworks = build_frameworks(settings.scheduler_config, snapshot)
    for fw in frameworks.values():
        without_claims_in_view(fw)
    gates = settings.feature_gates
    gangs = QueueGangs(snapshot.objects) if gates.enabled(GENERIC_WORKLOAD) else None
    if gangs is not None:
        for fw in frameworks.values():
            fw.pod_group_manager = gangs.states
    profiles, less = profiles_from_frameworks(frameworks)
    queue = SchedulingQueue(
        profiles,
        less,
        clock=clock,
        pod_initial_backoff=settings.pod_initial_backoff,
        pod_max_backoff=settings.pod_max_backoff,
        pod_max_in_unschedulable=settings.pod_max_in_unschedulable,
        on_incoming=on_incoming,
        group_scheduling=gangs is not None,
    )
    leases = LeaseTable(clock, settings.lease_seconds)
    return QueueCore(queue, leases, gangs, gang_events=gates.enabled(GANG_SCHEDULING))
