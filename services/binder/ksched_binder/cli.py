"""``ksched binder``: options → typed config → run()."""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Sequence

from ksched.config import ConfigError
from ksched.extenders import ExtenderConfigError, HTTPExtenders
from ksched.service.logs import setup_logging
from ksched.service.options import add_common_arguments, common_options, scheduler_config
from ksched_binder.service import BinderOptions, BinderService

DEFAULT_HTTP_PORT = 10262


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="ksched binder",
        description="Bind accepted placements: WaitOnPermit, PreBind, Bind and PostBind in parallel workers, "
        "taking work from the durable placement queue.",
    )
    add_common_arguments(parser, DEFAULT_HTTP_PORT)
    parser.add_argument("--workers", type=int, default=32, help="placements bound concurrently (default 32)")
    ns = parser.parse_args(list(argv))
    common = common_options(ns, "binder")
    setup_logging("binder", common.log_format, common.log_level)
    try:
        config = scheduler_config(common)
    except ConfigError as exc:
        print(f"ksched binder: {common.config}: invalid configuration:\n{exc}", file=sys.stderr)
        return 2
    try:
        HTTPExtenders(config.extenders)  # TLS settings and files usable (upstream refuses to start)
    except ExtenderConfigError as exc:
        print(f"ksched binder: {common.config}: invalid configuration: {exc}", file=sys.stderr)
        return 2
    options = BinderOptions(
        nats=common.nats,
        kubeconfig=common.kubeconfig,
        http_host=common.http_host,
        http_port=common.http_port,
        http_token=common.http_token,
        subject_prefix=common.subject_prefix,
        identity=common.identity,
        workers=ns.workers,
        nats_credentials=common.nats_credentials,
        jetstream_replicas=common.jetstream_replicas,
        tracing=common.tracing,
    )
    asyncio.run(BinderService(options, config).run())
    return 0
