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
    batch: int = 64
    """The most pods popped per queue request."""
    pop_window: float = 0.1
    """Seconds of this replica's recent time per pod that one pop may hold (ksched_scheduler.pop_size)."""
    max_inflight_assumes: int = 256
    """Assume requests under way at once; the cycle waits for a slot beyond that."""
    seed: int | None = None
    """Seed of the tie-break between equal scores (None: random)."""
    record_results: bool = False
    """Write kube-scheduler-simulator's result annotations on every attempt (docs/simulate.md)."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--batch", type=int, default=64, help="the most pods popped per queue request (see --pop-window)"
    )
    parser.add_argument(
        "--pop-window",
        type=float,
        default=0.1,
        help="seconds of scheduling one pop may hold: pods per pop = this over the replica's recent time "
        "per pod, at most --batch (a pod queued meanwhile waits behind the popped ones)",
    )
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
    if not ns.pop_window > 0:
        raise ValueError(f"--pop-window must be a positive number of seconds, got {ns.pop_window}")
    return SchedulerOptions(
        common=common,
        batch=ns.batch,
        pop_window=ns.pop_window,
        seed=ns.seed,
        record_results=ns.record_results,
    )
