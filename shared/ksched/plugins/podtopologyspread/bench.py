"""In-process throughput of PodTopologySpread for upstream's scheduler_perf shapes.

``TopologySpreading``: nodes in 3 zones (``moon-1..3``), ``existing`` pods without labels, then
``measured`` pods labelled ``color: blue`` with a ``DoNotSchedule`` zone constraint (maxSkew 5).
``PreferredTopologySpreading``: the same with ``ScheduleAnyway``.

Each measured pod runs what the framework runs for this plugin: PreFilter over all nodes, the
batch Filter over all rows, PreScore over the first feasible nodes the adaptive
percentageOfNodesToScore keeps (10% of 5,000 = 500), the batch Score, NormalizeScore; it is then
placed on the best node with ``snapshot.add_pod``. Other plugins are not run.

    python -m ksched.plugins.podtopologyspread.bench --nodes 5000
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass

import msgspec
import numpy as np

from ksched.api.core import Node, Pod
from ksched.framework.cycle_state import CycleState
from ksched.framework.podinfo import PodInfo
from ksched.framework.snapshot import Snapshot
from ksched.plugins.podtopologyspread.plugin import PodTopologySpread
from ksched.plugins.podtopologyspread.testing import make_plugin

ZONE = "topology.kubernetes.io/zone"
ZONES = ("moon-1", "moon-2", "moon-3")
SHAPES = {"TopologySpreading": "DoNotSchedule", "PreferredTopologySpreading": "ScheduleAnyway"}
UPSTREAM_FLOOR = {"TopologySpreading": 460, "PreferredTopologySpreading": 340}


def num_feasible_nodes_to_find(num_nodes: int, percentage: int = 0) -> int:
    """Upstream ``numFeasibleNodesToFind`` with the adaptive default percentage."""
    if num_nodes < 100:
        return num_nodes
    if percentage <= 0:
        percentage = max(5, 50 - num_nodes // 125)
    return max(100, num_nodes * percentage // 100)


def make_nodes(count: int) -> list[Node]:
    return [
        msgspec.convert(
            {
                "metadata": {
                    "name": f"node-{i}",
                    "labels": {"kubernetes.io/hostname": f"node-{i}", ZONE: ZONES[i % len(ZONES)]},
                },
                "status": {"allocatable": {"cpu": "4", "memory": "32Gi", "pods": "110"}},
            },
            Node,
        )
        for i in range(count)
    ]


def _pod(name: str, node: str = "", when: str | None = None) -> Pod:
    spec: dict[str, object] = {
        "containers": [{"name": "pause", "resources": {"requests": {"cpu": "100m", "memory": "500Mi"}}}]
    }
    meta: dict[str, object] = {"name": name, "namespace": "default", "uid": name}
    if node:
        spec["nodeName"] = node
    if when is not None:
        meta["labels"] = {"color": "blue"}
        spec["topologySpreadConstraints"] = [
            {"maxSkew": 5, "topologyKey": ZONE, "whenUnsatisfiable": when,
             "labelSelector": {"matchLabels": {"color": "blue"}}}
        ]  # fmt: skip
    return msgspec.convert({"metadata": meta, "spec": spec}, Pod)


@dataclass
class Result:
    shape: str
    nodes: int
    pods: int
    seconds: float
    per_zone: dict[str, int]

    @property
    def pods_per_second(self) -> float:
        return self.pods / self.seconds


def _cycle(plugin: PodTopologySpread, snap: Snapshot, pi: PodInfo, start: int) -> int:
    """One pod through PreFilter/Filter/PreScore/Score/NormalizeScore; returns the chosen row."""
    state = CycleState()
    n = len(snap.nodes)
    all_rows = np.arange(n, dtype=np.intp)
    _, status = plugin.pre_filter(state, pi, snap.nodes)
    rotated = np.roll(all_rows, -start)
    feasible = rotated[plugin.filter_batch(state, pi, snap, rotated)] if status is None else rotated
    feasible = feasible[: num_feasible_nodes_to_find(n)]
    if len(feasible) == 0:
        raise RuntimeError(f"pod {pi.key} does not fit anywhere")
    if len(feasible) == 1:
        return int(feasible[0])
    filtered = [snap.nodes[r] for r in feasible.tolist()]
    if plugin.pre_score(state, pi, filtered) is not None:
        return int(feasible[0])
    scores = plugin.score_batch(state, pi, snap, feasible)
    plugin.normalize_score(state, pi, filtered, scores)
    return int(feasible[int(np.argmax(scores))])


def run(shape: str, nodes: int, existing: int, measured: int) -> Result:
    """Build the cluster, then time ``measured`` scheduling cycles of the shape's pods."""
    snap = Snapshot.build(make_nodes(nodes), [])
    for i in range(existing):
        snap.add_pod(_pod(f"pod-{i}", node=f"node-{i % nodes}"))
    plugin = make_plugin(snap)
    pods = [PodInfo(_pod(f"spreading-pod-{i}", when=SHAPES[shape])) for i in range(measured)]
    start = 0
    began = time.perf_counter()
    for pi in pods:
        row = _cycle(plugin, snap, pi, start)
        snap.add_pod(pi, snap.nodes[row].name)
        start = (start + num_feasible_nodes_to_find(nodes)) % nodes
    seconds = time.perf_counter() - began
    per_zone = {z: 0 for z in ZONES}
    for ni in snap.nodes:
        per_zone[ni.labels[ZONE]] += sum(1 for p in ni.pods if p.labels.get("color") == "blue")
    return Result(shape, nodes, measured, seconds, per_zone)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--existing", type=int, default=5000)
    parser.add_argument("--measured", type=int, default=5000)
    parser.add_argument("--shape", choices=sorted(SHAPES), action="append")
    args = parser.parse_args(argv)
    for shape in args.shape or list(SHAPES):
        res = run(shape, args.nodes, args.existing, args.measured)
        print(
            f"{shape}: {res.nodes} nodes, {args.existing} existing pods, {res.pods} pods "
            f"in {res.seconds:.2f}s = {res.pods_per_second:.0f} pods/s "
            f"(upstream floor {UPSTREAM_FLOOR[shape]}); per zone {res.per_zone}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
