"""Options every service takes, as flags with ``KSCHED_*`` environment fallbacks.

Flag beats environment beats default: ``--nats`` / ``KSCHED_NATS``, ``--kubeconfig`` /
``KSCHED_KUBECONFIG``, ``--config`` / ``KSCHED_CONFIG``, ``--http-port`` / ``KSCHED_HTTP_PORT``,
``--http-host`` / ``KSCHED_HTTP_HOST``, ``--http-token`` / ``KSCHED_HTTP_TOKEN`` (bearer token of
/metrics and /debug, needed to serve them on a non-loopback address), ``--subject-prefix`` /
``KSCHED_SUBJECT_PREFIX``,
``--log-format`` / ``KSCHED_LOG_FORMAT``, ``--log-level`` / ``KSCHED_LOG_LEVEL``,
``--jetstream-replicas`` / ``KSCHED_JETSTREAM_REPLICAS`` (replicas of the streams and KV buckets a
service creates: 1 for one nats-server, 3 for a 3-server JetStream cluster; docs/bus.md),
``--feature-gates`` / ``KSCHED_FEATURE_GATES`` (upstream's syntax, docs/gang.md),
``--tracing-config-file`` / ``KSCHED_TRACING_CONFIG_FILE`` (Kubernetes' TracingConfiguration: export
the trace as OpenTelemetry spans, docs/tracing.md).

NATS security (all optional): ``--nats-user`` / ``KSCHED_NATS_USER``, ``--nats-password`` /
``KSCHED_NATS_PASSWORD``, ``--nats-creds`` / ``KSCHED_NATS_CREDS``, ``--nats-tls-ca`` /
``KSCHED_NATS_TLS_CA``, ``--nats-tls-cert`` / ``KSCHED_NATS_TLS_CERT``, ``--nats-tls-key`` /
``KSCHED_NATS_TLS_KEY``.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from ksched.bus.connect import MAX_REPLICAS, REPLICAS_SETTING
from ksched.bus.credentials import CredentialsError, NatsCredentials
from ksched.config import KubeSchedulerConfiguration, default_config, load_config
from ksched.features import DEFAULT as DEFAULT_GATES
from ksched.features import ENVIRONMENT as GATES_ENVIRONMENT
from ksched.features import FeatureGateError, FeatureGates
from ksched.service.tracing_config import TracingConfig, TracingConfigError, load_tracing_config

DEFAULT_NATS = "nats://127.0.0.1:4222"
DEFAULT_PREFIX = "ksched"


@dataclass(frozen=True)
class CommonOptions:
    nats: str
    kubeconfig: str | None
    config: str | None
    http_host: str
    http_port: int
    subject_prefix: str
    log_format: str
    log_level: str
    identity: str
    nats_credentials: NatsCredentials = field(default_factory=NatsCredentials)
    jetstream_replicas: int = 1
    http_token: str | None = None
    feature_gates: FeatureGates = DEFAULT_GATES
    tracing: TracingConfig | None = None
    """``--tracing-config-file``'s configuration (None: no OpenTelemetry export)."""


def _env(env: Mapping[str, str], name: str, default: str | None) -> str | None:
    value = env.get(f"KSCHED_{name}")
    return value if value not in (None, "") else default


def replica_count(text: str) -> int:
    """argparse type of ``--jetstream-replicas``: an integer from 1 to 5 (JetStream's limit)."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if not 1 <= value <= MAX_REPLICAS:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a replica count from 1 to {MAX_REPLICAS} ({REPLICAS_SETTING})"
        )
    return value


def feature_gates(text: str) -> FeatureGates:
    """argparse type of ``--feature-gates``: upstream's ``Name=bool,...`` with upstream's errors."""
    try:
        return FeatureGates.parse(text)
    except FeatureGateError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_feature_gates_argument(
    parser: argparse._ActionsContainer, env: Mapping[str, str] | None = None
) -> None:
    """``--feature-gates`` with its ``KSCHED_FEATURE_GATES`` fallback (every service, ``ksched simulate``)."""
    e = os.environ if env is None else env
    parser.add_argument(
        "--feature-gates",
        type=feature_gates,
        default=e.get(GATES_ENVIRONMENT) or "",
        metavar="Name=true|false,...",
        help="feature gates as kube-scheduler takes them, e.g. GenericWorkload=true,GangScheduling=true "
        "(docs/gang.md; default: every gate at its 1.36 default)",
    )


def add_common_arguments(
    parser: argparse.ArgumentParser, default_http_port: int, env: Mapping[str, str] | None = None
) -> None:
    e = os.environ if env is None else env
    g = parser.add_argument_group("common service options")
    g.add_argument(
        "--nats", default=_env(e, "NATS", DEFAULT_NATS), help="NATS server URL(s), comma-separated"
    )
    g.add_argument(
        "--kubeconfig", default=_env(e, "KUBECONFIG", None), help="kubeconfig (default: in-cluster)"
    )
    g.add_argument("--config", default=_env(e, "CONFIG", None), help="KubeSchedulerConfiguration file")
    g.add_argument(
        "--http-host",
        default=_env(e, "HTTP_HOST", "127.0.0.1"),
        help="address of /metrics and the health endpoints (default loopback)",
    )
    g.add_argument(
        "--http-port",
        type=int,
        default=int(_env(e, "HTTP_PORT", str(default_http_port)) or default_http_port),
        help=f"port of /metrics and the health endpoints; 0 picks a free one (default {default_http_port})",
    )
    g.add_argument(
        "--http-token",
        default=_env(e, "HTTP_TOKEN", None),
        help="bearer token of /metrics and /debug; without one they are served on loopback only "
        "(prefer KSCHED_HTTP_TOKEN: flags show in the process list)",
    )
    g.add_argument("--subject-prefix", default=_env(e, "SUBJECT_PREFIX", DEFAULT_PREFIX))
    g.add_argument("--log-format", choices=("text", "json"), default=_env(e, "LOG_FORMAT", "text"))
    g.add_argument("--log-level", default=_env(e, "LOG_LEVEL", "INFO"))
    g.add_argument(
        "--id", dest="identity", default=_env(e, "ID", None), help="instance identity (default: host-pid)"
    )
    g.add_argument(
        "--jetstream-replicas",
        type=replica_count,
        default=_env(e, "JETSTREAM_REPLICAS", "1"),
        help="replicas of the JetStream streams and KV buckets this service creates or updates: 1 for "
        "one nats-server, 3 for a 3-server cluster (default 1)",
    )
    add_feature_gates_argument(g, e)
    g.add_argument(
        "--tracing-config-file",
        default=_env(e, "TRACING_CONFIG_FILE", None),
        help="Kubernetes TracingConfiguration (apiserver.config.k8s.io/v1): export each pod attempt as "
        "OpenTelemetry spans over OTLP/gRPC (needs pip install 'ksched[otel]'; docs/tracing.md)",
    )
    add_nats_security_arguments(parser, e)


def add_nats_security_arguments(parser: argparse.ArgumentParser, env: Mapping[str, str]) -> None:
    """User/password or .creds file, and TLS, for the NATS connection (docs/deploy.md)."""
    g = parser.add_argument_group("NATS security (docs/deploy.md)")
    g.add_argument("--nats-user", default=_env(env, "NATS_USER", None), help="NATS user name")
    g.add_argument(
        "--nats-password",
        default=_env(env, "NATS_PASSWORD", None),
        help="NATS password (prefer KSCHED_NATS_PASSWORD: flags show in the process list)",
    )
    g.add_argument(
        "--nats-creds", default=_env(env, "NATS_CREDS", None), help="NATS .creds file (needs nkeys)"
    )
    g.add_argument("--nats-tls-ca", default=_env(env, "NATS_TLS_CA", None), help="CA bundle to verify NATS")
    g.add_argument(
        "--nats-tls-cert", default=_env(env, "NATS_TLS_CERT", None), help="client certificate (mutual TLS)"
    )
    g.add_argument("--nats-tls-key", default=_env(env, "NATS_TLS_KEY", None), help="client certificate key")


def nats_credentials(ns: argparse.Namespace) -> NatsCredentials:
    """The NATS security settings parsed by :func:`add_common_arguments`."""
    return NatsCredentials(
        user=ns.nats_user,
        password=ns.nats_password,
        creds_file=ns.nats_creds,
        tls_ca=ns.nats_tls_ca,
        tls_cert=ns.nats_tls_cert,
        tls_key=ns.nats_tls_key,
    )


def common_options(ns: argparse.Namespace, service: str) -> CommonOptions:
    identity = ns.identity or f"{service}-{os.uname().nodename}-{os.getpid()}"
    try:
        credentials = nats_credentials(ns)
    except CredentialsError as exc:
        raise SystemExit(f"ksched {service}: {exc}") from None
    try:
        tracing = load_tracing_config(ns.tracing_config_file) if ns.tracing_config_file else None
    except TracingConfigError as exc:
        raise SystemExit(f"ksched {service}: --tracing-config-file: {exc}") from None
    return CommonOptions(
        nats=ns.nats,
        kubeconfig=ns.kubeconfig,
        config=ns.config,
        http_host=ns.http_host,
        http_port=ns.http_port,
        subject_prefix=ns.subject_prefix,
        log_format=ns.log_format,
        log_level=ns.log_level,
        identity=identity,
        nats_credentials=credentials,
        jetstream_replicas=ns.jetstream_replicas,
        http_token=ns.http_token,
        feature_gates=ns.feature_gates,
        tracing=tracing,
    )


def scheduler_config(options: CommonOptions) -> KubeSchedulerConfiguration:
    """The ``--config`` file (upstream's defaults without one), defaulted under ``--feature-gates``;
    raises :class:`ksched.config.ConfigError`."""
    gates = options.feature_gates
    return load_config(options.config, gates=gates) if options.config else default_config(gates=gates)


def parse(
    prog: str, description: str, argv: Sequence[str], default_http_port: int
) -> tuple[argparse.ArgumentParser, argparse.Namespace]:
    parser = argparse.ArgumentParser(prog=prog, description=description)
    add_common_arguments(parser, default_http_port)
    return parser, parser.parse_args(list(argv))
