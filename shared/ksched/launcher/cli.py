"""``ksched up`` (start everything and keep running) and ``ksched demo`` (the ``make run`` demo)."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from ksched.aio import cancel_and_wait
from ksched.flags.goflags import GoFlagParser
from ksched.flags.upstream_flags import log_level
from ksched.launcher.keeper import keep_services
from ksched.launcher.stack import UI_PORT, Stack, StackOptions
from ksched.service.options import add_feature_gates_argument


def stack_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--nodes", type=int, default=100, help="synthetic kubesim nodes (default 100)")
    p.add_argument(
        "--scenario", action="append", default=[], help="objects to load into kubesim (repeatable)"
    )
    p.add_argument("--kubeconfig", help="use this cluster instead of starting kubesim")
    p.add_argument("--config", help="KubeSchedulerConfiguration file for every service")
    p.add_argument("--schedulers", type=int, default=1, help="scheduler replicas (default 1)")
    p.add_argument("--binders", type=int, default=1, help="binder processes (default 1)")
    p.add_argument("--workdir", help="where logs, the kubeconfig and JetStream data go (default: a temp dir)")
    p.add_argument("--prefix", default="ksched", help="NATS subject prefix")
    add_feature_gates_argument(p)
    p.add_argument("--no-ui", dest="ui", action="store_false", help="do not start `ksched ui`")
    p.add_argument(
        "--ui-port", type=int, default=UI_PORT, help=f"the web page's port if free (default {UI_PORT})"
    )
    p.add_argument(
        "-v",
        "--v",
        type=int,
        default=None,
        help="kube-scheduler's klog verbosity for every service (4+: DEBUG)",
    )
    p.add_argument(
        "--logging-format", choices=("text", "json"), default="text", help="every service's log format"
    )


def options_from(ns: argparse.Namespace, workdir: Path) -> StackOptions:
    return StackOptions(
        workdir=workdir,
        nodes=ns.nodes if not ns.kubeconfig else 0,
        scenarios=ns.scenario,
        kubeconfig=ns.kubeconfig,
        config=ns.config,
        schedulers=ns.schedulers,
        binders=ns.binders,
        prefix=ns.prefix,
        kubesim_tls=True,  # kubectl sends the bearer token only over HTTPS
        feature_gates=str(ns.feature_gates),
        ui=ns.ui,
        ui_port=ns.ui_port,
        log_level=log_level(ns, "INFO"),
        log_format=ns.logging_format,
    )


async def _up(options: StackOptions) -> int:
    stack = Stack(options)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(sig, stop.set)
    keeper: asyncio.Task[None] | None = None
    try:
        await stack.start()
        print(f"ksched is up (logs in {options.workdir}):")
        print(f"  NATS        {stack.nats.url}")
        print(f"  kubeconfig  {stack.kubeconfig}")
        print(f"  kubectl     kubectl --kubeconfig {stack.kubeconfig} get nodes")
        if "ui" in stack.procs:
            print(f"  web page    {stack.http_url('ui')}/   (nodes, queue, why a pod is pending)")
        for proc in stack.procs.values():
            where = f"http://127.0.0.1:{proc.http_port}/metrics" if proc.http_port else ""
            print(f"  {proc.name:<12} pid {proc.pid}  {where}")
        print("Ctrl-C stops everything; a service that exits is started again.", flush=True)
        keeper = asyncio.create_task(keep_services(stack, _say), name="up:keep-services")
        keeper.add_done_callback(lambda _: stop.set())  # it ends only by failing: show that, stop
        await stop.wait()
        return 0
    finally:
        if keeper is not None:
            await cancel_and_wait(keeper)
        print("stopping...", flush=True)
        await stack.stop()


def _say(line: str) -> None:
    print(line, flush=True)


def up_main(argv: Sequence[str]) -> int:
    p = GoFlagParser(
        prog="ksched up",
        description="Start NATS, kubesim (unless --kubeconfig) and every ksched service as separate "
        "processes on this machine, and keep them running until Ctrl-C (a service that exits is started "
        "again, as a kubelet would).",
    )
    stack_arguments(p)
    ns = p.parse_args(list(argv))
    workdir = Path(ns.workdir) if ns.workdir else Path(tempfile.mkdtemp(prefix="ksched-up-"))
    try:
        return asyncio.run(_up(options_from(ns, workdir)))
    except (RuntimeError, TimeoutError) as exc:
        print(f"ksched up: {exc}", file=sys.stderr)
        return 1


def demo_main(argv: Sequence[str]) -> int:
    from ksched.launcher.demo import main

    return main(argv)
