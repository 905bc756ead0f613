"""``ksched differential``: random cases played on the real kube-scheduler 1.36.2 and on ``ksched
simulate``, compared decision for decision (docs/differential.md)."""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from ksched.differential.code import code_digest, tree_roots
from ksched.differential.extender import BINDER, binder_ignorable
from ksched.differential.generate import CATEGORIES, generate_cases
from ksched.differential.model import Case
from ksched.differential.pipeline import Pipeline
from ksched.differential.run import Summary, refused_profiles, run_cases
from ksched.differential.upstream import Upstream, UpstreamError
from ksched.launcher.controlplane import ControlPlaneError


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="ksched differential",
        description="Generate random small clusters with pending pods, let the real kube-scheduler 1.36.2 "
        "decide them, replay the same objects through `ksched simulate`, and report every disagreement. "
        "The last line of the output is one JSON object.",
    )
    p.add_argument("--kube", help="folder laid out as ../shared/kube-1.36 (its cluster.sh); required")
    p.add_argument("--cases", type=int, default=20, help="how many cases (default 20)")
    p.add_argument("--seed", type=int, default=1, help="the seed of the generator (default 1)")
    p.add_argument(
        "--categories",
        default=",".join(CATEGORIES),
        help=f"comma-separated, taken in turn (default: all: {','.join(CATEGORIES)})",
    )
    p.add_argument(
        "--store",
        default="tests/differential/cases",
        help="folder for the regression cases of new disagreements ('' for none; default %(default)s)",
    )
    p.add_argument(
        "--shrink",
        type=int,
        default=30,
        metavar="PLAYS",
        help="plays spent shrinking a disagreement (0: none)",
    )
    p.add_argument(
        "--only",
        default="",
        metavar="INDEXES",
        help="play only these cases of the seed, e.g. 3,7-9 (a case's index is its name's last number)",
    )
    p.add_argument(
        "--budget", type=float, default=None, metavar="SECONDS", help="stop starting cases after this"
    )
    p.add_argument("--verbose", "-v", action="store_true", help="print every FailedScheduling message")
    p.add_argument("--workdir", help="folder for the clusters (default: a new temporary folder)")
    p.add_argument(
        "--pipeline",
        action="store_true",
        help="also play every case on a second cluster scheduled by ksched's whole pipeline "
        "(ksched kube-scheduler) and compare what the API server shows",
    )
    p.add_argument(
        "--pipeline-v",
        type=int,
        default=None,
        metavar="LEVEL",
        help="the drop-in's --v (its services' log level, as kube-scheduler's -v; default INFO): logs in "
        "WORKDIR/pipeline/pipeline and WORKDIR/gangs-pipeline/pipeline, to trace a case played again",
    )
    p.add_argument(
        "--code-digest",
        nargs="?",
        const="",
        metavar="CHECKOUT",
        help="print the digest of the scheduler's code this run would compare (of the repository checked "
        "out in CHECKOUT if given; the last JSON line's ksched_code) and exit: runs of one digest count "
        "together",
    )
    args = p.parse_args(list(argv))
    if args.code_digest is None and not args.kube:
        p.error("--kube is required")
    unknown = [c for c in args.categories.split(",") if c and c not in CATEGORIES]
    if unknown:
        p.error(f"unknown categories {unknown}; known: {', '.join(CATEGORIES)}")
    if args.cases < 0:
        p.error("--cases must be >= 0")
    return args


def indexes(text: str) -> set[int]:
    """``3,7-9`` -> {3, 7, 8, 9}."""
    out: set[int] = set()
    for part in text.split(","):
        first, _, last = part.strip().partition("-")
        if first:
            out.update(range(int(first), int(last or first) + 1))
    return out


def say(line: str) -> None:
    print(line, flush=True)


def main(argv: Sequence[str]) -> int:
    args = parse_args(argv)
    if args.code_digest is not None:
        try:
            print(code_digest(tree_roots(Path(args.code_digest)) if args.code_digest else None))
        except FileNotFoundError as exc:
            print(f"ksched differential: --code-digest: {exc}", file=sys.stderr)
            return 2
        return 0
    categories = tuple(c for c in args.categories.split(",") if c)
    cases = generate_cases(args.cases, args.seed, categories)
    if args.only:
        wanted = indexes(args.only)
        cases = [c for c in cases if c.index in wanted]
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="ksched-differential-"))
    store = Path(args.store) if args.store else None
    started = time.monotonic()
    deadline = started + args.budget if args.budget else None
    try:
        summary = asyncio.run(
            _run(
                Path(args.kube),
                workdir,
                cases,
                store,
                args.shrink,
                deadline,
                args.verbose,
                args.pipeline,
                binder_ignorable(args.seed),
                args.pipeline_v,
            )
        )
    except (ControlPlaneError, UpstreamError) as exc:
        print(f"ksched differential: {exc}", file=sys.stderr)
        return 2
    say(
        f"{summary.cases} case(s) compared, {summary.disagreements} disagreement(s), "
        f"{summary.errors} error(s) in {time.monotonic() - started:.0f} s (seed {args.seed})"
    )
    last = {
        **summary.to_json(),
        "seed": args.seed,
        "ignorable_binder": binder_ignorable(args.seed),
        "ksched_code": code_digest(),
    }
    print(json.dumps(last), flush=True)
    return 1 if summary.disagreements or summary.pipeline["disagreements"] else 0


async def _run(
    kube: Path,
    workdir: Path,
    cases: list[Case],
    store: Path | None,
    shrink: int,
    deadline: float | None,
    verbose: bool,
    pipeline: bool = False,
    ignorable_binder: bool = False,
    pipeline_v: int | None = None,
) -> Summary:
    summary = Summary()
    refused = refused_profiles(cases)
    for result in refused:
        say(f"{result.case.name}: not played: {result.error}")
        summary.add(result)
    cases = [c for c in cases if all(c is not r.case for r in refused)]
    profiles = [c.profile for c in cases if c.profile is not None]
    if ignorable_binder:
        say(f"the binder extender {BINDER} is ignorable in this run (an odd --seed)")
    upstream = Upstream(kube, workdir / "upstream", profiles, say=say, ignorable_binder=ignorable_binder)
    ksched = (
        Pipeline(
            kube,
            workdir / "pipeline",
            profiles,
            say=say,
            ignorable_binder=ignorable_binder,
            verbosity=pipeline_v,
        )
        if pipeline
        else None
    )
    gangs = gang_pipeline = None
    if any(c.gang for c in cases):
        gangs = Upstream(
            kube, workdir / "gangs", profiles, say=say, gangs=True, ignorable_binder=ignorable_binder
        )
        if pipeline:
            gang_pipeline = Pipeline(
                kube,
                workdir / "gangs-pipeline",
                profiles,
                say=say,
                gangs=True,
                ignorable_binder=ignorable_binder,
                verbosity=pipeline_v,
            )
    if all(c.gang for c in cases):  # only gangs: the default cluster and its pipeline have nothing to do
        upstream_needed: list[Upstream] = []
    else:
        upstream_needed = [upstream, *([ksched] if ksched is not None else [])]
        say(f"starting kube-apiserver, kube-controller-manager and kube-scheduler 1.36.2 in {workdir}")
        if ksched is not None:
            say("starting a second cluster for ksched kube-scheduler (--pipeline)")
    if gangs is not None:
        say(f"starting a cluster with the gang gates for the gangs cases in {workdir}")
    if gang_pipeline is not None:
        say("starting one more with the gang gates for ksched kube-scheduler (--pipeline)")
    clusters = [*upstream_needed, *(c for c in (gangs, gang_pipeline) if c is not None)]
    # SIGTERM (a job's timeout, kill): no new case; the one under way ends, the clusters are stopped
    # and what was compared is reported
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    try:
        await asyncio.gather(*(c.start() for c in clusters))
        return await run_cases(
            upstream,
            cases,
            say,
            store,
            shrink,
            deadline,
            summary,
            verbose,
            ksched,
            gangs,
            gang_pipeline,
            stop,
        )
    finally:
        await asyncio.gather(*(c.stop() for c in clusters))
