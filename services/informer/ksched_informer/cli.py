"""``ksched informer``: the shared service shell (:mod:`ksched.service.command`) with the informer's
options (:mod:`ksched_informer.options`) and service."""

from __future__ import annotations

from collections.abc import Sequence

from ksched.service import command
from ksched_informer import options
from ksched_informer.service import InformerService

COMMAND = command.ServiceCommand(
    name="informer",
    description="List-watch the Kubernetes API, keep the scheduler cache and the assume ledger, and "
    "publish versioned snapshots and the queue's feeds over NATS. One instance acts; with leader "
    "election the others are hot standbys.",
    default_http_port=options.DEFAULT_HTTP_PORT,
    add_arguments=options.add_arguments,
    options=options.from_args,
    service=InformerService,
    uvloop=True,
    leader_election=True,
)


def main(argv: Sequence[str]) -> int:
    return command.main(COMMAND, argv)
