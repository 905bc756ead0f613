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
the trace as OpenTelemetry spans, docs/tracing.md), ``--trace-sample`` / ``KSCHED_TRACE_SAMPLE``
(the fraction of pods traced, default 1: every pod; docs/tracing.md).

NATS security (all optional): ``--nats-user`` / ``KSCHED_NATS_USER``, ``--nats-password`` /
``KSCHED_NATS_PASSWORD``, ``--nats-creds`` / ``KSCHED_NATS_CREDS``, ``--nats-tls-ca`` /
``KSCHED_NATS_TLS_CA``, ``--nats-tls-cert`` / ``KSCHED_NATS_TLS_CERT``, ``--nats-tls-key`` /
``KSCHED_NATS_TLS_KEY``.

Secure serving, as kube-scheduler's (docs/operations.md): ``--secure-port`` / ``KSCHED_SECURE_PORT``
(HTTPS; 0, the default of the services, serves none), ``--bind-address`` / ``KSCHED_BIND_ADDRESS``,
``--tls-cert-file`` / ``KSCHED_TLS_CERT_FILE`` and ``--tls-private-key-file`` /
``KSCHED_TLS_PRIVATE_KEY_FILE`` (a self-signed certificate without them),
``--authentication-kubeconfig`` / ``KSCHED_AUTHENTICATION_KUBECONFIG``,
``--authorization-kubeconfig`` / ``KSCHED_AUTHORIZATION_KUBECONFIG`` (in-cluster without them),
``--authorization-always-allow-paths`` / ``KSCHED_AUTHORIZATION_ALWAYS_ALLOW_PATHS``.

kube-scheduler's own flags (``--master``, ``--write-config-to``, ``-v``, the deprecated
client-connection flags; :mod:`ksched.flags.upstream_flags`) and its ``--logging-format`` (an
alias of ``--log-format``) are taken too, in Go's flag syntax (docs/operations.md).
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping
from dataclasses import dataclass, field

from ksched.bus.connect import MAX_REPLICAS, REPLICAS_SETTING
from ksched.bus.credentials import CredentialsError, NatsCredentials
from ksched.config import KubeSchedulerConfiguration, default_config, load_config
from ksched.features import DEFAULT as DEFAULT_GATES
from ksched.features import ENVIRONMENT as GATES_ENVIRONMENT
from ksched.features import FeatureGateError, FeatureGates
from ksched.flags.goflags import GoFlagParser
from ksched.flags.upstream_flags import add_upstream_arguments, log_level
from ksched.service.tracing_config import TracingConfig, TracingConfigError, load_tracing_config

DEFAULT_NATS = "nats://127.0.0.1:4222"
DEFAULT_ALWAYS_ALLOW_PATHS = ("/healthz", "/readyz", "/livez")
DEFAULT_PREFIX = "ksched"


@dataclass(frozen=True)
class SecureServing:
    """The HTTPS port of /metrics, /debug, /configz and the probes (ksched.service.http)."""

    port: int
    """0 picks a free port (tests); the command line's 0 means no HTTPS and gives no SecureServing."""
    bind_address: str = "0.0.0.0"
    cert_file: str | None = None
    key_file: str | None = None
    authentication_kubeconfig: str | None = None
    authorization_kubeconfig: str | None = None
    always_allow_paths: tuple[str, ...] = DEFAULT_ALWAYS_ALLOW_PATHS


@dataclass(frozen=True)
class CommonOptions:
    """The options every service takes; each service's own options embed one (``options.common``)."""

    identity: str
    """Instance identity (``--id``; default ``<service>-<host>-<pid>``)."""
    nats: str = DEFAULT_NATS
    kubeconfig: str | None = None
    """None: in-cluster (or, for a service that only may use the API, no API)."""
    config: str | None = None
    """The KubeSchedulerConfiguration file (None: upstream's defaults)."""
    http_host: str = "127.0.0.1"
    http_port: int = 0
    """Port of /metrics and the probes; 0 picks a free one (the command line defaults per service)."""
    subject_prefix: str = DEFAULT_PREFIX
    log_format: str = "text"
    log_level: str = "INFO"
    nats_credentials: NatsCredentials = field(default_factory=NatsCredentials)
    jetstream_replicas: int = 1
    """Replicas of the JetStream streams and KV buckets the service creates or updates."""
    http_token: str | None = None
    """Bearer token of /metrics and /debug (ksched.service.http)."""
    feature_gates: FeatureGates = DEFAULT_GATES
    secure: SecureServing | None = None
    tracing: TracingConfig | None = None
    """``--tracing-config-file``'s configuration (None: no OpenTelemetry export)."""
    trace_sample: float = 1.0
    """``--trace-sample``: the fraction of pods whose events are traced (chosen by pod name)."""
    master: str | None = None
    """kube-scheduler's ``--master``: the API server's address, over the kubeconfig's server."""


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


def trace_sample(text: str) -> float:
    """argparse type of ``--trace-sample``: a fraction from 0 to 1."""
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0.0 <= value <= 1.0:  # also refuses nan
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a fraction of pods from 0 to 1 (1 traces every pod)"
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
    parser: argparse.ArgumentParser,
    default_http_port: int,
    env: Mapping[str, str] | None = None,
    default_secure_port: int = 0,
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
    g.add_argument(
        "--log-format",
        "--logging-format",
        dest="log_format",
        choices=("text", "json"),
        default=_env(e, "LOG_FORMAT", "text"),
    )
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
    g.add_argument(
        "--trace-sample",
        type=trace_sample,
        default=_env(e, "TRACE_SAMPLE", "1"),
        metavar="FRACTION",
        help="the fraction of pods whose lifecycle events are traced (ksched trace, ksched ui and the "
        "OpenTelemetry export), chosen by a hash of namespace/name alike in every service: give every "
        "service the same value (default 1: every pod; docs/tracing.md)",
    )
    add_nats_security_arguments(parser, e)
    add_secure_serving_arguments(parser, e, default_secure_port)
    add_upstream_arguments(parser)


def port_number(text: str) -> int:
    """argparse type of ``--secure-port``: 0 (none) to 65535."""
    try:
        value = int(text)
    except ValueError:
        value = -1
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number from 0 to 65535")
    return value


def path_list(text: str) -> tuple[str, ...]:
    """argparse type of ``--authorization-always-allow-paths``: comma-separated; ``*`` only trailing."""
    paths = tuple(p.strip() for p in text.split(",") if p.strip())
    for p in paths:
        if "*" in p[:-1]:
            raise argparse.ArgumentTypeError(f"only trailing * allowed in {p!r}")
    return paths


def add_secure_serving_arguments(
    parser: argparse.ArgumentParser, env: Mapping[str, str], default_secure_port: int = 0
) -> None:
    """kube-scheduler's secure serving, delegated authentication and authorization flags."""
    g = parser.add_argument_group("secure serving (docs/operations.md)")
    g.add_argument(
        "--secure-port",
        type=port_number,
        default=_env(env, "SECURE_PORT", str(default_secure_port)),
        help=f"HTTPS port of /metrics, /debug, /configz and the probes; 0 serves none "
        f"(default {default_secure_port})",
    )
    g.add_argument(
        "--bind-address",
        default=_env(env, "BIND_ADDRESS", "0.0.0.0"),
        help="address of the secure port (default 0.0.0.0: every interface)",
    )
    g.add_argument(
        "--tls-cert-file",
        default=_env(env, "TLS_CERT_FILE", None),
        help="serving certificate (chain) in PEM; without it, a self-signed one is made at start",
    )
    g.add_argument(
        "--tls-private-key-file", default=_env(env, "TLS_PRIVATE_KEY_FILE", None), help="its private key"
    )
    g.add_argument(
        "--authentication-kubeconfig",
        default=_env(env, "AUTHENTICATION_KUBECONFIG", None),
        help="kubeconfig of the API server that reviews tokens (TokenReview; default in-cluster)",
    )
    g.add_argument(
        "--authorization-kubeconfig",
        default=_env(env, "AUTHORIZATION_KUBECONFIG", None),
        help="kubeconfig of the API server that authorizes requests (SubjectAccessReview; default "
        "in-cluster)",
    )
    g.add_argument(
        "--authorization-always-allow-paths",
        type=path_list,
        default=_env(env, "AUTHORIZATION_ALWAYS_ALLOW_PATHS", ",".join(DEFAULT_ALWAYS_ALLOW_PATHS)),
        help="paths served to anyone, comma-separated (default /healthz,/readyz,/livez)",
    )


def secure_serving(ns: argparse.Namespace) -> SecureServing | None:
    """The secure serving settings parsed by :func:`add_secure_serving_arguments` (None: no HTTPS).
    Raises ValueError naming the flag for a certificate without its key or the reverse."""
    if bool(ns.tls_cert_file) != bool(ns.tls_private_key_file):
        raise ValueError("--tls-cert-file and --tls-private-key-file must be given together")
    if not ns.secure_port:
        return None
    return SecureServing(
        port=ns.secure_port,
        bind_address=ns.bind_address,
        cert_file=ns.tls_cert_file,
        key_file=ns.tls_private_key_file,
        authentication_kubeconfig=ns.authentication_kubeconfig,
        authorization_kubeconfig=ns.authorization_kubeconfig,
        always_allow_paths=ns.authorization_always_allow_paths,
    )


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
        secure = secure_serving(ns)
    except (CredentialsError, ValueError) as exc:
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
        log_level=log_level(ns, ns.log_level),
        identity=identity,
        nats_credentials=credentials,
        jetstream_replicas=ns.jetstream_replicas,
        http_token=ns.http_token,
        feature_gates=ns.feature_gates,
        secure=secure,
        tracing=tracing,
        trace_sample=ns.trace_sample,
        master=ns.master,
    )


def scheduler_config(options: CommonOptions) -> KubeSchedulerConfiguration:
    """The ``--config`` file (upstream's defaults without one), defaulted under ``--feature-gates``;
    raises :class:`ksched.config.ConfigError`."""
    gates = options.feature_gates
    return load_config(options.config, gates=gates) if options.config else default_config(gates=gates)


def new_parser(prog: str, description: str) -> argparse.ArgumentParser:
    """The parser of a ``ksched`` service command: the one place its command line is built, with Go's
    flag syntax and kube-scheduler's unknown-flag error (:mod:`ksched.flags.goflags`)."""
    return GoFlagParser(prog=prog, description=description)
