"""The queue service's typed configuration, and building the queue it describes."""

from __future__ import annotations

from dataclasses import dataclass, field

from ksched.client.leader import ElectionConfig
from ksched.config import KubeSchedulerConfiguration, build_frameworks
from ksched.features import DRA_EXTENDED_RESOURCE, GANG_SCHEDULING, GENERIC_WORKLOAD
from ksched.framework.runtime import Framework
from ksched.framework.snapshot import Snapshot
from ksched.plugins.dynamicresources import NAME as DRA_NAME
from ksched.plugins.dynamicresources import DynamicResources
from ksched.service.options import CommonOptions

from .backoff_queue import DEFAULT_POD_INITIAL_BACKOFF, DEFAULT_POD_MAX_BACKOFF
from .clock import Clock, SystemClock
from .core import QueueCore
from .device_classes import QueueDeviceClasses
from .gangs import QueueGangs
from .leases import DEFAULT_LEASE_SECONDS, LeaseTable
from .metrics import observe_incoming
from .priority_queue import DEFAULT_POD_MAX_IN_UNSCHEDULABLE, IncomingObserver, SchedulingQueue
from .profiles import profiles_from_frameworks

DEFAULT_HTTP_PORT = 10261


@dataclass(frozen=True)
class QueueSettings:
    """Everything ``ksched queue`` runs with. Durations are seconds."""

    scheduler_config: KubeSchedulerConfiguration
    common: CommonOptions = field(default_factory=lambda: CommonOptions(identity="queue"))
    """The options every service takes. The queue uses the API for its leader-election Lease only."""
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
    election: ElectionConfig | None = None
    """Leader election; None: this instance is the only one and serves at once."""

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
    snapshot = Snapshot()  # the queue's plugins read only its objects (PodGroups, DeviceClasses)
    gates = settings.common.feature_gates
    frameworks = build_frameworks(settings.scheduler_config, snapshot, gates=gates)
    for fw in frameworks.values():
        without_claims_in_view(fw)
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
        sort_key=next(iter(frameworks.values())).queue_sort_key(),
    )
    leases = LeaseTable(clock, settings.lease_seconds)
    classes = QueueDeviceClasses(snapshot.objects) if gates.enabled(DRA_EXTENDED_RESOURCE) else None
    return QueueCore(queue, leases, gangs, gang_events=gates.enabled(GANG_SCHEDULING), device_classes=classes)
