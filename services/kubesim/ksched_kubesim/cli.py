"""``ksched kubesim``: run the Kubernetes API emulator until interrupted. The flags and their
mapping to :class:`KubeSimConfig` are in :mod:`ksched_kubesim.options`; the parser comes from the
shared place every ``ksched`` service command builds its own (``ksched.service.options``)."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import sys
from collections.abc import Sequence

from ksched.service.logs import setup_logging
from ksched.service.options import new_parser
from ksched.service.tasks import TaskGroup

from . import options
from .scenario import ScenarioError
from .sim import KubeSim, KubeSimConfig


def build_parser() -> argparse.ArgumentParser:
    parser = new_parser(
        "ksched kubesim",
        "Run kubesim, an emulated Kubernetes API server (KWOK-style: nodes without kubelets).",
    )
    options.add_arguments(parser)
    return parser


async def _serve(
    config: KubeSimConfig,
    kubeconfig: str | None,
    restart_downtime: float,
    accounts: Sequence[options.Account] = (),
    grants: Sequence[options.Grant] = (),
) -> int:
    try:
        sim = KubeSim(config)
    except ScenarioError as exc:
        print(f"ksched kubesim: {exc}", file=sys.stderr)
        return 2
    try:
        await sim.start()
    except OSError as exc:
        print(
            f"ksched kubesim: cannot listen on {config.host}:{config.port}: {exc.strerror}", file=sys.stderr
        )
        return 1
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(sig, stop.set)
    restarts = TaskGroup()
    with contextlib.suppress(NotImplementedError):
        loop.add_signal_handler(
            signal.SIGHUP, lambda: restarts.spawn("restart", lambda: _restart(sim, restart_downtime))
        )
    print(f"kubesim listening on {sim.url}", flush=True)
    if kubeconfig:
        path = sim.write_kubeconfig(kubeconfig)
        print(f"kubeconfig written to {path}", flush=True)
    for namespace, name in accounts:
        token = sim.access.service_account_token(namespace, name)
        print(f"token of service account {namespace}/{name}: {token}", flush=True)
    for kind, subject, paths in grants:
        sim.access.grant(kind, subject, paths)
    try:
        await stop.wait()
    finally:
        await restarts.cancel_all()
        await sim.stop()
    return 0


async def _restart(sim: KubeSim, downtime: float) -> None:
    """SIGHUP: restart serving as an API server restart looks to clients (KubeSim.restart)."""
    print(f"kubesim restarting: {downtime:g} s down, watch history dropped", flush=True)
    await sim.restart(downtime)
    print(f"kubesim listening on {sim.url}", flush=True)


def main(argv: Sequence[str]) -> int:
    args = build_parser().parse_args(list(argv))
    setup_logging("kubesim", args.log_format, args.log_level)
    try:
        config = options.from_args(args)
        accounts, grants = options.access_from_args(args)
    except ValueError as exc:
        print(f"ksched kubesim: {exc}", file=sys.stderr)
        return 2
    try:
        import uvloop

        runner = asyncio.Runner(loop_factory=uvloop.new_event_loop)
    except ImportError:  # pragma: no cover - uvloop is a dependency on Linux
        runner = asyncio.Runner()
    with runner:
        return runner.run(_serve(config, args.write_kubeconfig, args.restart_downtime, accounts, grants))
