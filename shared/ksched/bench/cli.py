"""``ksched bench``: performance figures (printed; not pass/fail).

ksched bench cycle --nodes N --pods M [--json]     in-process scheduling cycles per second
ksched bench dra --nodes N --devices D --init I --pods M [--json]
                                                    in-process pods with claims from a template
ksched bench e2e --nodes N --pods M [--schedulers K] [--binders B] [--shape S] [--json]
                                                    creation-to-bound through every service
ksched bench compare --kube PATH --nodes N --pods M --shape S[,S...] [--rate R] [--schedulers K]
                    [--binders B]                  the real kube-scheduler and ksched, each on a fresh
                                                    real control plane (docs/benchmarks.md)
ksched bench chaos --nodes N --pods M [--seed S] [--fault F ...] [--nats-servers 1|3] [--kube PATH]
                   [--json FILE]                    faults under load (--kube: on a real API server);
                                                    exit 1 on a lost, double-bound or overcommitted
                                                    pod, a broken hard constraint or a starved leader
ksched bench gangs --groups G --size S --nodes N   pod groups placed all or nothing (docs/gang.md)
ksched bench plot LOG... [--output FILE] [--table]  create-to-bound latency against the rate, both
                                                    schedulers, from bench compare's JSON lines
ksched bench client [--kubesim | --kube PATH | --kubeconfig FILE] [--requests N]
                                                    client CPU per API request of each HTTP client
                                                    (docs/client.md)
ksched bench hop [--rate R] [--count N] [--json]    one hop between two processes: a TCP round trip
                                                    and a NATS request/reply (docs/benchmarks.md)
ksched bench all                                    what ``make bench`` runs
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from ksched.bench.shapes import SHAPES


def _print(result: dict[str, object], as_json: bool) -> None:
    if as_json:
        print(json.dumps(result))
    else:
        print("  ".join(f"{k}={v}" for k, v in result.items()), flush=True)


def cycle_main(argv: Sequence[str]) -> int:
    p = argparse.ArgumentParser(
        prog="ksched bench cycle", description="In-process scheduling cycles per second."
    )
    p.add_argument("--nodes", type=int, default=5000)
    p.add_argument("--pods", type=int, default=2000)
    p.add_argument("--existing", type=int, default=None, help="pods already bound (default nodes/5)")
    p.add_argument("--json", action="store_true")
    ns = p.parse_args(list(argv))
    from ksched.bench.cycle import as_dict, run

    _print(as_dict(run(ns.nodes, ns.pods, ns.existing)), ns.json)
    return 0


def dra_main(argv: Sequence[str]) -> int:
    p = argparse.ArgumentParser(
        prog="ksched bench dra",
        description="In-process scheduling of pods with ResourceClaims from a template "
        "(scheduler_perf SchedulingWithResourceClaimTemplate).",
    )
    p.add_argument("--nodes", type=int, default=500)
    p.add_argument("--devices", type=int, default=10, help="devices per node")
    p.add_argument("--init", type=int, default=2500, help="pods placed before the measurement")
    p.add_argument("--pods", type=int, default=2500, help="pods measured")
    p.add_argument(
        "--prefill", action="store_true", help="place the init pods directly instead of scheduling them"
    )
    p.add_argument("--json", action="store_true")
    ns = p.parse_args(list(argv))
    from ksched.bench.dra import as_dict, run

    _print(as_dict(run(ns.nodes, ns.devices, ns.init, ns.pods, prefill=ns.prefill)), ns.json)
    return 0


def e2e_main(argv: Sequence[str]) -> int:
    p = argparse.ArgumentParser(
        prog="ksched bench e2e", description="Pods/s and latency from creation to bound."
    )
    p.add_argument("--nodes", type=int, default=5000)
    p.add_argument("--pods", type=int, default=10000)
    p.add_argument("--schedulers", type=int, default=1)
    p.add_argument("--binders", type=int, default=1)
    p.add_argument("--binder-workers", type=int, default=64)
    p.add_argument(
        "--shape",
        choices=SHAPES,
        default="plain",
        help="scheduler_perf pod template of SchedulingBasic, TopologySpreading or "
        "SchedulingPreferredPodAntiAffinity",
    )
    p.add_argument(
        "--rate",
        type=float,
        default=0.0,
        help="create pods at this many per second (default 0: as fast as 64 clients can)",
    )
    p.add_argument(
        "--no-tls",
        dest="tls",
        action="store_false",
        help="kubesim over plain HTTP (a real API server is HTTPS)",
    )
    p.add_argument("--json", action="store_true")
    ns = p.parse_args(list(argv))
    from ksched.bench.e2e import Settings, run

    settings = Settings(
        nodes=ns.nodes,
        pods=ns.pods,
        schedulers=ns.schedulers,
        binders=ns.binders,
        workers=ns.binder_workers,
        shape=ns.shape,
        tls=ns.tls,
        rate=ns.rate,
    )
    if ns.rate < 0:
        p.error(f"--rate must not be negative, got {ns.rate}")
    _print(run(settings), ns.json)
    return 0


def compare_main(argv: Sequence[str]) -> int:
    p = argparse.ArgumentParser(
        prog="ksched bench compare",
        description="The real kube-scheduler 1.36.2 and ksched on the same nodes and pods, each side on a "
        "fresh real control plane started by PATH/cluster.sh (ksched with the cluster's admin kubeconfig). "
        "Prints progress, then one JSON line per shape: pods_per_second, cpu_ms_per_pod per process, "
        "latency_ms from create to bound. Exit 1 when a side left pods unbound.",
    )
    p.add_argument("--kube", type=Path, required=True, help="a folder laid out as ../shared/kube-1.36")
    p.add_argument("--nodes", type=int, default=2000)
    p.add_argument("--pods", type=int, default=5000)
    p.add_argument(
        "--shape",
        default="plain",
        help=f"one of {', '.join(SHAPES)}, or several comma-separated (one after the other on the same "
        "clusters, the pods of the previous shape deleted first)",
    )
    p.add_argument(
        "--rate",
        type=float,
        default=0.0,
        help="pods created per second by one client (default 0: a burst from --clients clients)",
    )
    p.add_argument("--schedulers", type=int, default=1, help="ksched scheduler replicas")
    p.add_argument("--binders", type=int, default=1, help="ksched binder replicas")
    p.add_argument("--binder-workers", type=int, default=64)
    p.add_argument("--clients", type=int, default=2, help="pod-creating processes in a burst")
    p.add_argument("--connections", type=int, default=16, help="connections per pod-creating process")
    p.add_argument(
        "--timeout",
        type=float,
        default=0.0,
        help="seconds to wait for the bindings once every pod is created (default 60 + pods/20)",
    )
    p.add_argument("--workdir", type=Path, help="keep the clusters' and services' files here")
    p.add_argument(
        "--sides-at-once",
        action="store_true",
        help="run both sides at the same time: quicker, but they share the CPU and their figures are not "
        "comparable (for testing the bench itself)",
    )
    ns = p.parse_args(list(argv))
    chosen = tuple(part.strip() for part in ns.shape.split(",") if part.strip())
    if not chosen or any(shape not in SHAPES for shape in chosen):
        p.error(f"--shape: {ns.shape!r}: each one of {', '.join(SHAPES)}")
    if ns.rate < 0:
        p.error(f"--rate must not be negative, got {ns.rate}")
    if min(ns.nodes, ns.pods, ns.schedulers, ns.binders, ns.clients, ns.connections) < 1:
        p.error("--nodes, --pods, --schedulers, --binders, --clients and --connections must be at least 1")
    from ksched.bench.compare import Settings, main

    return main(
        Settings(
            kube=ns.kube.resolve(),
            nodes=ns.nodes,
            pods=ns.pods,
            shapes=chosen,
            rate=ns.rate,
            schedulers=ns.schedulers,
            binders=ns.binders,
            binder_workers=ns.binder_workers,
            clients=ns.clients,
            connections=ns.connections,
            timeout=ns.timeout,
            sides_at_once=ns.sides_at_once,
            workdir=ns.workdir.resolve() if ns.workdir else None,
        )
    )


def gangs_main(argv: Sequence[str]) -> int:
    p = argparse.ArgumentParser(
        prog="ksched bench gangs",
        description="Gangs end to end: pods/s and each group's creation-to-last-bound time.",
    )
    p.add_argument("--groups", type=int, default=100)
    p.add_argument("--size", type=int, default=10, help="pods per group (its minCount)")
    p.add_argument("--nodes", type=int, default=1000)
    p.add_argument("--schedulers", type=int, default=2)
    p.add_argument("--binders", type=int, default=2)
    p.add_argument("--json", action="store_true")
    ns = p.parse_args(list(argv))
    from ksched.bench.gangs import run

    _print(run(ns.groups, ns.size, ns.nodes, ns.schedulers, ns.binders), ns.json)
    return 0


def plot_main(argv: Sequence[str]) -> int:
    p = argparse.ArgumentParser(
        prog="ksched bench plot",
        description="Draw create-to-bound latency (p50, p99) against the pod rate for kube-scheduler and "
        "ksched, one panel per node count, from the JSON lines `ksched bench compare --rate R` printed "
        "(other lines are skipped; burst reports are listed by --table, not drawn). Needs matplotlib "
        "(pip install 'ksched[plot]').",
    )
    p.add_argument("logs", nargs="+", type=Path, metavar="LOG", help="a file holding bench compare's output")
    p.add_argument(
        "--output", "-o", type=Path, default=Path("latency-vs-rate.png"), help="image file (.png, .svg ...)"
    )
    p.add_argument("--title", help="the figure's title")
    p.add_argument(
        "--table", action="store_true", help="also print every report as a Markdown table (bursts included)"
    )
    ns = p.parse_args(list(argv))
    from ksched.bench.plot import plot, read_reports, table

    reports = read_reports(ns.logs)
    if not reports:
        p.error("no bench compare report (a JSON line with kube_scheduler and ksched) in the files given")
    try:
        sizes = plot(reports, ns.output, ns.title)
    except ModuleNotFoundError as exc:
        print(f"ksched bench plot needs matplotlib ({exc}): pip install 'ksched[plot]'", file=sys.stderr)
        return 2
    except ValueError as exc:
        p.error(str(exc))
    print(f"wrote {ns.output}: {len(reports)} reports, panels for {', '.join(f'{n:,}' for n in sizes)} nodes")
    if ns.table:
        print(table(reports))
    return 0


def _run_module(title: str, args: list[str]) -> None:
    print(f"\n== {title}", flush=True)
    subprocess.run([sys.executable, "-m", *args], check=False)


def all_main(argv: Sequence[str]) -> int:
    """Every benchmark at the sizes the issues ask for (takes several minutes)."""
    print("== scheduling cycle, default profile, in-process (SchedulingBasic shape)", flush=True)
    for nodes in (500, 5000, 15000):
        cycle_main(["--nodes", str(nodes), "--pods", "2000"])
    _run_module(
        "PodTopologySpread (TopologySpreading / PreferredTopologySpreading shapes)",
        ["ksched.plugins.podtopologyspread.bench", "--nodes", "5000"],
    )
    _run_module(
        "InterPodAffinity (SchedulingPodAntiAffinity shape)",
        ["ksched.plugins.interpodaffinity.bench", "--nodes", "5000"],
    )
    _run_module(
        "InterPodAffinity (SchedulingPodAffinity shape)",
        ["ksched.plugins.interpodaffinity.bench", "--nodes", "5000", "--shape", "affinity"],
    )
    _run_module("DefaultPreemption (PreemptionAsync shape)", ["ksched.bench.preemption", "--mode", "async"])
    print("\n== DynamicResources, claims from a template (SchedulingWithResourceClaimTemplate)", flush=True)
    dra_main([])  # upstream's 5000pods_500nodes: 500 nodes x 10 devices, 2,500 + 2,500 pods
    dra_main(["--nodes", "1000", "--devices", "8", "--init", "4000", "--pods", "4000"])
    _run_module("kubesim list/watch/bind", ["ksched_kubesim.bench"])
    print(
        "\n== end to end through every service, scheduler_perf shapes (2,000 nodes x 6,000 pods)", flush=True
    )
    for shape in SHAPES:
        e2e_main(["--nodes", "2000", "--pods", "6000", "--binders", "2", "--shape", shape])
    print("\n== gangs end to end (100 groups of 10 on 1,000 nodes, 2 schedulers, 2 binders)", flush=True)
    gangs_main([])
    return 0


def chaos_main(argv: Sequence[str]) -> int:
    from ksched.bench.chaos import FAULTS, ChaosOptions, chosen_faults, run

    p = argparse.ArgumentParser(
        prog="ksched bench chaos",
        description="Inject every fault (kill -9 of each service, leaders and standbys; nats-server "
        "restarted and paused, and with a cluster one server lost with its disk; a scheduler paused "
        "past its lease; kubesim restarted) in a seeded order while pods are created, then count "
        "bound, double-bound, overcommitted and lost pods.",
    )
    p.add_argument("--nodes", type=int, default=5000)
    p.add_argument("--pods", type=int, default=20000)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--fault", action="append", choices=sorted(FAULTS), help="only these (repeatable)")
    p.add_argument(
        "--nats-servers",
        type=int,
        choices=(1, 3),
        default=1,
        help="one nats-server, or a 3-server JetStream cluster as deploy/ runs (adds lose-nats-server)",
    )
    p.add_argument(
        "--kube",
        type=Path,
        help="a folder laid out as ../shared/kube-1.36: a real etcd and kube-apiserver 1.36.2 instead of "
        "kubesim (adds restart-apiserver, pause-apiserver, compact-etcd, overload-apiserver)",
    )
    p.add_argument(
        "--spread-tenths",
        type=int,
        choices=range(1, 6),
        default=1,
        help="tenths of the pods with a hard topology spread (another tenth has a required anti-affinity): "
        "more conflicts between the scheduler replicas for the assume check",
    )
    p.add_argument("--json", metavar="FILE", help="also write the report as JSON")
    args = p.parse_args(list(argv))
    options = ChaosOptions(
        nodes=args.nodes,
        pods=args.pods,
        seed=args.seed,
        faults=args.fault or (),
        nats_servers=args.nats_servers,
        kube=args.kube,
        spread_tenths=args.spread_tenths,
    )
    try:
        chosen_faults(options)
    except ValueError as exc:  # a fault that needs a cluster
        p.error(str(exc))
    report = asyncio.run(run(options))
    print(report.table(), end="")
    if args.json:
        Path(args.json).write_bytes(report.to_json() + b"\n")
    return 0 if report.ok else 1


def client_main(argv: Sequence[str]) -> int:
    from ksched.bench.client import main

    return main(argv)


def hop_main(argv: Sequence[str]) -> int:
    from ksched.bench.hop import main

    return main(argv)


COMMANDS = {
    "client": client_main,
    "hop": hop_main,
    "cycle": cycle_main,
    "dra": dra_main,
    "e2e": e2e_main,
    "compare": compare_main,
    "chaos": chaos_main,
    "gangs": gangs_main,
    "plot": plot_main,
    "all": all_main,
}


def main(argv: Sequence[str]) -> int:
    args = list(argv)
    if not args or args[0] not in COMMANDS:
        print(__doc__)
        return 0 if not args or args[0] in ("-h", "--help") else 2
    return COMMANDS[args[0]](args[1:])
