"""Building one :class:`Framework` per profile of a validated configuration (upstream
``profile.NewMap`` / ``frameworkruntime.NewFramework``).

Every plugin a profile uses is created once, ``factory(args, framework)`` (the Framework is the
plugins' Handle), then placed at its extension points: first the points' own ``enabled`` lists,
then ``multiPoint`` expanded like upstream's ``expandMultiPointPlugins`` -- a multiPoint plugin
goes to every point whose Protocol it implements, unless that point disables it (or ``"*"``);
a plugin also listed at the point keeps that point's order and weight. Errors read as
kube-scheduler's (``creating profile for scheduler name x: ScorePlugin "Foo" does not exist``).

In-tree plugins whose modules are not written yet are left out with a warning naming them
(``skip_unimplemented``), so the default profile says plainly what it lacks.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from ksched.apimachinery.strconv import go_quote
from ksched.config.errors import ConfigError
from ksched.config.extension_points import EXTENSION_POINTS, PLACEMENT_POINTS
from ksched.config.plugin_args import default_args
from ksched.config.types import KubeSchedulerConfiguration, KubeSchedulerProfile, Plugin, Plugins, PluginSet
from ksched.features import DEFAULT as DEFAULT_GATES
from ksched.features import FeatureGates
from ksched.framework import interfaces as ifc
from ksched.framework.events import ActionType, ClusterEvent, ClusterEventWithHint, EventResource
from ksched.framework.extender_calls import ExtenderEnqueueExtension
from ksched.framework.handle import Nominator
from ksched.framework.interfaces import MAX_NODE_SCORE
from ksched.framework.registration import Registration
from ksched.framework.runtime import Framework, PluginsByPoint
from ksched.framework.snapshot import Snapshot
from ksched.plugins.args.types import NodeResourcesFitArgs
from ksched.plugins.feature import Features
from ksched.plugins.registry import IN_TREE, Registry

log = logging.getLogger(__name__)

MAX_TOTAL_SCORE = 2**63 - 1
NODE_RESOURCES_FIT = "NodeResourcesFit"
_ENQUEUE_POINTS = (
    ifc.PreEnqueuePlugin,
    ifc.PreFilterPlugin,
    ifc.FilterPlugin,
    ifc.ReservePlugin,
    ifc.PermitPlugin,
)


class BuildError(Exception):
    """A profile that cannot be built; the message is upstream's (without the profile prefix)."""


class DefaultEnqueueExtension:
    """Events of a plugin that does not say which events it cares about: all of them (upstream's
    ``defaultEnqueueExtension``), so its rejected pods are retried on any change."""

    def __init__(self, name: str) -> None:
        self.name = name

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [ClusterEventWithHint(ClusterEvent(EventResource.WILDCARD, ActionType.ALL))]


# --- names -------------------------------------------------------------------------------------
def needed_plugins(plugins: Plugins) -> list[str]:
    """Every plugin name enabled in the profile (multiPoint first), each once (``pluginsNeeded``)."""
    names: dict[str, None] = {}
    for plugin in plugins.multi_point.enabled:
        names.setdefault(plugin.name)
    for point in EXTENSION_POINTS:
        for plugin in getattr(plugins, point.field).enabled:
            names.setdefault(plugin.name)
    return list(names)


def _is_unwritten_module(exc: ModuleNotFoundError) -> bool:
    return exc.name is not None and exc.name.startswith("ksched.plugins.")


def load_registration(name: str, registry: Mapping[str, Registration]) -> Registration | None:
    """The registration of ``name``; None for an in-tree plugin whose module is not written yet."""
    try:
        return registry[name]
    except ModuleNotFoundError as exc:
        if name in IN_TREE and _is_unwritten_module(exc):
            return None
        raise


def unimplemented_plugins(plugins: Plugins, registry: Mapping[str, Registration]) -> list[str]:
    """Upstream plugins the profile enables that ksched does not implement yet."""
    return [n for n in needed_plugins(plugins) if n in registry and load_registration(n, registry) is None]


def without_plugins(plugins: Plugins, left_out: set[str]) -> Plugins:
    """A copy of ``plugins`` with ``left_out`` names removed from every ``enabled`` list."""

    def keep(s: PluginSet) -> PluginSet:
        return PluginSet(enabled=[p for p in s.enabled if p.name not in left_out], disabled=list(s.disabled))

    fields = [p.field for p in EXTENSION_POINTS] + ["multi_point"] + [f for f, _ in PLACEMENT_POINTS]
    return Plugins(**{f: keep(getattr(plugins, f)) for f in fields})


# --- expansion (pure: names and instances) ----------------------------------------------------------
def point_lists(plugins: Plugins, instances: Mapping[str, object]) -> dict[str, list[str]]:
    """Plugin names per extension point (``Plugins`` field -> names), upstream's rules and errors."""
    lists: dict[str, list[str]] = {}
    for point in EXTENSION_POINTS:
        names: list[str] = []
        for plugin in getattr(plugins, point.field).enabled:
            instance = instances.get(plugin.name)
            if instance is None:
                raise BuildError(f"{point.type_name} {go_quote(plugin.name)} does not exist")
            if not isinstance(instance, point.protocol):
                raise BuildError(f"plugin {go_quote(plugin.name)} does not extend {point.type_name} plugin")
            if plugin.name in names:
                raise BuildError(
                    f"plugin {go_quote(plugin.name)} already registered as {go_quote(point.type_name)}"
                )
            names.append(plugin.name)
        lists[point.field] = names
    if plugins.multi_point.enabled:
        _expand_multi_point(plugins, instances, lists)
    return lists


def _expand_multi_point(
    plugins: Plugins, instances: Mapping[str, object], lists: dict[str, list[str]]
) -> None:
    for point in EXTENSION_POINTS:
        plugin_set: PluginSet = getattr(plugins, point.field)
        enabled = list(dict.fromkeys(p.name for p in plugin_set.enabled))
        disabled = {p.name for p in plugin_set.disabled}
        if "*" in disabled:
            continue
        multi: list[str] = []
        overrides: set[str] = set()
        for plugin in plugins.multi_point.enabled:
            instance = instances.get(plugin.name)
            if instance is None:
                raise BuildError(f"{point.type_name} {go_quote(plugin.name)} does not exist")
            if not isinstance(instance, point.protocol) or plugin.name in disabled:
                continue
            if plugin.name in enabled:
                # set explicitly at this point: that setting (order, weight) wins
                overrides.add(plugin.name)
                continue
            if plugin.name in multi:
                raise BuildError(
                    f"plugin {go_quote(plugin.name)} already registered as {go_quote(point.type_name)}"
                )
            multi.append(plugin.name)
        lists[point.field] = (
            [n for n in enabled if n in overrides] + multi + [n for n in enabled if n not in overrides]
        )


def score_weights(plugins: Plugins, instances: Mapping[str, object]) -> dict[str, int]:
    """Upstream ``getValidScoreWeights``: the score point's weight first, then multiPoint's; 0 means 1."""
    weights: dict[str, int] = {}
    total = 0
    entries: list[Plugin] = list(plugins.score.enabled) + list(plugins.multi_point.enabled)
    for plugin in entries:
        if not isinstance(instances.get(plugin.name), ifc.ScorePlugin) or plugin.name in weights:
            continue
        weight = plugin.weight or 1
        weights[plugin.name] = weight
        if weight * MAX_NODE_SCORE > MAX_TOTAL_SCORE - total:
            raise BuildError("score plugins: total score of Score plugins could overflow")
        total += weight * MAX_NODE_SCORE
    return weights


# --- building ----------------------------------------------------------------------------------
def _plugin_args(profile: KubeSchedulerProfile) -> dict[str, Any]:
    args: dict[str, Any] = {}
    for item in profile.plugin_config:
        if item.name in args:
            raise BuildError(f"repeated config for plugin {item.name}")
        args[item.name] = item.args
    return args


def _create_plugins(
    fw: Framework, names: list[str], profile: KubeSchedulerProfile, registry: Mapping[str, Registration]
) -> tuple[dict[str, Any], list[Any]]:
    args = _plugin_args(profile)
    instances: dict[str, Any] = {}
    enqueue: list[Any] = []
    for name in names:
        if name not in registry:
            continue  # reported when the point lists are built, as upstream
        registration = load_registration(name, registry)
        if registration is None:
            continue
        plugin_args = args.get(name)
        if plugin_args is None and registration.args_type is not None:
            plugin_args = default_args(registration.args_type)
        try:
            instance = registration.factory(plugin_args, fw)
        except Exception as exc:
            raise BuildError(f"initializing plugin {go_quote(name)}: {exc}") from exc
        instances[name] = instance
        if isinstance(instance, _ENQUEUE_POINTS):
            enqueue.append(
                instance if isinstance(instance, ifc.EnqueueExtensions) else DefaultEnqueueExtension(name)
            )
    return instances, enqueue


def _build(
    profile: KubeSchedulerProfile,
    snapshot: Snapshot,
    registry: Mapping[str, Registration],
    *,
    parallelism: int,
    nominator: Nominator | None,
    client: object | None,
    skip_unimplemented: bool,
) -> Framework:
    name = profile.scheduler_name or ""
    plugins = profile.plugins if profile.plugins is not None else Plugins()
    missing = unimplemented_plugins(plugins, registry)
    if missing:
        if not skip_unimplemented:
            raise BuildError(f"plugins not implemented in ksched yet: {', '.join(missing)}")
        log.warning(
            "profile %s: upstream plugins not implemented in ksched yet, left out: %s",
            name,
            ", ".join(missing),
        )
        plugins = without_plugins(plugins, set(missing))
    for field, wire in PLACEMENT_POINTS:
        if getattr(plugins, field).enabled:
            raise BuildError(f"the {wire} extension point is not supported by ksched")
    fw = Framework(
        name,
        snapshot,
        percentage_of_nodes_to_score=profile.percentage_of_nodes_to_score,
        parallelism=parallelism,
        nominator=nominator,
        client=client,
    )
    instances, enqueue = _create_plugins(fw, needed_plugins(plugins), profile, registry)
    lists = point_lists(plugins, instances)
    if len(lists["queue_sort"]) != 1:
        raise BuildError(
            f"only one queue sort plugin required for profile with scheduler name {go_quote(name)}, "
            f"but got {len(lists['queue_sort'])}"
        )
    if not lists["bind"]:
        raise BuildError(
            f"at least one bind plugin is needed for profile with scheduler name {go_quote(name)}"
        )
    weights = score_weights(plugins, instances)
    scored: list[tuple[Any, int]] = []
    for plugin_name in lists["score"]:
        instance: Any = instances[plugin_name]
        weight = weights.get(instance.name, 0)
        if weight == 0:
            raise BuildError(f"score plugin {go_quote(instance.name)} is not configured with weight")
        scored.append((instance, weight))
    by_point: dict[str, list[Any]] = {
        f: [instances[n] for n in ns] for f, ns in lists.items() if f != "score"
    }
    fw.set_plugins(PluginsByPoint(**by_point, score=scored, enqueue_extensions=enqueue))
    return fw


def in_tree_registry(gates: FeatureGates = DEFAULT_GATES) -> Registry:
    """The registry whose in-tree plugins read ``gates`` (upstream ``NewInTreeRegistry``)."""
    return Registry(features=Features.from_gates(gates))


def build_framework(
    profile: KubeSchedulerProfile,
    snapshot: Snapshot,
    registry: Mapping[str, Registration] | None = None,
    *,
    parallelism: int = 16,
    nominator: Nominator | None = None,
    client: object | None = None,
    skip_unimplemented: bool = True,
    gates: FeatureGates = DEFAULT_GATES,
) -> Framework:
    """The Framework of one (defaulted, validated) profile; raises :class:`ConfigError`. Without a
    registry, the in-tree one with the plugins' features from ``gates``."""
    try:
        return _build(
            profile,
            snapshot,
            registry if registry is not None else in_tree_registry(gates),
            parallelism=parallelism,
            nominator=nominator,
            client=client,
            skip_unimplemented=skip_unimplemented,
        )
    except BuildError as exc:
        raise ConfigError(
            [f"creating profile for scheduler name {profile.scheduler_name or ''}: {exc}"]
        ) from exc


def _queue_sort_of(fw: Framework) -> str:
    return str(fw.plugins.queue_sort[0].name)


def apply_extender_ignored_resources(config: KubeSchedulerConfiguration) -> None:
    """Extender-managed resources with ``ignoredByScheduler`` become NodeResourcesFit's
    ``ignoredResources`` in every profile, replacing what was configured (upstream ``buildExtenders``)."""
    ignored = [r.name for ext in config.extenders for r in ext.managed_resources if r.ignored_by_scheduler]
    if not ignored:
        return
    for profile in config.profiles:
        item = next((c for c in profile.plugin_config if c.name == NODE_RESOURCES_FIT), None)
        if item is None:
            raise ConfigError(["couldn't build extenders: can't find NodeResourcesFitArgs in plugin config"])
        if not isinstance(item.args, NodeResourcesFitArgs):
            raise ConfigError(
                [
                    "couldn't build extenders: want args to be of type NodeResourcesFitArgs, "
                    f"got {type(item.args).__name__}"
                ]
            )
        item.args.ignored_resources = list(ignored)


def build_frameworks(
    config: KubeSchedulerConfiguration,
    snapshot: Snapshot,
    registry: Mapping[str, Registration] | None = None,
    *,
    nominator: Nominator | None = None,
    client: object | None = None,
    skip_unimplemented: bool = True,
    gates: FeatureGates = DEFAULT_GATES,
) -> dict[str, Framework]:
    """schedulerName -> Framework for every profile (upstream ``profile.NewMap``); without a
    registry, the in-tree one with the plugins' features from ``gates`` (a given registry carries
    its own features)."""
    registry = registry if registry is not None else in_tree_registry(gates)
    apply_extender_ignored_resources(config)
    frameworks: dict[str, Framework] = {}
    first: tuple[str, Any] | None = None
    for profile in config.profiles:
        fw = build_framework(
            profile,
            snapshot,
            registry,
            parallelism=config.parallelism or 16,
            nominator=nominator,
            client=client,
            skip_unimplemented=skip_unimplemented,
        )
        name = fw.profile_name
        if not name:
            raise ConfigError(["scheduler name is needed"])
        if name in frameworks:
            raise ConfigError([f"duplicate profile with scheduler name {go_quote(name)}"])
        queue_sort = _queue_sort_of(fw)
        args = next((c.args for c in profile.plugin_config if c.name == queue_sort), None)
        if first is None:
            first = (queue_sort, args)
        elif first[0] != queue_sort:
            raise ConfigError(
                [
                    f"different queue sort plugins for profile {go_quote(name)}: {go_quote(queue_sort)}, "
                    f"first: {go_quote(first[0])}"
                ]
            )
        elif first[1] != args:
            raise ConfigError([f"different queue sort plugin args for profile {go_quote(name)}"])
        if config.extenders:
            # extenders have no queueing hints: any event may help a pod they rejected (upstream)
            fw.plugins.enqueue_extensions.insert(0, ExtenderEnqueueExtension())
        frameworks[name] = fw
    return frameworks


def missing_plugins(
    config: KubeSchedulerConfiguration, registry: Mapping[str, Registration] | None = None
) -> dict[str, list[str]]:
    """schedulerName -> upstream plugins its profile enables that ksched does not implement yet."""
    registry = registry if registry is not None else Registry()
    result: dict[str, list[str]] = {}
    for profile in config.profiles:
        if profile.plugins is not None:
            missing = unimplemented_plugins(profile.plugins, registry)
            if missing:
                result[profile.scheduler_name or ""] = missing
    return result


def list_plugins(fw: Framework) -> dict[str, list[str]]:
    """Extension point (YAML name) -> plugin names in order, as upstream's ``ListPlugins`` logs them;
    score entries read ``Name:weight``."""
    out: dict[str, list[str]] = {}
    for point in EXTENSION_POINTS:
        if point.field == "score":
            out[point.wire] = [f"{pl.name}:{w}" for pl, w in fw.plugins.score]
        else:
            out[point.wire] = [pl.name for pl in getattr(fw.plugins, point.field)]
    return {k: v for k, v in out.items() if v}
