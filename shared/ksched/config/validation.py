"""Validation of a defaulted configuration, as upstream's ``ValidateKubeSchedulerConfiguration``.

Every problem is collected (not only the first) and worded as kube-scheduler words it, with the
field path: ``profiles[1].schedulerName: Duplicate value: "x"``,
``percentageOfNodesToScore: Invalid value: 101: not in valid range [0-100]``. Plugin args are
checked by :mod:`ksched.plugins.args.validation`. Given the plugin registry, plugins it does not
know are reported too, with the message kube-scheduler gives when it builds the profile
(``creating profile for scheduler name x: ScorePlugin "Foo" does not exist``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

from ksched.apimachinery.duration import DurationError, parse_duration
from ksched.apimachinery.field import child, duplicate, index, invalid, required
from ksched.apimachinery.strconv import go_quote
from ksched.apimachinery.validation import label_key_errors
from ksched.config.errors import ConfigError
from ksched.config.extension_points import EXTENSION_POINTS, VALIDATED_STAGES, WIRE_NAMES
from ksched.config.types import (
    API_VERSION,
    Extender,
    KubeSchedulerConfiguration,
    KubeSchedulerProfile,
    Plugins,
    PluginSet,
)
from ksched.framework.registration import Registration
from ksched.plugins.args.validation import validate_args

#: plugins removed from the v1 API (upstream ``invalidPluginsByVersion``)
REMOVED_PLUGINS: frozenset[str] = frozenset({"AzureDiskLimits", "CinderLimits", "EBSLimits", "GCEPDLimits"})
_REMOVED_DETAIL = (
    f'was invalid in version "{API_VERSION}" (KubeSchedulerConfiguration is version "{API_VERSION}")'
)
_DEFAULT_REQUESTS_PREFIX = "requests."
_RESOURCE_DEFAULT_NAMESPACE_PREFIX = "kubernetes.io/"


def validate_config(
    config: KubeSchedulerConfiguration, registry: Mapping[str, Registration] | None = None
) -> list[str]:
    """All validation errors of a defaulted ``config`` (empty when it is valid)."""
    errs: list[str] = []
    errs += _client_connection_errors(config)
    errs += _leader_election_errors(config)
    parallelism = config.parallelism or 0
    if parallelism <= 0:
        errs.append(str(invalid("parallelism", parallelism, "should be an integer value greater than zero")))
    if not config.profiles:
        errs.append(str(required("profiles")))
    else:
        seen: dict[str, int] = {}
        for i, profile in enumerate(config.profiles):
            path = index("profiles", i)
            errs += _profile_errors(path, profile)
            name = profile.scheduler_name or ""
            if name in seen:
                # upstream prints the first profile's field path (as "{}"); ksched names the duplicate
                errs.append(str(duplicate(child(path, "schedulerName"), name)))
            seen[name] = i
        errs += _common_queue_sort_errors(config.profiles)
    errs += _percentage_errors("percentageOfNodesToScore", config.percentage_of_nodes_to_score)
    initial = config.pod_initial_backoff_seconds or 0
    maximum = config.pod_max_backoff_seconds or 0
    if initial <= 0:
        errs.append(str(invalid("podInitialBackoffSeconds", initial, "must be greater than 0")))
    if maximum < initial:
        errs.append(
            str(
                invalid(
                    "podMaxBackoffSeconds",
                    maximum,
                    "must be greater than or equal to PodInitialBackoffSeconds",
                )
            )
        )
    errs += _extender_errors(config.extenders)
    if registry is not None:
        for profile in config.profiles:
            errs += unknown_plugin_errors(profile, registry)
    return errs


def check_config(
    config: KubeSchedulerConfiguration, registry: Mapping[str, Registration] | None = None
) -> None:
    """Raise :class:`ConfigError` with every validation error of ``config``."""
    errs = validate_config(config, registry)
    if errs:
        raise ConfigError(errs)


# --- component-base ------------------------------------------------------------------------------
def _client_connection_errors(config: KubeSchedulerConfiguration) -> list[str]:
    burst = config.client_connection.burst
    return [str(invalid("clientConnection.burst", burst, "must be non-negative"))] if burst < 0 else []


def _ns(duration: str) -> int:
    try:
        return parse_duration(duration)
    except DurationError:
        return 0


def _leader_election_errors(config: KubeSchedulerConfiguration) -> list[str]:
    le = config.leader_election
    if not le.leader_elect:
        return []
    errs: list[str] = []
    lease, renew, retry = _ns(le.lease_duration), _ns(le.renew_deadline), _ns(le.retry_period)
    if lease <= 0:
        errs.append(
            str(invalid("leaderElection.leaseDuration", le.lease_duration, "must be greater than zero"))
        )
    if renew <= 0:
        errs.append(
            str(invalid("leaderElection.renewDeadline", le.renew_deadline, "must be greater than zero"))
        )
    if retry <= 0:
        errs.append(str(invalid("leaderElection.retryPeriod", le.retry_period, "must be greater than zero")))
    if lease < renew:
        errs.append(
            str(
                invalid(
                    "leaderElection.leaseDuration",
                    le.renew_deadline,
                    "LeaseDuration must be greater than RenewDeadline",
                )
            )
        )
    for field, value in (
        ("resourceLock", le.resource_lock),
        ("resourceNamespace", le.resource_namespace),
        ("resourceName", le.resource_name),
    ):
        if not value:
            errs.append(str(invalid(f"leaderElection.{field}", value, f"{field} is required")))
    if le.resource_lock != "leases":
        errs.append(
            str(
                invalid(
                    "leaderElection.resourceLock", le.resource_lock, 'resourceLock value must be "leases"'
                )
            )
        )
    return errs


# --- profiles ------------------------------------------------------------------------------------
def _percentage_errors(path: str, value: int | None) -> list[str]:
    if value is not None and not 0 <= value <= 100:
        return [str(invalid(path, value, "not in valid range [0-100]"))]
    return []


def _profile_errors(path: str, profile: KubeSchedulerProfile) -> list[str]:
    errs: list[str] = []
    if not profile.scheduler_name:
        errs.append(str(required(child(path, "schedulerName"))))
    errs += _percentage_errors(child(path, "percentageOfNodesToScore"), profile.percentage_of_nodes_to_score)
    if profile.plugins is not None:
        for stage in VALIDATED_STAGES:
            stage_path = child(path, "plugins", WIRE_NAMES[stage])
            for j, plugin in enumerate(getattr(profile.plugins, stage).enabled):
                if plugin.name in REMOVED_PLUGINS:
                    errs.append(
                        str(invalid(index(child(stage_path, "enabled"), j), plugin.name, _REMOVED_DETAIL))
                    )
    seen: set[str] = set()
    for j, item in enumerate(profile.plugin_config):
        item_path = index(child(path, "pluginConfig"), j)
        if item.name in seen:
            errs.append(str(duplicate(item_path, item.name)))
        seen.add(item.name)
        if item.name in REMOVED_PLUGINS:
            errs.append(str(invalid(item_path, item.name, _REMOVED_DETAIL)))
        elif isinstance(item.args, msgspec.Struct):
            errs += validate_args(item.args, child(item_path, "args"))
    return errs


def _go_plugin_set(plugin_set: PluginSet) -> dict[str, Any]:
    """The internal (untagged) ``config.PluginSet`` as ``json.Marshal`` sees it (fields in Go's order)."""

    def plugins(items: list[Any]) -> list[dict[str, Any]] | None:
        return [{"Name": p.name, "Weight": p.weight or 0} for p in items] or None

    return {"Enabled": plugins(plugin_set.enabled), "Disabled": plugins(plugin_set.disabled)}


def _queue_sort(profile: KubeSchedulerProfile) -> PluginSet:
    return profile.plugins.queue_sort if profile.plugins is not None else PluginSet()


def _same_plugin_set(a: PluginSet, b: PluginSet) -> bool:
    def key(s: PluginSet) -> tuple[list[tuple[str, int]], list[tuple[str, int]]]:
        return [(p.name, p.weight or 0) for p in s.enabled], [(p.name, p.weight or 0) for p in s.disabled]

    return key(a) == key(b)


def _common_queue_sort_errors(profiles: list[KubeSchedulerProfile]) -> list[str]:
    """Upstream ``validateCommonQueueSort``: every profile configures the same queueSort set."""
    errs: list[str] = []
    canon = _queue_sort(profiles[0])
    queue_sort_name = canon.enabled[0].name if canon.enabled else ""
    if len(canon.enabled) > 1:
        errs.append(
            str(
                invalid(
                    "profiles[0].plugins.queueSort.Enabled",
                    len(canon.enabled),
                    "only one queue sort plugin can be enabled",
                )
            )
        )
    canon_args = next(
        (c.args for c in profiles[0].plugin_config if queue_sort_name and c.name == queue_sort_name), None
    )
    for i in range(1, len(profiles)):
        current = _queue_sort(profiles[i])
        if not _same_plugin_set(canon, current):
            errs.append(
                str(
                    invalid(
                        f"profiles[{i}].plugins.queueSort",
                        _go_plugin_set(current),
                        "must be the same for all profiles",
                    )
                )
            )
        for cfg in profiles[i].plugin_config:
            if cfg.name == queue_sort_name and cfg.args != canon_args:
                errs.append(
                    str(
                        invalid(
                            f"profiles[{i}].pluginConfig.args",
                            cfg.args,
                            "queueSort must be the same for all profiles",
                        )
                    )
                )
    return errs


# --- extenders -----------------------------------------------------------------------------------
def _is_extended_resource_name(name: str) -> bool:
    """Upstream ``v1helper.IsExtendedResourceName``."""
    native = "/" not in name or _RESOURCE_DEFAULT_NAMESPACE_PREFIX in name
    if native or name.startswith(_DEFAULT_REQUESTS_PREFIX):
        return False
    return not label_key_errors(_DEFAULT_REQUESTS_PREFIX + name)


def _extender_errors(extenders: list[Extender]) -> list[str]:
    errs: list[str] = []
    binders = 0
    managed: set[str] = set()
    for i, ext in enumerate(extenders):
        path = index("extenders", i)
        if ext.prioritize_verb and ext.weight <= 0:
            errs.append(
                str(invalid(child(path, "weight"), ext.weight, "must have a positive weight applied to it"))
            )
        if ext.bind_verb:
            binders += 1
        for j, resource in enumerate(ext.managed_resources):
            name_path = child(index(child(path, "managedResources"), j), "name")
            name_errs = [str(invalid(name_path, resource.name, m)) for m in label_key_errors(resource.name)]
            if not name_errs and not _is_extended_resource_name(resource.name):
                name_errs.append(
                    str(invalid(name_path, resource.name, "is an invalid extended resource name"))
                )
            errs += name_errs
            if resource.name in managed:
                errs.append(
                    str(invalid(name_path, resource.name, "duplicate extender managed resource name"))
                )
            managed.add(resource.name)
    if binders > 1:
        errs.append(
            str(
                invalid(
                    "extenders",
                    f"found {binders} extenders implementing bind",
                    "only one extender can implement bind",
                )
            )
        )
    return errs


# --- plugins the registry does not know ---------------------------------------------------------
def _disabled_all(plugins: Plugins, field: str) -> bool:
    return any(p.name == "*" for p in getattr(plugins, field).disabled)


def unknown_plugin_errors(profile: KubeSchedulerProfile, registry: Mapping[str, Registration]) -> list[str]:
    """One error per enabled plugin name the registry lacks, worded as upstream's NewFramework.

    The Protocol named is that of the first extension point (upstream order) where building the
    profile would meet the name; removed plugins already reported by validation are skipped.
    """
    plugins = profile.plugins
    if plugins is None:
        return []
    prefix = f"creating profile for scheduler name {profile.scheduler_name or ''}: "
    reported: set[str] = set(REMOVED_PLUGINS)
    errs: list[str] = []
    for point in EXTENSION_POINTS:
        for plugin in getattr(plugins, point.field).enabled:
            if plugin.name not in registry and plugin.name not in reported:
                reported.add(plugin.name)
                errs.append(f"{prefix}{point.type_name} {go_quote(plugin.name)} does not exist")
    first = next((p for p in EXTENSION_POINTS if not _disabled_all(plugins, p.field)), None)
    if first is not None:
        for plugin in plugins.multi_point.enabled:
            if plugin.name not in registry and plugin.name not in reported:
                reported.add(plugin.name)
                errs.append(f"{prefix}{first.type_name} {go_quote(plugin.name)} does not exist")
    return errs


__all__ = ["REMOVED_PLUGINS", "check_config", "unknown_plugin_errors", "validate_config"]
