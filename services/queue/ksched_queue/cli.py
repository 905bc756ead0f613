"""``ksched queue``: the shared service shell (:mod:`ksched.service.command`) with the queue's
options (:mod:`ksched_queue.options`) and server (one active instance)."""

from __future__ import annotations

from collections.abc import Sequence

from ksched.config.types import KubeSchedulerConfiguration
from ksched.service import command

from . import options
from .server import QueueServer
from .settings import DEFAULT_HTTP_PORT, QueueSettings


def _server(settings: QueueSettings, _config: KubeSchedulerConfiguration) -> QueueServer:
    return QueueServer(settings)


COMMAND = command.ServiceCommand(
    name="queue",
    description="Run the scheduling queue: activeQ / backoffQ / unschedulable pods, leases for "
    "scheduler replicas, event-driven requeueing from the informer's feed. One instance serves; with "
    "leader election the others are hot standbys.",
    default_http_port=DEFAULT_HTTP_PORT,
    add_arguments=options.add_arguments,
    options=options.from_args,
    service=_server,
    leader_election=True,
    uvloop=True,
)


def main(argv: Sequence[str]) -> int:
    return command.main(COMMAND, argv)
