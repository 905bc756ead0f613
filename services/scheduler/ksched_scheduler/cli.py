"""``ksched scheduler``: options → typed config → run()."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Sequence

from ksched.config import ConfigError
from ksched.extenders import ExtenderConfigError, HTTPExtenders
from ksched.service.logs import setup_logging
from ksched.service.options import add_common_arguments, common_options, scheduler_config
from ksched_scheduler.service import SchedulerOptions, SchedulerService

DEFAULT_HTTP_PORT = 10259


def main(argv: Sequence[str]) -> int:
    import argparse

    parser = argparse.ArgumentParser(
        prog="ksched scheduler",
        description="Run a scheduling-cycle replica: pop pods from the queue, schedule them on a local "
        "snapshot replica, and have the informer assume each placement. Several may run at once.",
    )
    add_common_arguments(parser, DEFAULT_HTTP_PORT)
    parser.add_argument("--batch", type=int, default=16, help="pods popped per queue request")
    parser.add_argument("--seed", type=int, default=None, help="seed for tie-breaking between equal scores")
    parser.add_argument(
        "--record-results",
        action="store_true",
        default=os.environ.get("KSCHED_RECORD_RESULTS", "").strip().lower() in ("1", "true", "yes", "on"),
        help="write kube-scheduler-simulator's result annotations on every pod attempt (a write per pod; "
        "docs/simulate.md; env KSCHED_RECORD_RESULTS=1)",
    )
    ns = parser.parse_args(list(argv))
    common = common_options(ns, "scheduler")
    setup_logging("scheduler", common.log_format, common.log_level)
    try:
        config = scheduler_config(common)
    except ConfigError as exc:
        print(f"ksched scheduler: {common.config}: invalid configuration:\n{exc}", file=sys.stderr)
        return 2
    try:
        HTTPExtenders(config.extenders)  # TLS settings and files usable (upstream refuses to start)
    except ExtenderConfigError as exc:
        print(f"ksched scheduler: {common.config}: invalid configuration: {exc}", file=sys.stderr)
        return 2
    options = SchedulerOptions(
        nats=common.nats,
        kubeconfig=common.kubeconfig,
        http_host=common.http_host,
        http_port=common.http_port,
        http_token=common.http_token,
        subject_prefix=common.subject_prefix,
        identity=common.identity,
        batch=ns.batch,
        seed=ns.seed,
        record_results=ns.record_results,
        nats_credentials=common.nats_credentials,
        jetstream_replicas=common.jetstream_replicas,
        feature_gates=common.feature_gates,
        tracing=common.tracing,
    )
    asyncio.run(SchedulerService(options, config).run())
    return 0
