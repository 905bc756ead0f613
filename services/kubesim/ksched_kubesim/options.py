"""``ksched kubesim``'s flags and their mapping to its typed config, :class:`KubeSimConfig`."""

from __future__ import annotations

import argparse
import os
import secrets

from ksched.service.http import is_loopback
from ksched.service.options import add_feature_gates_argument

from .access import parse_grant
from .lifecycle import LifecycleSettings
from .sim import KubeSimConfig


def _listen(value: str) -> tuple[str, int]:
    host, sep, port = value.rpartition(":")
    if not sep or not port.isdigit():
        raise argparse.ArgumentTypeError(f"--listen must be HOST:PORT, got {value!r}")
    host = host.strip("[]") or "127.0.0.1"
    number = int(port)
    if number > 65535:
        raise argparse.ArgumentTypeError(f"--listen port must be 0-65535, got {number}")
    return host, number


def add_arguments(p: argparse.ArgumentParser) -> None:
    """kubesim's flags (it takes no NATS or service options: it is the API, not a service of it)."""
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
        "--no-workload-controllers",
        action="store_true",
        help="do not run the Deployment, ReplicaSet, StatefulSet and Job controllers nor the garbage "
        "collector (loaded workloads stay as given)",
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


def from_args(args: argparse.Namespace) -> KubeSimConfig:
    """The emulator's configuration; raises ValueError naming a bad flag."""
    if args.nodes < 0:
        raise ValueError("--nodes must be >= 0")
    host, port = args.listen
    if args.no_auth and not is_loopback(host):
        raise ValueError(
            f"--no-auth is for a loopback --listen only: on {host} anyone who reaches the "
            "port could read and change every object (use the token, the default)"
        )
    token = None if args.no_auth else (args.token or secrets.token_urlsafe(24))
    return KubeSimConfig(
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
            workload_controllers=not args.no_workload_controllers,
        ),
    )


Account = tuple[str, str]
Grant = tuple[str, str, tuple[str, ...]]


def access_from_args(args: argparse.Namespace) -> tuple[list[Account], list[Grant]]:
    """The service accounts to issue tokens for and the non-resource grants; ValueError naming a bad
    ``--service-account`` or ``--grant``."""
    return [_account(a) for a in args.service_account], [parse_grant(g) for g in args.grant]


def _account(text: str) -> Account:
    namespace, slash, name = text.partition("/")
    if not slash or not namespace or not name:
        raise ValueError(f"--service-account {text!r}: expected NAMESPACE/NAME")
    return namespace, name
