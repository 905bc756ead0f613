"""``ksched simulate``: schedule a cluster file's pending pods offline and report every decision."""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
from collections.abc import Sequence

from ksched.api.files import load_objects
from ksched.api.kinds import ObjectError
from ksched.config import ConfigError, default_config, load_config
from ksched.config.profile import build_frameworks, missing_plugins
from ksched.extenders import ExtenderConfigError, HTTPExtenders
from ksched.framework.algorithm import ScheduleAlgorithm
from ksched.progress import Advance, progress_bar
from ksched.simulate.cluster import build_cluster
from ksched.simulate.output import to_json, to_table
from ksched.simulate.runner import PodOutcome, Simulation


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="ksched simulate",
        description="Schedule the pending pods of a cluster file (nodes, bound pods, pending pods, and the "
        "objects plugins read) one by one, as kube-scheduler 1.36 would, and report each decision.",
    )
    p.add_argument(
        "--cluster", required=True, help="YAML stream or `kind: List` file (as `kubectl get -o yaml`)"
    )
    p.add_argument("--config", help="KubeSchedulerConfiguration file (default: upstream's default profile)")
    p.add_argument("--output", choices=("json", "table"), default="table")
    p.add_argument("--seed", type=int, default=None, help="seed for tie-breaking between equal scores")
    return p.parse_args(list(argv))


def main(argv: Sequence[str]) -> int:
    args = parse_args(argv)
    logging.getLogger("ksched.config").setLevel(logging.ERROR)  # missing plugins are reported below
    try:
        config = load_config(args.config) if args.config else default_config()
    except ConfigError as exc:
        print(f"ksched simulate: {args.config}: invalid configuration:\n{exc}", file=sys.stderr)
        return 2
    skipped: list[str] = []
    try:
        objects = load_objects(args.cluster, skipped)
    except ObjectError as exc:
        print(f"ksched simulate: {exc}", file=sys.stderr)
        return 2
    for note in skipped:
        print(f"ksched simulate: ignored {note}", file=sys.stderr)
    for profile, plugins in missing_plugins(config).items():
        print(
            f"ksched simulate: profile {profile!r}: upstream plugins not implemented yet, left out: "
            + ", ".join(plugins),
            file=sys.stderr,
        )
    names = [p.scheduler_name or "" for p in config.profiles]
    try:
        cluster = build_cluster(objects, names)
    except ObjectError as exc:
        print(f"ksched simulate: {args.cluster}: {exc}", file=sys.stderr)
        return 2
    try:
        frameworks = build_frameworks(config, cluster.snapshot)
    except ConfigError as exc:
        print(f"ksched simulate: invalid configuration:\n{exc}", file=sys.stderr)
        return 2
    try:
        extenders = HTTPExtenders(config.extenders)
    except ExtenderConfigError as exc:
        print(f"ksched simulate: invalid configuration: {exc}", file=sys.stderr)
        return 2
    algorithm = ScheduleAlgorithm(config.percentage_of_nodes_to_score or 0, seed=args.seed)
    simulation = Simulation(cluster, frameworks, algorithm)
    with progress_bar(len(cluster.pending), "scheduling") as advance:
        if extenders:
            for fw in frameworks.values():
                fw.extenders = extenders.extenders
            outcomes = asyncio.run(_run_with_extenders(simulation, extenders, advance))
        else:
            outcomes = simulation.run(advance)
    try:
        if args.output == "json":
            sys.stdout.buffer.write(to_json(outcomes) + b"\n")
        else:
            sys.stdout.write(to_table(outcomes))
        sys.stdout.flush()
    except BrokenPipeError:  # the reader went away (e.g. `| head`): not an error of ours
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0


async def _run_with_extenders(
    simulation: Simulation, extenders: HTTPExtenders, advance: Advance
) -> list[PodOutcome]:
    """Run the simulation calling the configured extenders (their Filter, Prioritize and preempt
    verbs; nothing is bound, so bindVerb is not called)."""
    try:
        return await simulation.run_async(advance)
    finally:
        await extenders.close()
