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


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--min-interval",
        type=float,
        default=0.25,
        help="least seconds between two pushes of the cluster or queue view to the pages (default 0.25)",
    )


def from_args(ns: argparse.Namespace, common: CommonOptions, config: KubeSchedulerConfiguration) -> UiOptions:
    if not ns.min_interval > 0:
        raise ValueError(f"--min-interval must be above 0, got {ns.min_interval}")
    return UiOptions(common=common, min_interval=ns.min_interval)
