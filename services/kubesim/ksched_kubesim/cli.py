"""``ksched kubesim``: run the Kubernetes API emulator until interrupted."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import secrets
import signal
import sys
from collections.abc import Sequence

from ksched.service.http import is_loopback
from ksched.service.logs import setup_logging
from ksched.service.options import add_feature_gates_argument
from ksched.service.tasks import TaskGroup

from .access import parse_grant
from .lifecycle import LifecycleSettings
from .scenario import ScenarioError
from .sim import KubeSim, KubeSimConfig
from .tls import TLSError


def _listen(value: str) -> tuple[str, int]:
    host, sep, port = value.rpartition(":")
    if not sep or not port.isdigit():
        raise argparse.ArgumentTypeError(f"--listen must be HOST:PORT, got {value!r}")
    host = host.strip("[]") or "127.0.0.1"
    number = int(port)
    if number > 65535:
        raise argparse.ArgumentTypeError(f"--listen port must be 0-65535, got {number}")
    return host, number


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="ksched kubesim",
        description="Run kubesim, an emulated Kubernetes API server (KWOK-style: nodes without kubelets).",
    )
    p.add_argument(
        "--listen",
        type=_listen,
        default=("127.0.0.1", 0),
        metavar="HOST:PORT",
        help="address to serve on (default 127.0.0.1:0, port 0 picks a free port)",
    )
    p.add_argument("--write-kubeconfig", metavar="PATH", help="write a kubeconfig for clients to PATH")
    p.add_argument(
        "--log-format",
        choices=("text", "json"),
        default=os.environ.get("KSCHED_LOG_FORMAT", "text"),
        help="text for people, json lines for tools (env KSCHED_LOG_FORMAT; default text)",
    )
    p.add_argument(
        "--log-level",
        default=os.environ.get("KSCHED_LOG_LEVEL", "INFO"),
        help="log level (env KSCHED_LOG_LEVEL; default INFO)",
    )
    auth = p.add_mutually_exclusive_group()
    auth.add_argument("--token", help="bearer token clients must present (default: a random one)")
    auth.add_argument(
        "--no-auth",
        action="store_true",
        help="accept every request without credentials (loopback --listen only)",
    )
    p.add_argument(
        "--service-account",
        action="append",
        default=[],
        metavar="NAMESPACE/NAME",
        help="issue a bearer token of this service account and print it (repeatable; for TokenReview)",
    )
    p.add_argument(
        "--grant",
        action="append",
        default=[],
        metavar="KIND:SUBJECT=PATHS",
        help="allow GET of non-resource paths, as a ClusterRoleBinding does: "
        "serviceaccount:NS/NAME=/metrics,/configz (or user:NAME=..., group:NAME=...; repeatable)",
    )
    p.add_argument(
        "--tls",
        action="store_true",
        help="serve HTTPS with a self-signed certificate (needed for kubectl to send the token)",
    )
    p.add_argument(
        "--nodes", type=int, default=0, metavar="N", help="create N synthetic nodes (node-0000...)"
    )
    p.add_argument(
        "--scenario",
        action="append",
        default=[],
        metavar="FILE",
        help="load objects from a YAML stream or kind: List file (repeatable)",
    )
    p.add_argument(
        "--no-lifecycle",
        action="store_true",
        help="disable the KWOK-style controllers (pods stay Pending, deletions stay pending)",
    )
    p.add_argument(
        "--pod-start-delay",
        type=float,
        default=1.0,
        metavar="S",
        help="seconds from binding until a pod is Running (default 1)",
    )
    p.add_argument(
        "--time-scale",
        type=float,
        default=1.0,
        metavar="F",
        help="multiplier for deletion grace periods (default 1; 0.01 makes 30 s take 0.3 s)",
    )
    p.add_argument(
        "--no-pv-controller",
        action="store_true",
        help="do not bind PVs and PVCs nor provision volumes (PV controller and external provisioner)",
    )
    p.add_argument(
        "--pv-bind-delay",
        type=float,
        default=0.1,
        metavar="S",
        help="seconds from a PV/PVC/StorageClass change until the PV controller reacts (default 0.1)",
    )
    p.add_argument(
        "--watch-history",
        type=int,
        default=10_000,
        metavar="N",
        help="changes kept per resource for watch replay; older resourceVersions get 410 Gone",
    )
    p.add_argument(
        "--bookmark-interval",
        type=float,
        default=60.0,
        metavar="S",
        help="seconds between watch bookmarks (default 60)",
    )
    p.add_argument(
        "--restart-downtime",
        type=float,
        default=1.0,
        metavar="S",
        help="on SIGHUP kubesim restarts as an API server would (connections and watches end, watch "
        "history is dropped, objects stay): seconds it refuses connections meanwhile (default 1)",
    )
    add_feature_gates_argument(p)
    return p


async def _serve(
    config: KubeSimConfig,
    kubeconfig: str | None,
    restart_downtime: float,
    accounts: Sequence[tuple[str, str]] = (),
    grants: Sequence[tuple[str, str, tuple[str, ...]]] = (),
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
    except TLSError as exc:
        print(f"ksched kubesim: {exc}", file=sys.stderr)
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
    if args.nodes < 0:
        print("ksched kubesim: --nodes must be >= 0", file=sys.stderr)
        return 2
    host, port = args.listen
    if args.no_auth and not is_loopback(host):
        print(
            f"ksched kubesim: --no-auth is for a loopback --listen only: on {host} anyone who reaches the "
            "port could read and change every object (use the token, the default)",
            file=sys.stderr,
        )
        return 2
    token = None if args.no_auth else (args.token or secrets.token_urlsafe(24))
    try:
        grants = [parse_grant(g) for g in args.grant]
        accounts = [_account(a) for a in args.service_account]
    except ValueError as exc:
        print(f"ksched kubesim: {exc}", file=sys.stderr)
        return 2
    config = KubeSimConfig(
        host=host,
        port=port,
        token=token,
        nodes=args.nodes,
        scenarios=list(args.scenario),
        history_size=args.watch_history,
        bookmark_interval=args.bookmark_interval,
        tls=args.tls,
        feature_gates=args.feature_gates,
        lifecycle=LifecycleSettings(
            enabled=not args.no_lifecycle,
            pod_start_delay=args.pod_start_delay,
            time_scale=args.time_scale,
            pv_controller=not args.no_pv_controller,
            pv_bind_delay=args.pv_bind_delay,
        ),
    )
    try:
        import uvloop

        runner = asyncio.Runner(loop_factory=uvloop.new_event_loop)
    except ImportError:  # pragma: no cover - uvloop is a dependency on Linux
        runner = asyncio.Runner()
    with runner:
        return runner.run(_serve(config, args.write_kubeconfig, args.restart_downtime, accounts, grants))


def _account(text: str) -> tuple[str, str]:
    namespace, slash, name = text.partition("/")
    if not slash or not namespace or not name:
        raise ValueError(f"--service-account {text!r}: expected NAMESPACE/NAME")
    return namespace, name
