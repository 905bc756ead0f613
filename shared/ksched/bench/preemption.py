"""Preemption benchmark in upstream scheduler_perf's PreemptionAsync shape, driven in-process
through the default profile's framework (no queue, bus or API).

    python -m ksched.bench.preemption [--nodes 5000] [--mode preemptors|async]
        [--measure N] [--exact] [--profile]

Cluster: ``--nodes`` nodes of node-default shape (4 cpu, 32Gi, 110 pods), each holding 4
low-priority pods (pod-low-priority: 900m cpu, 500Mi; priority 0), 20,000 at 5,000 nodes.

- ``preemptors`` (default): 5,000 high-priority pods (pod-high-priority: priority 10, 3 cpu,
  500Mi), one after another. Each goes through ``ScheduleAlgorithm.schedule_pod`` (PreFilter and
  Filter over every node), fails, runs the PostFilter plugins (DynamicResources, DefaultPreemption:
  500 candidate dry runs at 5,000 nodes), and then the victims (3 per pod) leave the snapshot and the
  pod is placed on its nominated node, as ``ksched simulate`` does. The figure is preemptors/s.
- ``async``: upstream's measured workload: 5,000 default pods (100m, 500Mi) scheduled while a
  preemptor is injected every 200 ms of wall time; the figure is measured pods/s (upstream floor 570).

``--exact`` turns the plugin's shortcuts off (every dry run through the framework), for comparison.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import random
import time
from collections.abc import Sequence
from dataclasses import dataclass

from ksched.api.core import Pod
from ksched.config import default_config
from ksched.config.profile import build_frameworks
from ksched.framework.algorithm import ScheduleAlgorithm
from ksched.framework.cycle_state import CycleState
from ksched.framework.podinfo import PodInfo
from ksched.framework.results import FitError
from ksched.framework.runtime import Framework
from ksched.framework.snapshot import Snapshot, with_node_name
from ksched.framework.status import Code
from ksched.framework.testing import container, make_node, make_pod
from ksched.plugins.defaultpreemption.plugin import DefaultPreemption

UPSTREAM_FLOOR = 570
LOW_PER_NODE = 4
INJECT_INTERVAL = 0.2


def _pod(name: str, cpu: str, priority: int | None = None, node: str = "") -> Pod:
    spec = {"containers": [container("pause", requests={"cpu": cpu, "memory": "500Mi"})]}
    spec["containers"][0]["ports"] = [{"containerPort": 80}]
    return make_pod(
        name, "default", uid=name, node_name=node, priority=priority, containers=spec["containers"]
    )


def low_pod(i: int, node: str) -> Pod:
    return _pod(f"low-{i}", "900m", node=node)


def high_pod(i: int) -> Pod:
    return _pod(f"high-{i}", "3000m", priority=10)


def default_pod(i: int) -> Pod:
    return _pod(f"measure-{i}", "100m")


def build_cluster(nodes: int) -> Snapshot:
    node_objs = [
        make_node(f"node-{i}", allocatable={"cpu": "4", "memory": "32Gi", "pods": "110"})
        for i in range(nodes)
    ]
    low = [low_pod(i, f"node-{i % nodes}") for i in range(nodes * LOW_PER_NODE)]
    return Snapshot.build(node_objs, low)


@dataclass
class Outcome:
    placed: int = 0
    preempted: int = 0
    victims: int = 0
    failed: int = 0


class Driver:
    """One scheduling cycle per pod through the framework, with PostFilter and its effects applied."""

    def __init__(self, snapshot: Snapshot, *, exact: bool, seed: int = 1) -> None:
        config = default_config()
        self.fw: Framework = build_frameworks(config, snapshot)["default-scheduler"]
        self.snapshot = snapshot
        self.algorithm = ScheduleAlgorithm(config.percentage_of_nodes_to_score or 0, seed=seed)
        plugin = self.fw.plugin("DefaultPreemption")
        assert isinstance(plugin, DefaultPreemption), "DefaultPreemption is not in the default profile"
        plugin.shortcuts = not exact
        plugin._rng = random.Random(seed)
        self.outcome = Outcome()

    def schedule(self, pod: Pod) -> None:
        pi = PodInfo(pod)
        state = CycleState()
        try:
            result = self.algorithm.schedule_pod(self.fw, state, pi)
        except FitError as fit:
            post, status = self.fw.run_post_filter_plugins(state, pi, fit.diagnosis.node_to_status)
            if status.code != Code.SUCCESS or post is None or not post.nominated_node_name:
                self.outcome.failed += 1
                return
            for victim in post.victims:
                self.snapshot.remove_pod(victim.uid)
            self.snapshot.add_pod(with_node_name(pod, post.nominated_node_name))
            self.outcome.preempted += 1
            self.outcome.victims += len(post.victims)
            return
        self.snapshot.add_pod(with_node_name(pod, result.suggested_host))
        self.outcome.placed += 1


def run_preemptors(nodes: int, count: int, exact: bool) -> str:
    driver = Driver(build_cluster(nodes), exact=exact)
    pods = [high_pod(i) for i in range(count)]
    start, cpu = time.perf_counter(), time.process_time()
    for p in pods:
        driver.schedule(p)
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    o = driver.outcome
    if o.preempted != count or o.victims != 3 * count:
        raise AssertionError(f"expected {count} preemptions of 3 victims each, got {o}")
    path = " (exact path)" if exact else ""
    return (
        f"PreemptionAsync preemptors{path}: {count / wall:,.0f} preemptors/s wall, {count / cpu:,.0f}/s cpu "
        f"({count} preemptors, {o.victims} victims, {nodes} nodes, {wall:.2f}s)"
    )


def run_async(nodes: int, count: int, exact: bool) -> str:
    driver = Driver(build_cluster(nodes), exact=exact)
    measured = [default_pod(i) for i in range(count)]
    injected = 0
    start, cpu = time.perf_counter(), time.process_time()
    next_injection = start
    for p in measured:
        now = time.perf_counter()
        if now >= next_injection:
            driver.schedule(high_pod(injected))
            injected += 1
            next_injection = now + INJECT_INTERVAL
        driver.schedule(p)
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    o = driver.outcome
    if o.placed != count:
        raise AssertionError(f"expected {count} measured pods placed, got {o}")
    path = " (exact path)" if exact else ""
    return (
        f"PreemptionAsync/{nodes}Nodes{path}: {count / wall:,.0f} measured pods/s wall ({count} pods, "
        f"{injected} preemptors injected every {INJECT_INTERVAL * 1000:.0f} ms, {o.preempted} preempted "
        f"{o.victims} victims, {wall:.2f}s, cpu {cpu:.2f}s; upstream floor {UPSTREAM_FLOOR})"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="ksched-bench-preemption", description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--measure", type=int, default=None, help="pods measured (default: one per node)")
    parser.add_argument("--mode", choices=("preemptors", "async"), default="preemptors")
    parser.add_argument(
        "--exact", action="store_true", help="no shortcuts: every dry run through the framework"
    )
    parser.add_argument("--profile", action="store_true", help="print the top of a cProfile of the run")
    args = parser.parse_args(argv)
    count = args.measure or args.nodes
    runner = run_preemptors if args.mode == "preemptors" else run_async
    if args.profile:
        profiler = cProfile.Profile()
        line = profiler.runcall(runner, args.nodes, count, args.exact)
        print(line, flush=True)
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(30)
    else:
        print(runner(args.nodes, count, args.exact), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
