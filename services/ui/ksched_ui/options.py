"""``ksched ui``'s options: the common ones (embedded) and how often the views are pushed."""

from __future__ import annotations

import argparse
from dataclasses import dataclass

from ksched.config.types import KubeSchedulerConfiguration
from ksched.service.options import CommonOptions

DEFAULT_HTTP_PORT = 10263


@dataclass(frozen=True)
class UiOptions:
    common: CommonOptions
    min_interval: float = 0.25
    """The least seconds between two pushes of the cluster or the queue view."""
    queue_refresh: float = 5.0
    """The most seconds the queue view goes without a listing while a page is open (trace events
    re-list it sooner; this covers pods whose events were not sampled or not seen)."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--min-interval",
        type=float,
        default=0.25,
        help="least seconds between two pushes of the cluster or queue view to the pages (default 0.25)",
    )
    parser.add_argument(
        "--queue-refresh",
        type=float,
        default=5.0,
        help="most seconds between two listings of the queue while a page is open, trace events or not "
        "(default 5)",
    )


def from_args(ns: argparse.Namespace, common: CommonOptions, config: KubeSchedulerConfiguration) -> UiOptions:
    if not ns.min_interval > 0:
        raise ValueError(f"--min-interval must be above 0, got {ns.min_interval}")
    if not ns.queue_refresh >= ns.min_interval:
        raise ValueError(f"--queue-refresh must be at least --min-interval, got {ns.queue_refresh}")
    return UiOptions(common=common, min_interval=ns.min_interval, queue_refresh=ns.queue_refresh)
