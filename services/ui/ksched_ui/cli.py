"""``ksched ui``: the shared service shell (:mod:`ksched.service.command`) with the UI's options
(:mod:`ksched_ui.options`) and service."""

from __future__ import annotations

from collections.abc import Sequence

from ksched.service import command
from ksched_ui import options
from ksched_ui.service import UiService

COMMAND = command.ServiceCommand(
    name="ui",
    description="Serve a live web page of the nodes (requested vs allocatable, by zone), the queue and "
    "each pod's scheduling attempts, read from the bus. Open http://HOST:PORT/ (with a token: "
    "http://HOST:PORT/?token=TOKEN once).",
    default_http_port=options.DEFAULT_HTTP_PORT,
    add_arguments=options.add_arguments,
    options=options.from_args,
    service=UiService,
)


def main(argv: Sequence[str]) -> int:
    return command.main(COMMAND, argv)
