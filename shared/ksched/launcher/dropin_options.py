"""The command line of ``ksched kube-scheduler``: kube-scheduler 1.36's flags (Go syntax), resolved
against the KubeSchedulerConfiguration as upstream's cmd/kube-scheduler/app/options does.

The deprecated flags and ``--kubeconfig`` as every service resolves them
(:mod:`ksched.flags.upstream_flags`); the leader-election flags override the file's
``leaderElection`` field by field, as upstream's ``ApplyLeaderElectionTo``; ``--master`` overrides
the kubeconfig's server.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence
from dataclasses import dataclass

from ksched.config import KubeSchedulerConfiguration, default_config, load_config
from ksched.flags.goflags import GoBool, GoFlagParser
from ksched.flags.upstream_flags import add_upstream_arguments, apply_to, log_level
from ksched.service.options import (
    SecureServing,
    add_feature_gates_argument,
    add_secure_serving_arguments,
    secure_serving,
)

DEFAULT_SECURE_PORT = 10259
LEADER_ELECTION_FLAGS = (
    ("leader_elect_lease_duration", "lease_duration"),
    ("leader_elect_renew_deadline", "renew_deadline"),
    ("leader_elect_retry_period", "retry_period"),
    ("leader_elect_resource_lock", "resource_lock"),
    ("leader_elect_resource_name", "resource_name"),
    ("leader_elect_resource_namespace", "resource_namespace"),
)


@dataclass(frozen=True)
class DropInOptions:
    """What ``ksched kube-scheduler`` runs with, flags and file resolved."""

    config: KubeSchedulerConfiguration
    config_file: str | None
    kubeconfig: str | None
    master: str | None
    write_config_to: str | None
    secure: SecureServing | None
    """The HTTPS port of the probes (None: ``--secure-port=0``)."""
    http_port: int
    log_format: str
    log_level: str
    nats: str | None
    workdir: str | None
    schedulers: int
    binders: int
    subject_prefix: str
    feature_gates: str


def build_parser() -> GoFlagParser:
    p = GoFlagParser(
        prog="ksched kube-scheduler",
        description="kube-scheduler's command line, the whole ksched pipeline in one process tree: an "
        "embedded nats-server (unless --nats), the informer, queue, scheduler and binder services, and one "
        "port whose /livez and /readyz cover them all. With --leader-elect (the default) the pipeline "
        "runs only while this process holds the kube-scheduler Lease (docs/deploy.md).",
    )
    p.add_argument("--config", help="the KubeSchedulerConfiguration file")
    p.add_argument("--kubeconfig", help="kubeconfig of the API server")
    add_upstream_arguments(p)
    add_secure_serving_arguments(p, os.environ, DEFAULT_SECURE_PORT)
    le = p.add_argument_group("leader election")
    le.add_argument("--leader-elect", action=GoBool, default=None, help="elect on the Lease (default true)")
    for flag in (
        "lease-duration",
        "renew-deadline",
        "retry-period",
        "resource-lock",
        "resource-name",
        "resource-namespace",
    ):
        le.add_argument(f"--leader-elect-{flag}")
    p.add_argument("--logging-format", choices=("text", "json"), default="text", help="log format")
    add_feature_gates_argument(p.add_argument_group("feature gate"))
    ksched = p.add_argument_group("ksched")
    ksched.add_argument(
        "--http-port",
        type=int,
        default=0,
        help="plain-HTTP port on loopback for local use (default: a free one)",
    )
    ksched.add_argument("--nats", help="use this NATS server instead of an embedded one")
    ksched.add_argument("--workdir", help="logs and JetStream data of the pipeline (default: a temp dir)")
    ksched.add_argument("--schedulers", type=int, default=1, help="scheduler replicas (default 1)")
    ksched.add_argument("--binders", type=int, default=1, help="binder processes (default 1)")
    ksched.add_argument("--subject-prefix", default="ksched", help="NATS subject prefix")
    return p


def resolve(ns: argparse.Namespace) -> DropInOptions:
    """The effective options; raises ksched.config.ConfigError or ValueError (naming the field)."""
    gates = ns.feature_gates
    config = load_config(ns.config, gates=gates) if ns.config else default_config(gates=gates)
    apply_to(ns, config, ns.config)
    le = config.leader_election
    if ns.leader_elect is not None:
        le.leader_elect = ns.leader_elect
    for flag, field in LEADER_ELECTION_FLAGS:
        value = getattr(ns, flag)
        if value is not None:
            setattr(le, field, value)
    if le.resource_lock not in ("", "leases"):
        raise ValueError(
            f'leaderElection.resourceLock: Unsupported value: "{le.resource_lock}": '
            'supported values: "leases"'
        )
    for name in ("schedulers", "binders"):
        if getattr(ns, name) < 1:
            raise ValueError(f"--{name} must be at least 1, got {getattr(ns, name)}")
    return DropInOptions(
        config=config,
        config_file=ns.config,
        kubeconfig=config.client_connection.kubeconfig or None,
        master=ns.master,
        write_config_to=ns.write_config_to,
        secure=secure_serving(ns),
        http_port=ns.http_port,
        log_format=ns.logging_format,
        log_level=log_level(ns, "INFO"),
        nats=ns.nats,
        workdir=ns.workdir,
        schedulers=ns.schedulers,
        binders=ns.binders,
        subject_prefix=ns.subject_prefix,
        feature_gates=str(ns.feature_gates),
    )


def parse(argv: Sequence[str]) -> DropInOptions:
    """Parse and resolve; exits as kube-scheduler does on a bad command line."""
    ns = build_parser().parse_args(list(argv))
    return resolve(ns)
