"""KubeSchedulerConfiguration (``kubescheduler.config.k8s.io/v1``) as kube-scheduler 1.36 reads it:
strict decoding, upstream defaults, upstream validation (every error, with field paths), and
building one Framework per profile (:mod:`ksched.config.profile`).

    config = load_config("scheduler-config.yaml")     # decode + default + validate
    frameworks = build_frameworks(config, snapshot)    # schedulerName -> Framework
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from ksched.config.decode import decode_config
from ksched.config.defaults import default_plugins, merge_plugin_set, merge_plugins, set_defaults
from ksched.config.errors import ConfigError
from ksched.config.profile import build_frameworks
from ksched.config.types import (
    API_VERSION,
    DEFAULT_SCHEDULER_NAME,
    KIND,
    ClientConnectionConfiguration,
    Extender,
    ExtenderManagedResource,
    ExtenderTLSConfig,
    KubeSchedulerConfiguration,
    KubeSchedulerProfile,
    LeaderElectionConfiguration,
    Plugin,
    PluginConfig,
    Plugins,
    PluginSet,
)
from ksched.config.validation import check_config, validate_config
from ksched.features import DEFAULT as DEFAULT_GATES
from ksched.features import FeatureGates
from ksched.framework.registration import Registration
from ksched.plugins.registry import Registry

__all__ = [
    "API_VERSION",
    "DEFAULT_SCHEDULER_NAME",
    "KIND",
    "ClientConnectionConfiguration",
    "ConfigError",
    "Extender",
    "ExtenderManagedResource",
    "ExtenderTLSConfig",
    "KubeSchedulerConfiguration",
    "KubeSchedulerProfile",
    "LeaderElectionConfiguration",
    "Plugin",
    "PluginConfig",
    "PluginSet",
    "Plugins",
    "build_frameworks",
    "complete_config",
    "decode_config",
    "default_config",
    "default_plugins",
    "load_config",
    "merge_plugin_set",
    "merge_plugins",
    "parse_config",
    "set_defaults",
    "validate_config",
]


def complete_config(
    config: KubeSchedulerConfiguration,
    registry: Mapping[str, Registration] | None = None,
    gates: FeatureGates = DEFAULT_GATES,
) -> KubeSchedulerConfiguration:
    """Default ``config`` in place (the default profile under ``gates``) and validate it (unknown
    plugins included); raises ConfigError."""
    registry = registry if registry is not None else Registry()
    set_defaults(config, registry, gates)
    check_config(config, registry)
    return config


def parse_config(
    text: str | bytes,
    registry: Mapping[str, Registration] | None = None,
    gates: FeatureGates = DEFAULT_GATES,
) -> KubeSchedulerConfiguration:
    """Decode, default and validate a configuration document (YAML or JSON)."""
    registry = registry if registry is not None else Registry()
    return complete_config(decode_config(text, registry), registry, gates)


def load_config(
    path: str | Path,
    registry: Mapping[str, Registration] | None = None,
    gates: FeatureGates = DEFAULT_GATES,
) -> KubeSchedulerConfiguration:
    """:func:`parse_config` of a file; raises :class:`ConfigError` (also for an unreadable file)."""
    try:
        text = Path(path).read_bytes()
    except OSError as exc:
        raise ConfigError([f"failed to read config file {path}: {exc.strerror or exc}"]) from exc
    return parse_config(text, registry, gates)


def default_config(
    registry: Mapping[str, Registration] | None = None, gates: FeatureGates = DEFAULT_GATES
) -> KubeSchedulerConfiguration:
    """Upstream's default configuration (what kube-scheduler runs without ``--config``)."""
    return complete_config(KubeSchedulerConfiguration(), registry, gates)
