"""``ksched queue``'s flags and their mapping to the typed config,
:class:`~ksched_queue.settings.QueueSettings` (the common options embedded, leader election, the
queue's durations)."""

from __future__ import annotations

import argparse

from ksched.apimachinery.duration import DurationError, seconds
from ksched.config.types import KubeSchedulerConfiguration
from ksched.service.election import election_config
from ksched.service.options import CommonOptions

from .settings import QueueSettings


def _duration(text: str) -> float:
    try:
        return seconds(text)
    except DurationError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_arguments(parser: argparse.ArgumentParser) -> None:
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


def from_args(
    ns: argparse.Namespace, common: CommonOptions, config: KubeSchedulerConfiguration
) -> QueueSettings:
    """The queue's settings; raises ValueError naming a bad flag."""
    for flag, value in (
        ("--lease-duration", ns.lease_duration),
        ("--pod-max-in-unschedulable-pods-duration", ns.pod_max_in_unschedulable_pods_duration),
        ("--repair-interval", ns.repair_interval),
    ):
        if value <= 0:
            raise ValueError(f"{flag} must be positive, got {value} s")
    election = election_config(
        ns, service="queue", identity=common.identity, kubeconfig=common.kubeconfig, config=config
    )
    return QueueSettings(
        scheduler_config=config,
        common=common,
        lease_seconds=ns.lease_duration,
        pod_max_in_unschedulable=ns.pod_max_in_unschedulable_pods_duration,
        repair_interval=ns.repair_interval,
        election=election,
    )
