"""``ksched simulate``: schedule the pending pods of a cluster file or a live cluster offline and
report every decision, or the pods two configurations decide differently."""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any

from ksched.api.base import K8s
from ksched.api.collections import pod_group_collections
from ksched.api.core import Pod
from ksched.api.files import decode_objects, load_objects
from ksched.api.kinds import ObjectError
from ksched.config import ConfigError, default_config, load_config
from ksched.config.profile import build_frameworks, missing_plugins
from ksched.config.types import KubeSchedulerConfiguration
from ksched.extenders import ExtenderConfigError, HTTPExtenders
from ksched.features import GANG_SCHEDULING, GENERIC_WORKLOAD, FeatureGates
from ksched.framework.algorithm import ScheduleAlgorithm
from ksched.progress import Advance, progress_bar
from ksched.service.options import add_feature_gates_argument
from ksched.simulate import compare
from ksched.simulate.cluster import build_cluster
from ksched.simulate.live import ClusterReadError, dump_cluster, list_cluster
from ksched.simulate.manifests import pod_manifests, raw_objects
from ksched.simulate.output import to_json, to_table
from ksched.simulate.runner import PodOutcome, Simulation
from ksched.simulate.simulator_output import to_simulator_yaml


class Refused(Exception):
    """The run cannot go on; the message is printed after ``ksched simulate:`` and the exit code is 2."""


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="ksched simulate",
        description="Schedule the pending pods of a cluster (nodes, bound pods, pending pods, and the "
        "objects plugins read) one by one, as kube-scheduler 1.36 would, and report each decision.",
    )
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument("--cluster", help="YAML stream or `kind: List` file (as `kubectl get -o yaml`)")
    source.add_argument(
        "--from-cluster",
        action="store_true",
        help="list a live cluster read-only (every kind the scheduler reads) instead of a file",
    )
    p.add_argument(
        "--kubeconfig",
        help="with --from-cluster: the cluster's kubeconfig (default: $KUBECONFIG, ~/.kube/config, "
        "or the in-cluster service account)",
    )
    p.add_argument(
        "--dump-cluster",
        metavar="FILE",
        help="with --from-cluster: write the listed objects as a cluster file and exit",
    )
    p.add_argument(
        "--pod",
        action="append",
        default=[],
        metavar="FILE",
        help="schedule the pods of FILE instead of the cluster's pending pods (repeatable)",
    )
    configs = p.add_mutually_exclusive_group()
    configs.add_argument(
        "--config", help="KubeSchedulerConfiguration file (default: upstream's default profile)"
    )
    configs.add_argument(
        "--compare-config",
        nargs=2,
        metavar=("OLD", "NEW"),
        help="run under both configurations and print the pods whose decision differs",
    )
    p.add_argument(
        "--output",
        choices=("json", "table", "simulator"),
        default="table",
        help="table (default), json, or simulator: each pending pod with kube-scheduler-simulator's "
        "result annotations, a YAML stream (docs/simulate.md)",
    )
    p.add_argument("--seed", type=int, default=None, help="seed for tie-breaking between equal scores")
    add_feature_gates_argument(p)
    args = p.parse_args(list(argv))
    if args.dump_cluster and not args.from_cluster:
        p.error("--dump-cluster needs --from-cluster")
    if args.kubeconfig and not args.from_cluster:
        p.error("--kubeconfig needs --from-cluster")
    if args.output == "simulator" and args.compare_config:
        p.error("--output simulator shows one run: it cannot be used with --compare-config")
    return args


def main(argv: Sequence[str]) -> int:
    args = parse_args(argv)
    logging.getLogger("ksched.config").setLevel(logging.ERROR)  # missing plugins are reported below
    try:
        return _run(args)
    except Refused as exc:
        print(f"ksched simulate: {exc}", file=sys.stderr)
        return 2


def _run(args: argparse.Namespace) -> int:
    configs = (
        [(p, _config(p, args.feature_gates)) for p in args.compare_config]
        if args.compare_config
        else [(args.config, _config(args.config, args.feature_gates))]
    )
    raw: list[dict[str, Any]] = []
    if args.from_cluster:
        raw = _list_live(args.kubeconfig, args.feature_gates)
        if args.dump_cluster:
            dump_cluster(raw, args.dump_cluster)
            print(f"ksched simulate: wrote {len(raw)} objects to {args.dump_cluster}", file=sys.stderr)
            return 0
        objects = _decode_live(raw)
    else:
        objects = _load(args.cluster)
    if args.pod:
        objects = [o for o in objects if not _pending(o)] + _pods(args.pod)
    source = args.cluster or "--from-cluster"
    record = args.output == "simulator"
    outcomes = [
        _simulate(objects, source, path, config, args.seed, args.feature_gates, record)
        for path, config in configs
    ]
    if args.compare_config:
        (old_name, _), (new_name, _) = configs
        diffs = compare.differences(outcomes[0], outcomes[1])
        pods = len({o.pod for run in outcomes for o in run})
        if args.output == "json":
            _write(lambda: sys.stdout.buffer.write(compare.to_json(diffs, old_name, new_name, pods) + b"\n"))
        else:
            _write(lambda: sys.stdout.write(compare.to_table(diffs, old_name, new_name, pods)))
    elif args.output == "json":
        _write(lambda: sys.stdout.buffer.write(to_json(outcomes[0]) + b"\n"))
    elif args.output == "simulator":
        manifests = pod_manifests(raw or raw_objects(args.cluster), args.pod)
        _write(lambda: sys.stdout.write(to_simulator_yaml(outcomes[0], manifests)))
    else:
        _write(lambda: sys.stdout.write(to_table(outcomes[0])))
    return 0


def _config(path: str | None, gates: FeatureGates) -> KubeSchedulerConfiguration:
    try:
        config = load_config(path, gates=gates) if path else default_config(gates=gates)
    except ConfigError as exc:
        raise Refused(f"{path}: invalid configuration:\n{exc}") from None
    for profile, plugins in missing_plugins(config).items():
        print(
            f"ksched simulate: profile {profile!r}: upstream plugins not implemented yet, left out: "
            + ", ".join(plugins),
            file=sys.stderr,
        )
    return config


def _load(path: str) -> list[K8s]:
    skipped: list[str] = []
    try:
        objects = load_objects(path, skipped)
    except ObjectError as exc:
        raise Refused(str(exc)) from None
    for note in skipped:
        print(f"ksched simulate: ignored {note}", file=sys.stderr)
    return objects


def _list_live(kubeconfig: str | None, gates: FeatureGates) -> list[dict[str, Any]]:
    path = kubeconfig or _default_kubeconfig()
    try:
        extra = pod_group_collections(gates.enabled(GENERIC_WORKLOAD), gates.enabled(GANG_SCHEDULING))
        return asyncio.run(list_cluster(path, extra))
    except ClusterReadError as exc:
        raise Refused(f"--from-cluster: {exc}") from None


def _default_kubeconfig() -> str | None:
    """kubectl's choice: the first file of $KUBECONFIG, else ~/.kube/config if it exists, else
    None (the in-cluster service account)."""
    env = os.environ.get("KUBECONFIG", "")
    first = next((p for p in env.split(os.pathsep) if p), "")
    if first:
        return first
    home = os.path.expanduser("~/.kube/config")
    return home if os.path.exists(home) else None


def _decode_live(raw: list[dict[str, Any]]) -> list[K8s]:
    located = [(f"cluster {_key(obj)}", obj) for obj in raw]
    try:
        return decode_objects(located)
    except ObjectError as exc:
        raise Refused(str(exc)) from None


def _key(obj: dict[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    ns = meta.get("namespace")
    return f"{obj.get('kind')} {ns + '/' if ns else ''}{meta.get('name', '')}"


def _pending(obj: K8s) -> bool:
    return isinstance(obj, Pod) and not obj.spec.node_name


def _pods(paths: Sequence[str]) -> list[K8s]:
    """The pods of the ``--pod`` files, in order; anything else in them, or a pod already placed,
    is refused naming it."""
    pods: list[K8s] = []
    for path in paths:
        for obj in _load(path):
            name = f"{type(obj).__name__} {getattr(getattr(obj, 'metadata', None), 'name', '')}"
            if not isinstance(obj, Pod):
                raise Refused(f"--pod {path}: {name}: only Pods can be scheduled")
            if obj.spec.node_name:
                raise Refused(f"--pod {path}: {name}: spec.nodeName is set: the pod is placed already")
            if not obj.metadata.namespace:
                obj.metadata.namespace = "default"  # as kubectl applies it
            pods.append(obj)
    return pods


def decide(
    objects: list[K8s],
    config: KubeSchedulerConfiguration,
    seed: int | None,
    gates: FeatureGates | None = None,
) -> list[PodOutcome]:
    """What ``ksched simulate --cluster FILE --config CONFIG --seed SEED`` decides for the objects of
    FILE under CONFIG (``ksched differential`` replays its cases with it); :class:`Refused` names an
    object or a configuration the run cannot take."""
    return _simulate(objects, "cluster", None, config, seed, gates or FeatureGates())


def _simulate(
    objects: list[K8s],
    source: str,
    path: str | None,
    config: KubeSchedulerConfiguration,
    seed: int | None,
    gates: FeatureGates,
    record: bool = False,
) -> list[PodOutcome]:
    """One run of ``objects`` (read from ``source``) under ``config`` (from ``path``) on a fresh
    snapshot."""
    names = [p.scheduler_name or "" for p in config.profiles]
    try:
        cluster = build_cluster(objects, names, coscheduling=gates.enabled(GANG_SCHEDULING))
    except ObjectError as exc:
        raise Refused(f"{source}: {exc}") from None
    named = f"{path}: " if path else ""
    try:
        frameworks = build_frameworks(config, cluster.snapshot, gates=gates)
    except ConfigError as exc:
        raise Refused(f"{named}invalid configuration:\n{exc}") from None
    try:
        extenders = HTTPExtenders(config.extenders)
    except ExtenderConfigError as exc:
        raise Refused(f"{named}invalid configuration: {exc}") from None
    algorithm = ScheduleAlgorithm(config.percentage_of_nodes_to_score or 0, seed=seed)
    simulation = Simulation(
        cluster, frameworks, algorithm, group_scheduling=gates.enabled(GENERIC_WORKLOAD), record=record
    )
    with progress_bar(len(cluster.pending), "scheduling") as advance:
        if extenders:
            for fw in frameworks.values():
                fw.extenders = extenders.extenders
            return asyncio.run(_run_with_extenders(simulation, extenders, advance))
        return simulation.run(advance)


def _write(write: Callable[[], object]) -> None:
    try:
        write()
        sys.stdout.flush()
    except BrokenPipeError:  # the reader went away (e.g. `| head`): not an error of ours
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


async def _run_with_extenders(
    simulation: Simulation, extenders: HTTPExtenders, advance: Advance
) -> list[PodOutcome]:
    """Run the simulation calling the configured extenders (their Filter, Prioritize and preempt
    verbs; nothing is bound, so bindVerb is not called)."""
    try:
        return await simulation.run_async(advance)
    finally:
        await extenders.close()
