"""kube-scheduler 1.36's own flags on every ksched service (docs/operations.md has the table).

The flags with no older ksched spelling: ``--master``, ``--write-config-to``, the deprecated
client-connection and profiling flags (``--kube-api-qps``, ``--kube-api-burst``,
``--kube-api-content-type``, ``--profiling``, ``--contention-profiling``) and klog's ``-v`` /
``--v``. :func:`apply_to` resolves them against the KubeSchedulerConfiguration as upstream's
``Options.ApplyTo`` does:

- without ``--config`` the deprecated flags set ``clientConnection`` and ``enableProfiling``;
- with ``--config`` the file's values hold (upstream ignores the deprecated flags then); ksched's
  one deviation: a file without ``clientConnection.kubeconfig`` takes ``--kubeconfig``, so the
  ``--kubeconfig FILE --config FILE`` command lines written for ksched keep working.
"""

from __future__ import annotations

import argparse
import logging
from pathlib import Path
from typing import Any

import msgspec
import yaml

from ksched.config import KubeSchedulerConfiguration
from ksched.flags.goflags import GoBool, klog_level

CONFIG_API_VERSION = "kubescheduler.config.k8s.io/v1"


def add_upstream_arguments(parser: argparse.ArgumentParser) -> None:
    misc = parser.add_argument_group("kube-scheduler: misc")
    misc.add_argument("--master", help="the API server's address (overrides the kubeconfig's server)")
    misc.add_argument(
        "--write-config-to", metavar="FILE", help="write the effective configuration to FILE and exit"
    )
    deprecated = parser.add_argument_group("kube-scheduler: deprecated (ignored with --config, as upstream)")
    deprecated.add_argument("--kube-api-qps", type=float, help="clientConnection.qps (docs/operations.md)")
    deprecated.add_argument("--kube-api-burst", type=int, help="clientConnection.burst")
    deprecated.add_argument("--kube-api-content-type", help="clientConnection.contentType")
    deprecated.add_argument("--profiling", action=GoBool, default=None, help="enableProfiling")
    deprecated.add_argument("--contention-profiling", action=GoBool, default=None, help="ditto")
    logs = parser.add_argument_group("kube-scheduler: logs")
    logs.add_argument(
        "-v",
        "--v",
        type=int,
        default=None,
        help="klog verbosity: 0-3 INFO, 4 and above DEBUG (overrides --log-level)",
    )


def log_level(ns: argparse.Namespace, default: str) -> str:
    """``--v`` mapped as :func:`ksched.flags.goflags.klog_level`, else ``default`` (``--log-level``)."""
    if ns.v is None:
        return default
    try:
        return logging.getLevelName(klog_level(ns.v))
    except ValueError as exc:
        raise SystemExit(str(exc)) from None


def apply_to(ns: argparse.Namespace, config: KubeSchedulerConfiguration, config_file: str | None) -> None:
    """Resolve the deprecated flags and ``--kubeconfig`` into ``config`` (module docstring)."""
    client = config.client_connection
    kubeconfig: str | None = getattr(ns, "kubeconfig", None)
    if config_file:
        if not client.kubeconfig and kubeconfig:
            client.kubeconfig = kubeconfig
        return
    if kubeconfig is not None:
        client.kubeconfig = kubeconfig
    if ns.kube_api_qps is not None:
        client.qps = ns.kube_api_qps
    if ns.kube_api_burst is not None:
        if ns.kube_api_burst < 0:
            raise ValueError(
                f"clientConnection.burst: Invalid value: {ns.kube_api_burst}: must be non-negative"
            )
        client.burst = ns.kube_api_burst
    if ns.kube_api_content_type is not None:
        client.content_type = ns.kube_api_content_type
    if ns.profiling is not None:
        config.enable_profiling = ns.profiling
    if ns.contention_profiling is not None:
        config.enable_contention_profiling = ns.contention_profiling


def _without_nulls(value: Any) -> Any:
    """Unset fields left out, as Go's encoder leaves out nil pointers (``omitempty``)."""
    if isinstance(value, dict):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_nulls(v) for v in value]
    return value


def write_config(config: KubeSchedulerConfiguration, path: str) -> None:
    """``--write-config-to``: the effective configuration as YAML, readable back with ``--config``."""
    doc = {
        "apiVersion": CONFIG_API_VERSION,
        "kind": "KubeSchedulerConfiguration",
        **_without_nulls(msgspec.to_builtins(config)),
    }
    Path(path).write_text(yaml.safe_dump(doc, sort_keys=True))
