"""``ksched binder``'s options: the common ones (embedded) and the binder's workers."""

from __future__ import annotations

import argparse
from dataclasses import dataclass

from ksched.config.types import KubeSchedulerConfiguration
from ksched.service.options import CommonOptions

DEFAULT_HTTP_PORT = 10262


@dataclass(frozen=True)
class BinderOptions:
    common: CommonOptions
    workers: int = 32
    """Placements bound concurrently."""
    ack_wait: float = 30.0
    """Seconds JetStream waits for a placement's acknowledgement before redelivering it (a worker
    still binding it says it is in progress every third of that)."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--workers",
        type=int,
        default=32,
        help="placements bound concurrently (default 32); the binder keeps 16 API connections, or one "
        "per two workers with more",
    )


def from_args(
    ns: argparse.Namespace, common: CommonOptions, config: KubeSchedulerConfiguration
) -> BinderOptions:
    if ns.workers < 1:
        raise ValueError(f"--workers must be at least 1, got {ns.workers}")
    return BinderOptions(common=common, workers=ns.workers)
