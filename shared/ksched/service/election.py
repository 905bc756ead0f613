"""Leader-election options of the singleton services (informer, queue), kube-scheduler style.

Flag beats environment beats the KubeSchedulerConfiguration's ``leaderElection`` beats the default:

- ``--leader-elect`` / ``--leader-elect=true|false`` / ``--no-leader-elect``
  (``KSCHED_LEADER_ELECT=true|false``; config ``leaderElect``, default on). It needs the API for
  its Lease: without a kubeconfig or an in-cluster service account it is off unless asked for
  explicitly (then it is an error).
- ``--lease-name`` (alias ``--leader-elect-resource-name``, ``KSCHED_LEASE_NAME``): default
  ``ksched-<service>``, or ``<resourceName>-<service>`` when the configuration names a resource
  (the two services need two Leases).
- ``--lease-namespace`` (alias ``--leader-elect-resource-namespace``, ``KSCHED_LEASE_NAMESPACE``;
  config ``resourceNamespace``, default ``kube-system``).
- ``--leader-elect-resource-lock``: ``leases`` only, as kube-scheduler 1.36.
- ``--leader-elect-lease-duration`` / ``-renew-deadline`` / ``-retry-period`` (Go durations;
  ``KSCHED_LEADER_ELECT_LEASE_DURATION`` ...; config; defaults 15s / 10s / 2s).

The holder identity is the instance id (``--id``) plus a random suffix, so two processes never share
one by mistake.
"""

from __future__ import annotations

import argparse
import os
import uuid
from collections.abc import Mapping

from ksched.apimachinery.duration import DurationError, seconds
from ksched.client.config import api_reachable
from ksched.client.leader import ElectionConfig
from ksched.config.defaults import DEFAULT_LOCK_OBJECT_NAME
from ksched.config.types import KubeSchedulerConfiguration
from ksched.flags.goflags import GoBool

DEFAULT_LEASE_NAMESPACE = "kube-system"
_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


def _env(env: Mapping[str, str], name: str) -> str | None:
    value = env.get(f"KSCHED_{name}")
    return value if value else None


def add_leader_election_arguments(
    parser: argparse.ArgumentParser, env: Mapping[str, str] | None = None
) -> None:
    e = os.environ if env is None else env
    g = parser.add_argument_group("leader election (one active instance, hot standbys)")
    g.add_argument(
        "--leader-elect",
        action=GoBool,
        default=_env(e, "LEADER_ELECT"),
        help="elect a leader through a coordination.k8s.io Lease; standbys wait; --leader-elect=true|false "
        "as kube-scheduler takes it, or --no-leader-elect (default: on when the "
        "API is reachable through --kubeconfig or in-cluster, unless the configuration says "
        "leaderElect: false)",
    )
    g.add_argument(
        "--lease-name",
        "--leader-elect-resource-name",
        dest="lease_name",
        default=_env(e, "LEASE_NAME"),
        help="name of the Lease (default ksched-<service>)",
    )
    g.add_argument(
        "--lease-namespace",
        "--leader-elect-resource-namespace",
        dest="lease_namespace",
        default=_env(e, "LEASE_NAMESPACE"),
        help=f"namespace of the Lease (default: the configuration's, else {DEFAULT_LEASE_NAMESPACE})",
    )
    g.add_argument(
        "--leader-elect-resource-lock",
        default=_env(e, "LEADER_ELECT_RESOURCE_LOCK"),
        metavar="leases",
        help="the lock's kind: leases, the only one kube-scheduler 1.36 supports",
    )
    for option, env_name, default in (
        ("lease-duration", "LEADER_ELECT_LEASE_DURATION", "15s"),
        ("renew-deadline", "LEADER_ELECT_RENEW_DEADLINE", "10s"),
        ("retry-period", "LEADER_ELECT_RETRY_PERIOD", "2s"),
    ):
        g.add_argument(
            f"--leader-elect-{option}",
            default=_env(e, env_name),
            metavar="DURATION",
            help=f"Go duration (default: the configuration's, else {default})",
        )


def _flag(value: object) -> bool | None:
    if value is None or isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise ValueError(f"KSCHED_LEADER_ELECT must be true or false, got {value!r}")


def _seconds(flag: str, value: str | None, configured: str, default: float) -> float:
    text = value or (configured if configured and configured != "0s" else None)
    if text is None:
        return default
    try:
        return seconds(text)
    except DurationError as exc:
        raise ValueError(f"--leader-elect-{flag}: {exc}") from None


def election_config(
    ns: argparse.Namespace,
    *,
    service: str,
    identity: str,
    kubeconfig: str | None,
    config: KubeSchedulerConfiguration,
    env: Mapping[str, str] | None = None,
) -> ElectionConfig | None:
    """The election of ``service`` (None: run without one). Raises ValueError for bad values."""
    le = config.leader_election
    lock = ns.leader_elect_resource_lock or le.resource_lock
    if lock not in ("", "leases"):
        raise ValueError(
            f'--leader-elect-resource-lock: Unsupported value: "{lock}": supported values: "leases"'
        )
    asked = _flag(ns.leader_elect)
    if not (asked if asked is not None else le.leader_elect is not False):
        return None
    if not api_reachable(kubeconfig, env):
        if asked:
            raise ValueError(
                "--leader-elect needs the Kubernetes API for its Lease: give --kubeconfig "
                "(KSCHED_KUBECONFIG) or run in a cluster, or pass --no-leader-elect"
            )
        return None
    configured_name = le.resource_name if le.resource_name != DEFAULT_LOCK_OBJECT_NAME else ""
    name = ns.lease_name or (f"{configured_name}-{service}" if configured_name else f"ksched-{service}")
    return ElectionConfig(
        name=name,
        namespace=ns.lease_namespace or le.resource_namespace or DEFAULT_LEASE_NAMESPACE,
        identity=f"{identity}_{uuid.uuid4().hex[:8]}",
        lease_duration=_seconds("lease-duration", ns.leader_elect_lease_duration, le.lease_duration, 15.0),
        renew_deadline=_seconds("renew-deadline", ns.leader_elect_renew_deadline, le.renew_deadline, 10.0),
        retry_period=_seconds("retry-period", ns.leader_elect_retry_period, le.retry_period, 2.0),
    )
