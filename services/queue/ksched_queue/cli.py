"""``ksched queue``: run the scheduling queue service (one active instance)."""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import sys
from collections.abc import Sequence

from ksched.apimachinery.duration import DurationError, seconds
from ksched.config import ConfigError
from ksched.service.election import add_leader_election_arguments, election_config
from ksched.service.logs import setup_logging
from ksched.service.options import add_common_arguments, common_options

from .settings import DEFAULT_HTTP_PORT, QueueSettings


def _duration(text: str) -> float:
    try:
        return seconds(text)
    except DurationError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ksched queue",
        description="Run the scheduling queue: activeQ / backoffQ / unschedulable pods, leases for "
        "scheduler replicas, event-driven requeueing from the informer's feed. One instance serves; with "
        "leader election the others are hot standbys.",
    )
    add_common_arguments(parser, DEFAULT_HTTP_PORT)
    add_leader_election_arguments(parser)
    group = parser.add_argument_group("queue options")
    group.add_argument(
        "--lease-duration",
        type=_duration,
        default=30.0,
        metavar="DURATION",
        help="how long a popped pod stays leased to a replica without a renewal (Go duration, default 30s)",
    )
    group.add_argument(
        "--pod-max-in-unschedulable-pods-duration",
        type=_duration,
        default=300.0,
        metavar="DURATION",
        help="unschedulable pods are retried after this long at the latest (upstream flag, default 5m)",
    )
    group.add_argument(
        "--repair-interval",
        type=_duration,
        default=60.0,
        metavar="DURATION",
        help="how often the queue compares its pods with the informer's pending pods and adds back any it "
        "lost (Go duration, default 1m0s)",
    )
    return parser


def main(argv: Sequence[str]) -> int:
    parser = build_parser()
    ns = parser.parse_args(list(argv))
    options = common_options(ns, "queue")
    setup_logging("queue", options.log_format, options.log_level)
    try:
        settings = QueueSettings.from_options(
            options,
            lease_seconds=ns.lease_duration,
            pod_max_in_unschedulable=ns.pod_max_in_unschedulable_pods_duration,
            repair_interval=ns.repair_interval,
        )
        election = election_config(
            ns,
            service="queue",
            identity=options.identity,
            kubeconfig=options.kubeconfig,
            config=settings.scheduler_config,
        )
        settings = dataclasses.replace(settings, kubeconfig=options.kubeconfig, election=election)
    except ConfigError as exc:
        print(f"ksched queue: invalid configuration:\n{exc}", file=sys.stderr)
        return 2
    except ValueError as exc:
        print(f"ksched queue: {exc}", file=sys.stderr)
        return 2
    from .service import run

    try:
        import uvloop

        runner = asyncio.Runner(loop_factory=uvloop.new_event_loop)
    except ImportError:  # pragma: no cover - uvloop is a dependency off Windows
        runner = asyncio.Runner()
    with runner:
        try:
            return runner.run(run(settings))
        except KeyboardInterrupt:
            return 130
