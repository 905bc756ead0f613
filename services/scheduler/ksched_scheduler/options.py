"""``ksched scheduler``'s options: the common ones (embedded) and the replica's batch and seed."""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass

from ksched.config.types import KubeSchedulerConfiguration
from ksched.service.options import CommonOptions

DEFAULT_HTTP_PORT = 10259


@dataclass(frozen=True)
class SchedulerOptions:
    common: CommonOptions
    batch: int = 16
    """Pods popped per queue request."""
    max_inflight_assumes: int = 256
    """Assume requests under way at once; the cycle waits for a slot beyond that."""
    seed: int | None = None
    """Seed of the tie-break between equal scores (None: random)."""
    record_results: bool = False
    """Write kube-scheduler-simulator's result annotations on every attempt (docs/simulate.md)."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--batch", type=int, default=16, help="pods popped per queue request")
    parser.add_argument("--seed", type=int, default=None, help="seed for tie-breaking between equal scores")
    parser.add_argument(
        "--record-results",
        action="store_true",
        default=os.environ.get("KSCHED_RECORD_RESULTS", "").strip().lower() in ("1", "true", "yes", "on"),
        help="write kube-scheduler-simulator's result annotations on every pod attempt (a write per pod; "
        "docs/simulate.md; env KSCHED_RECORD_RESULTS=1)",
    )


def from_args(
    ns: argparse.Namespace, common: CommonOptions, config: KubeSchedulerConfiguration
) -> SchedulerOptions:
    if ns.batch < 1:
        raise ValueError(f"--batch must be at least 1, got {ns.batch}")
    return SchedulerOptions(common=common, batch=ns.batch, seed=ns.seed, record_results=ns.record_results)
