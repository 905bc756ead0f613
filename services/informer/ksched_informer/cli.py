"""``ksched informer``: options → typed config → run()."""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Sequence

from ksched.config import ConfigError
from ksched.service.election import add_leader_election_arguments, election_config
from ksched.service.logs import setup_logging
from ksched.service.options import add_common_arguments, common_options, scheduler_config
from ksched_informer.service import InformerOptions, InformerService

DEFAULT_HTTP_PORT = 10260


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ksched informer",
        description="List-watch the Kubernetes API, keep the scheduler cache and the assume ledger, and "
        "publish versioned snapshots and the queue's feeds over NATS. One instance acts; with leader "
        "election the others are hot standbys.",
    )
    add_common_arguments(parser, DEFAULT_HTTP_PORT)
    add_leader_election_arguments(parser)
    return parser


def main(argv: Sequence[str]) -> int:
    ns = build_parser().parse_args(list(argv))
    common = common_options(ns, "informer")
    setup_logging("informer", common.log_format, common.log_level)
    try:
        config = scheduler_config(common)
    except ConfigError as exc:
        print(f"ksched informer: {common.config}: invalid configuration:\n{exc}", file=sys.stderr)
        return 2
    try:
        election = election_config(
            ns, service="informer", identity=common.identity, kubeconfig=common.kubeconfig, config=config
        )
    except ValueError as exc:
        print(f"ksched informer: {exc}", file=sys.stderr)
        return 2
    options = InformerOptions(
        nats=common.nats,
        kubeconfig=common.kubeconfig,
        http_host=common.http_host,
        http_port=common.http_port,
        http_token=common.http_token,
        subject_prefix=common.subject_prefix,
        identity=common.identity,
        nats_credentials=common.nats_credentials,
        election=election,
        jetstream_replicas=common.jetstream_replicas,
        feature_gates=common.feature_gates,
        tracing=common.tracing,
    )
    asyncio.run(InformerService(options, config).run())
    return 0
