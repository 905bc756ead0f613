"""``ksched binder``: the shared service shell (:mod:`ksched.service.command`) with the binder's
options (:mod:`ksched_binder.options`) and service."""

from __future__ import annotations

from collections.abc import Sequence

from ksched.service import command
from ksched_binder import options
from ksched_binder.service import BinderService

COMMAND = command.ServiceCommand(
    name="binder",
    description="Bind accepted placements: WaitOnPermit, PreBind, Bind and PostBind in parallel workers, "
    "taking work from the durable placement queue.",
    default_http_port=options.DEFAULT_HTTP_PORT,
    add_arguments=options.add_arguments,
    options=options.from_args,
    service=BinderService,
    uvloop=True,
)


def main(argv: Sequence[str]) -> int:
    return command.main(COMMAND, argv)
