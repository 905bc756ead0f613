"""``ksched scheduler``: the shared service shell (:mod:`ksched.service.command`) with the
scheduler's options (:mod:`ksched_scheduler.options`) and server."""

from __future__ import annotations

from collections.abc import Sequence

from ksched.service import command
from ksched_scheduler import options
from ksched_scheduler.server import SchedulerServer

COMMAND = command.ServiceCommand(
    name="scheduler",
    description="Run a scheduling-cycle replica: pop pods from the queue, schedule them on a local "
    "snapshot replica, and have the informer assume each placement. Several may run at once.",
    default_http_port=options.DEFAULT_HTTP_PORT,
    add_arguments=options.add_arguments,
    options=options.from_args,
    service=SchedulerServer,
    uvloop=True,
)


def main(argv: Sequence[str]) -> int:
    return command.main(COMMAND, argv)
