"""``kubescheduler.config.k8s.io/v1`` KubeSchedulerConfiguration as typed Structs (camelCase on the wire).

Field for field the v1 API of kube-scheduler 1.36 (``k8s.io/kube-scheduler/config/v1/types.go``).
Pointer fields of the Go API are ``X | None`` here; :mod:`ksched.config.defaults` fills them in.
Durations (``metav1.Duration``) stay Go duration strings ("15s"); :mod:`ksched.apimachinery.duration`
parses them. ``PluginConfig.args`` holds the typed args Struct of the plugin after decoding
(see :mod:`ksched.plugins.args.types`), or the raw mapping for plugins without an args type.
"""

from __future__ import annotations

from typing import Any

import msgspec

from ksched.apimachinery.duration import seconds

GROUP = "kubescheduler.config.k8s.io"
API_VERSION = f"{GROUP}/v1"
KIND = "KubeSchedulerConfiguration"
DEFAULT_SCHEDULER_NAME = "default-scheduler"
DEFAULT_EXTENDER_TIMEOUT_SECONDS = 5.0


class _Wire(msgspec.Struct, rename="camel", kw_only=True, forbid_unknown_fields=True):
    """Base: camelCase field names, unknown fields rejected (kube-scheduler decodes strictly)."""


class Plugin(_Wire):
    name: str
    #: only used for Score plugins; None (or 0) means the default weight 1
    weight: int | None = None


class PluginSet(_Wire):
    enabled: list[Plugin] = []
    disabled: list[Plugin] = []


class Plugins(_Wire):
    """Plugins per extension point; ``multi_point`` plugins are expanded to every point they implement."""

    pre_enqueue: PluginSet = msgspec.field(default_factory=PluginSet)
    queue_sort: PluginSet = msgspec.field(default_factory=PluginSet)
    pre_filter: PluginSet = msgspec.field(default_factory=PluginSet)
    filter: PluginSet = msgspec.field(default_factory=PluginSet)
    post_filter: PluginSet = msgspec.field(default_factory=PluginSet)
    pre_score: PluginSet = msgspec.field(default_factory=PluginSet)
    score: PluginSet = msgspec.field(default_factory=PluginSet)
    reserve: PluginSet = msgspec.field(default_factory=PluginSet)
    permit: PluginSet = msgspec.field(default_factory=PluginSet)
    pre_bind: PluginSet = msgspec.field(default_factory=PluginSet)
    bind: PluginSet = msgspec.field(default_factory=PluginSet)
    post_bind: PluginSet = msgspec.field(default_factory=PluginSet)
    multi_point: PluginSet = msgspec.field(default_factory=PluginSet)
    #: workload (pod group) placement points of the v1 API; parsed, not supported by ksched
    placement_generate: PluginSet = msgspec.field(default_factory=PluginSet)
    placement_score: PluginSet = msgspec.field(default_factory=PluginSet)


class PluginConfig(_Wire):
    name: str
    #: typed args Struct after decoding (raw mapping for plugins without an args type)
    args: Any = None


class KubeSchedulerProfile(_Wire):
    scheduler_name: str | None = None
    percentage_of_nodes_to_score: int | None = None
    plugins: Plugins | None = None
    plugin_config: list[PluginConfig] = []


class ExtenderManagedResource(_Wire):
    name: str
    ignored_by_scheduler: bool = False


class ExtenderTLSConfig(_Wire):
    insecure: bool = False
    server_name: str = ""
    cert_file: str = ""
    key_file: str = ""
    ca_file: str = msgspec.field(default="", name="caFile")
    cert_data: bytes = b""
    key_data: bytes = b""
    ca_data: bytes = msgspec.field(default=b"", name="caData")


class Extender(_Wire):
    """An HTTP scheduler extender (parsed and validated here; called by the extender support)."""

    url_prefix: str = msgspec.field(default="", name="urlPrefix")
    filter_verb: str = ""
    preempt_verb: str = ""
    prioritize_verb: str = ""
    weight: int = 0
    bind_verb: str = ""
    enable_https: bool = msgspec.field(default=False, name="enableHTTPS")
    tls_config: ExtenderTLSConfig | None = None
    #: Go duration string; zero means the extender default (5s)
    http_timeout: str = "0s"
    node_cache_capable: bool = False
    managed_resources: list[ExtenderManagedResource] = []
    ignorable: bool = False

    def http_timeout_seconds(self) -> float:
        """The HTTP timeout in seconds; zero means upstream's ``DefaultExtenderTimeout`` (5s)."""
        timeout = seconds(self.http_timeout)
        return timeout if timeout else DEFAULT_EXTENDER_TIMEOUT_SECONDS


class LeaderElectionConfiguration(_Wire):
    """component-base ``LeaderElectionConfiguration`` (v1alpha1): parsed and defaulted."""

    leader_elect: bool | None = None
    lease_duration: str = "0s"
    renew_deadline: str = "0s"
    retry_period: str = "0s"
    resource_lock: str = ""
    resource_name: str = ""
    resource_namespace: str = ""


class ClientConnectionConfiguration(_Wire):
    """component-base ``ClientConnectionConfiguration`` (v1alpha1): parsed and defaulted."""

    kubeconfig: str = ""
    accept_content_types: str = ""
    content_type: str = ""
    qps: float = 0.0
    burst: int = 0


class KubeSchedulerConfiguration(_Wire):
    api_version: str = API_VERSION
    kind: str = KIND
    parallelism: int | None = None
    leader_election: LeaderElectionConfiguration = msgspec.field(default_factory=LeaderElectionConfiguration)
    client_connection: ClientConnectionConfiguration = msgspec.field(
        default_factory=ClientConnectionConfiguration
    )
    # DebuggingConfiguration (inline)
    enable_profiling: bool | None = None
    enable_contention_profiling: bool | None = None
    percentage_of_nodes_to_score: int | None = None
    pod_initial_backoff_seconds: int | None = None
    pod_max_backoff_seconds: int | None = None
    profiles: list[KubeSchedulerProfile] = []
    extenders: list[Extender] = []
    delay_cache_until_active: bool = False

    def profile(self, scheduler_name: str) -> KubeSchedulerProfile | None:
        """The profile whose ``schedulerName`` is ``scheduler_name``."""
        return next((p for p in self.profiles if p.scheduler_name == scheduler_name), None)
