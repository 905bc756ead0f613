"""``ksched ui``: options → run()."""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Sequence

from ksched.service.logs import setup_logging
from ksched.service.options import add_common_arguments, common_options
from ksched_ui.service import UiOptions, UiService

DEFAULT_HTTP_PORT = 10263


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="ksched ui",
        description="Serve a live web page of the nodes (requested vs allocatable, by zone), the queue "
        "and each pod's scheduling attempts, read from the bus. Open http://HOST:PORT/ (with a token: "
        "http://HOST:PORT/?token=TOKEN once).",
    )
    add_common_arguments(parser, DEFAULT_HTTP_PORT)
    parser.add_argument(
        "--min-interval",
        type=float,
        default=0.25,
        help="least seconds between two pushes of the cluster or queue view to the pages (default 0.25)",
    )
    ns = parser.parse_args(list(argv))
    common = common_options(ns, "ui")
    setup_logging("ui", common.log_format, common.log_level)
    options = UiOptions(
        nats=common.nats,
        http_host=common.http_host,
        http_port=common.http_port,
        subject_prefix=common.subject_prefix,
        identity=common.identity,
        nats_credentials=common.nats_credentials,
        http_token=common.http_token,
        min_interval=ns.min_interval,
    )
    asyncio.run(UiService(options).run())
    return 0
