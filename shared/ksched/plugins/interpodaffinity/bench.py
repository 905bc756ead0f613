"""InterPodAffinity benchmarks in upstream scheduler_perf shapes, driving the plugin alone.

    python -m ksched.plugins.interpodaffinity.bench [--nodes 5000] [--only anti|affinity] [--per-node]

- SchedulingPodAntiAffinity (``5000Nodes_2000Pods``, floor 60 pods/s): 5,000 nodes, 1,000 existing
  pods in ``sched-0``, 2,000 measured pods in ``sched-1``; every pod is labelled ``color: green`` and
  has required anti-affinity to ``color: green`` on ``kubernetes.io/hostname`` in both namespaces.
- SchedulingPodAffinity (``5000Nodes_5000Pods``, floor 35 pods/s): 5,000 nodes all in
  ``topology.kubernetes.io/zone: zone1``, 5,000 existing + 5,000 measured pods with required affinity
  to ``color: blue`` on the zone.

Each measured pod runs PreFilter, Filter (vectorized over all nodes, or per node with
``--per-node``), PreScore, Score and NormalizeScore over the feasible nodes, takes the best node
and is assumed there with ``snapshot.add_pod``. Every 100th cycle also checks that the vectorized
and per-node paths agree on every node. Figures are wall-clock pods/s of those calls only (no
other plugin, no queue, no API).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ksched.api.core import Pod
from ksched.framework.cycle_state import CycleState
from ksched.framework.podinfo import PodInfo
from ksched.framework.snapshot import Snapshot
from ksched.framework.status import Code
from ksched.plugins.interpodaffinity.plugin import InterPodAffinity
from ksched.plugins.interpodaffinity.testing import (
    affinity,
    namespace,
    node,
    plugin_for,
    pod,
    snapshot_of,
    term,
)

HOSTNAME = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
REQUESTS = {"cpu": "100m", "memory": "500Mi"}


@dataclass
class Workload:
    name: str
    floor: float
    nodes: int
    init_pods: int
    measure_pods: int
    color: str
    topology_key: str
    anti: bool


WORKLOADS = {
    "anti": Workload(
        "SchedulingPodAntiAffinity/5000Nodes_2000Pods", 60, 5000, 1000, 2000, "green", HOSTNAME, True
    ),
    "affinity": Workload(
        "SchedulingPodAffinity/5000Nodes_5000Pods", 35, 5000, 5000, 5000, "blue", ZONE, False
    ),
}


@dataclass
class Result:
    workload: str
    nodes: int
    measured: int
    seconds: float
    cpu_seconds: float
    unschedulable: int
    floor: float

    @property
    def pods_per_second(self) -> float:
        return self.measured / self.seconds if self.seconds else float("inf")

    def line(self) -> str:
        rate = f"{self.pods_per_second:,.0f} pods/s wall, {self.measured / self.cpu_seconds:,.0f} pods/s cpu"
        detail = f"{self.measured} pods, {self.nodes} nodes, {self.seconds:.2f}s"
        detail += f", {self.unschedulable} unschedulable"
        return f"{self.workload}: {rate} ({detail}; upstream floor {self.floor:.0f} pods/s)"


def _template(w: Workload, name: str, ns: str) -> Pod:
    t = term(w.topology_key, match_labels={"color": w.color}, namespaces=["sched-1", "sched-0"])
    aff = affinity(anti=[t]) if w.anti else affinity(required=[t])
    return pod(name, ns, labels={"color": w.color}, aff=aff, requests=REQUESTS)


def build(w: Workload, nodes: int) -> Snapshot:
    """Nodes (node-default shape) and the init pods (scaled with the node count), placed as the
    scheduler would: one per node for anti-affinity, round-robin for zone affinity."""
    extra = {ZONE: "zone1"} if not w.anti else {}
    node_objs = [node(f"node-{i}", {HOSTNAME: f"node-{i}", **extra}) for i in range(nodes)]
    init = [_template(w, f"init-{i}", "sched-0") for i in range(w.init_pods * nodes // w.nodes)]
    snap = snapshot_of(node_objs, [], [namespace("sched-0"), namespace("sched-1")])
    for i, p in enumerate(init):
        snap.add_pod(p, f"node-{i % nodes}")
    return snap


def schedule_one(
    plugin: InterPodAffinity,
    snap: Snapshot,
    pi: PodInfo,
    rng: np.random.Generator,
    *,
    per_node: bool,
    check: bool,
) -> str | None:
    """One cycle of this plugin alone; returns the chosen node name (None when nothing fits)."""
    state = CycleState()
    rows = np.arange(len(snap.nodes), dtype=np.intp)
    _, st = plugin.pre_filter(state, pi, snap.nodes)
    if st is not None and st.code not in (Code.SUCCESS, Code.SKIP):
        return None
    if st is None:
        if per_node:
            mask = np.fromiter((plugin.filter(state, pi, ni) is None for ni in snap.nodes), dtype=np.bool_)
        else:
            mask = plugin.filter_batch(state, pi, snap, rows)
        if check:
            per = [plugin.filter(state, pi, ni) is None for ni in snap.nodes]
            if mask.tolist() != per:
                raise AssertionError(f"filter_batch disagrees with filter for {pi.key}")
        rows = rows[mask]
    if not len(rows):
        return None
    feasible = [snap.nodes[r] for r in rows.tolist()] if per_node or check else snap.nodes
    if plugin.pre_score(state, pi, feasible) is None:  # the plugin reads the whole snapshot, not this list
        if per_node:
            scores = np.fromiter((plugin.score(state, pi, ni) for ni in feasible), dtype=np.int64)
        else:
            scores = plugin.score_batch(state, pi, snap, rows)
        if check:
            per_scores = [plugin.score(state, pi, ni) for ni in feasible]
            if scores.tolist() != per_scores:
                raise AssertionError(f"score_batch disagrees with score for {pi.key}")
        plugin.normalize_score(state, pi, feasible, scores)
        rows = rows[scores == scores.max()]
    # ties broken at random, as upstream's selectHost (other plugins would spread pods anyway)
    return snap.nodes[int(rng.choice(rows))].name


def run(key: str, nodes: int | None = None, measure: int | None = None, per_node: bool = False) -> Result:
    w = WORKLOADS[key]
    n = nodes or w.nodes
    count = measure or w.measure_pods * n // w.nodes
    snap = build(w, n)
    plugin = plugin_for(snap)
    pending = [PodInfo(_template(w, f"measure-{i}", "sched-1")) for i in range(count)]
    unschedulable = 0
    rng = np.random.default_rng(1)
    start, start_cpu = time.perf_counter(), time.process_time()
    for i, pi in enumerate(pending):
        chosen = schedule_one(plugin, snap, pi, rng, per_node=per_node, check=i % 100 == 0)
        if chosen is None:
            unschedulable += 1
        else:
            snap.add_pod(pi, chosen)
    elapsed, cpu = time.perf_counter() - start, time.process_time() - start_cpu
    if w.anti:
        crowded = [ni.name for ni in snap.nodes if len(ni.pods) > 1]
        if crowded:
            raise AssertionError(f"anti-affinity violated on {crowded[:3]}")
    return Result(
        w.name + (" (per-node path)" if per_node else ""), n, count, elapsed, cpu, unschedulable, w.floor
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="ksched-bench-interpodaffinity", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--nodes", type=int, default=None, help="nodes (default: the workload's 5000)")
    parser.add_argument("--measure", type=int, default=None, help="measured pods (default: the workload's)")
    parser.add_argument("--only", choices=sorted(WORKLOADS), default=None)
    parser.add_argument(
        "--per-node", action="store_true", help="use filter/score per node instead of batches"
    )
    args = parser.parse_args(argv)
    for key in [args.only] if args.only else list(WORKLOADS):
        print(run(key, args.nodes, args.measure, args.per_node).line(), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
