"""Defaults of kube-scheduler 1.36 (``apis/config/v1/defaults.go`` and ``default_plugins.go``).

The default profile enables every plugin through ``multiPoint`` in upstream order (with the
feature gates on by default in 1.36: DynamicResources, weight 2, before DefaultPreemption;
NodeDeclaredFeatures appended last; the alpha gates GangScheduling and TopologyAwareWorkloadScheduling,
off by default, append their plugins after it, as upstream's ``applyFeatureGates``). A
user's plugin sets are merged into it with upstream's ``mergePlugins``: ``disabled`` (``"*"`` for
all) removes defaults, an ``enabled`` default is re-configured in place (its new weight, its
default position), other enabled plugins are appended in the user's order.
"""

from __future__ import annotations

from collections.abc import Mapping

import msgspec

from ksched.apimachinery.duration import DurationError, parse_duration
from ksched.config.plugin_args import apply_defaults, args_type_for, default_args
from ksched.config.types import (
    DEFAULT_SCHEDULER_NAME,
    KubeSchedulerConfiguration,
    KubeSchedulerProfile,
    Plugin,
    PluginConfig,
    Plugins,
    PluginSet,
)
from ksched.features import DEFAULT as DEFAULT_GATES
from ksched.features import GANG_SCHEDULING, TOPOLOGY_AWARE_WORKLOAD_SCHEDULING, FeatureGates
from ksched.framework.registration import Registration

#: upstream ``getDefaultPlugins`` with the 1.36 default feature gates applied: (name, weight)
DEFAULT_MULTI_POINT: tuple[tuple[str, int | None], ...] = (
    ("SchedulingGates", None),
    ("PrioritySort", None),
    ("NodeUnschedulable", None),
    ("NodeName", None),
    ("TaintToleration", 3),
    ("NodeAffinity", 2),
    ("NodePorts", None),
    ("NodeResourcesFit", 1),
    ("VolumeRestrictions", None),
    ("NodeVolumeLimits", None),
    ("VolumeBinding", None),
    ("VolumeZone", None),
    ("PodTopologySpread", 2),
    ("InterPodAffinity", 2),
    ("DynamicResources", 2),
    ("DefaultPreemption", None),
    ("NodeResourcesBalancedAllocation", 1),
    ("ImageLocality", 1),
    ("DefaultBinder", None),
    ("NodeDeclaredFeatures", None),
)

#: plugins upstream's ``applyFeatureGates`` appends to the default multiPoint set when a gate is on
GATED_MULTI_POINT: tuple[tuple[str, tuple[tuple[str, int | None], ...]], ...] = (
    (GANG_SCHEDULING, (("GangScheduling", None),)),
    (TOPOLOGY_AWARE_WORKLOAD_SCHEDULING, (("TopologyPlacementGenerator", None), ("PodGroupPodsCount", 1))),
)

DEFAULT_PARALLELISM = 16
DEFAULT_PERCENTAGE_OF_NODES_TO_SCORE = 0
DEFAULT_POD_INITIAL_BACKOFF_SECONDS = 1
DEFAULT_POD_MAX_BACKOFF_SECONDS = 10
DEFAULT_LEADER_ELECTION_LOCK = "leases"
DEFAULT_LOCK_OBJECT_NAMESPACE = "kube-system"
DEFAULT_LOCK_OBJECT_NAME = "kube-scheduler"
DEFAULT_LEASE_DURATION = "15s"
DEFAULT_RENEW_DEADLINE = "10s"
DEFAULT_RETRY_PERIOD = "2s"
DEFAULT_CONTENT_TYPE = "application/vnd.kubernetes.protobuf"
DEFAULT_QPS = 50.0
DEFAULT_BURST = 100

#: the extension-point fields of ``Plugins``, in declaration order
PLUGIN_SET_FIELDS: tuple[str, ...] = tuple(f.name for f in msgspec.structs.fields(Plugins))


def default_plugins(gates: FeatureGates = DEFAULT_GATES) -> Plugins:
    """The plugins of upstream's default profile under ``gates`` (a fresh object)."""
    names = list(DEFAULT_MULTI_POINT)
    for gate, plugins in GATED_MULTI_POINT:
        if gates.enabled(gate):
            names.extend(plugins)
    return Plugins(multi_point=PluginSet(enabled=[Plugin(name=n, weight=w) for n, w in names]))


def _copy(plugin: Plugin) -> Plugin:
    return Plugin(name=plugin.name, weight=plugin.weight)


def merge_plugin_set(default: PluginSet, custom: PluginSet) -> PluginSet:
    """Upstream ``mergePluginSet``: the custom set applied over the default one."""
    disabled = [Plugin(name=p.name) for p in custom.disabled] + [
        Plugin(name=p.name) for p in default.disabled
    ]
    disabled_names = {p.name for p in disabled}
    # the last custom entry of a name re-configures a default plugin
    custom_index = {p.name: i for i, p in enumerate(custom.enabled)}
    replaced: set[int] = set()
    enabled: list[Plugin] = []
    if "*" not in disabled_names:
        for plugin in default.enabled:
            if plugin.name in disabled_names:
                continue
            i = custom_index.get(plugin.name)
            if i is not None:
                replaced.add(i)
                enabled.append(_copy(custom.enabled[i]))
            else:
                enabled.append(_copy(plugin))
    enabled.extend(_copy(p) for i, p in enumerate(custom.enabled) if i not in replaced)
    return PluginSet(enabled=enabled, disabled=disabled)


def merge_plugins(default: Plugins, custom: Plugins | None) -> Plugins:
    """Upstream ``mergePlugins``: every extension point's set merged; ``None`` keeps the defaults."""
    if custom is None:
        return default
    merged = {
        name: merge_plugin_set(getattr(default, name), getattr(custom, name)) for name in PLUGIN_SET_FIELDS
    }
    return Plugins(**merged)


def enabled_plugin_names(plugins: Plugins) -> list[str]:
    """Names enabled at any extension point (multiPoint included), sorted (upstream ``pluginsNames``)."""
    return sorted({p.name for name in PLUGIN_SET_FIELDS for p in getattr(plugins, name).enabled})


def set_profile_defaults(
    profile: KubeSchedulerProfile,
    registry: Mapping[str, Registration] | None,
    gates: FeatureGates = DEFAULT_GATES,
) -> None:
    """Merge the profile's plugins into the defaults; default its args, add missing args configs."""
    profile.plugins = merge_plugins(default_plugins(gates), profile.plugins)
    configured = set()
    for item in profile.plugin_config:
        configured.add(item.name)
        apply_defaults(item.args)
    for name in enabled_plugin_names(profile.plugins):
        if name in configured:
            continue
        args_type = args_type_for(name, registry)
        if args_type is not None:
            profile.plugin_config.append(PluginConfig(name=name, args=default_args(args_type)))


def set_defaults(
    config: KubeSchedulerConfiguration,
    registry: Mapping[str, Registration] | None = None,
    gates: FeatureGates = DEFAULT_GATES,
) -> None:
    """Upstream ``SetDefaults_KubeSchedulerConfiguration`` (in place)."""
    if config.parallelism is None:
        config.parallelism = DEFAULT_PARALLELISM
    if not config.profiles:
        config.profiles.append(KubeSchedulerProfile())
    # a default name only for a single profile; validation requires names otherwise
    if len(config.profiles) == 1 and config.profiles[0].scheduler_name is None:
        config.profiles[0].scheduler_name = DEFAULT_SCHEDULER_NAME
    for profile in config.profiles:
        set_profile_defaults(profile, registry, gates)
    if config.percentage_of_nodes_to_score is None:
        config.percentage_of_nodes_to_score = DEFAULT_PERCENTAGE_OF_NODES_TO_SCORE
    _set_leader_election_defaults(config)
    client = config.client_connection
    if not client.content_type:
        client.content_type = DEFAULT_CONTENT_TYPE
    if client.qps == 0.0:
        client.qps = DEFAULT_QPS
    if client.burst == 0:
        client.burst = DEFAULT_BURST
    if config.pod_initial_backoff_seconds is None:
        config.pod_initial_backoff_seconds = DEFAULT_POD_INITIAL_BACKOFF_SECONDS
    if config.pod_max_backoff_seconds is None:
        config.pod_max_backoff_seconds = DEFAULT_POD_MAX_BACKOFF_SECONDS
    if config.enable_profiling is None:
        config.enable_profiling = True
    if config.enable_profiling and config.enable_contention_profiling is None:
        config.enable_contention_profiling = True


def _set_leader_election_defaults(config: KubeSchedulerConfiguration) -> None:
    le = config.leader_election
    if not le.resource_lock:
        le.resource_lock = DEFAULT_LEADER_ELECTION_LOCK
    if not le.resource_namespace:
        le.resource_namespace = DEFAULT_LOCK_OBJECT_NAMESPACE
    if not le.resource_name:
        le.resource_name = DEFAULT_LOCK_OBJECT_NAME
    # component-base RecommendedDefaultLeaderElectionConfiguration: zero durations get defaults
    if le.leader_elect is None:
        le.leader_elect = True
    if _is_zero(le.lease_duration):
        le.lease_duration = DEFAULT_LEASE_DURATION
    if _is_zero(le.renew_deadline):
        le.renew_deadline = DEFAULT_RENEW_DEADLINE
    if _is_zero(le.retry_period):
        le.retry_period = DEFAULT_RETRY_PERIOD


def _is_zero(duration: str) -> bool:
    try:
        return parse_duration(duration) == 0
    except DurationError:
        return False  # reported by decoding
