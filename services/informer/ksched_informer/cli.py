"""``ksched informer``: options → typed config → run()."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Sequence

from ksched.config import ConfigError, default_config, load_config
from ksched.service.logs import setup_logging
from ksched.service.options import common_options, parse
from ksched_informer.service import InformerOptions, InformerService

DEFAULT_HTTP_PORT = 10260


def main(argv: Sequence[str]) -> int:
    _, ns = parse(
        "ksched informer",
        "List-watch the Kubernetes API, keep the scheduler cache and the assume ledger, and publish "
        "versioned snapshots and the queue's feeds over NATS. Run one active instance.",
        argv,
        DEFAULT_HTTP_PORT,
    )
    common = common_options(ns, "informer")
    setup_logging("informer", common.log_format, common.log_level)
    try:
        config = load_config(common.config) if common.config else default_config()
    except ConfigError as exc:
        print(f"ksched informer: {common.config}: invalid configuration:\n{exc}", file=sys.stderr)
        return 2
    options = InformerOptions(
        nats=common.nats,
        kubeconfig=common.kubeconfig,
        http_host=common.http_host,
        http_port=common.http_port,
        subject_prefix=common.subject_prefix,
        identity=common.identity,
        nats_credentials=common.nats_credentials,
    )
    asyncio.run(InformerService(options, config).run())
    return 0
