"""Options every service takes, as flags with ``KSCHED_*`` environment fallbacks.

Flag beats environment beats default: ``--nats`` / ``KSCHED_NATS``, ``--kubeconfig`` /
``KSCHED_KUBECONFIG``, ``--config`` / ``KSCHED_CONFIG``, ``--http-port`` / ``KSCHED_HTTP_PORT``,
``--http-host`` / ``KSCHED_HTTP_HOST``, ``--subject-prefix`` / ``KSCHED_SUBJECT_PREFIX``,
``--log-format`` / ``KSCHED_LOG_FORMAT``, ``--log-level`` / ``KSCHED_LOG_LEVEL``.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

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


def _env(env: Mapping[str, str], name: str, default: str | None) -> str | None:
    value = env.get(f"KSCHED_{name}")
    return value if value not in (None, "") else default


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
    g.add_argument("--subject-prefix", default=_env(e, "SUBJECT_PREFIX", DEFAULT_PREFIX))
    g.add_argument("--log-format", choices=("text", "json"), default=_env(e, "LOG_FORMAT", "text"))
    g.add_argument("--log-level", default=_env(e, "LOG_LEVEL", "INFO"))
    g.add_argument(
        "--id", dest="identity", default=_env(e, "ID", None), help="instance identity (default: host-pid)"
    )


def common_options(ns: argparse.Namespace, service: str) -> CommonOptions:
    identity = ns.identity or f"{service}-{os.uname().nodename}-{os.getpid()}"
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
    )


def parse(
    prog: str, description: str, argv: Sequence[str], default_http_port: int
) -> tuple[argparse.ArgumentParser, argparse.Namespace]:
    parser = argparse.ArgumentParser(prog=prog, description=description)
    add_common_arguments(parser, default_http_port)
    return parser, parser.parse_args(list(argv))
