"""One seed drives both the algorithm's tie-breaking and DefaultPreemption's dry-run offset, in the
scheduler service's cycle and in ``ksched simulate``."""

from __future__ import annotations

from collections.abc import Mapping

from ksched_scheduler.cycle import SchedulingCycle

from ksched.config import default_config
from ksched.config.profile import build_frameworks
from ksched.framework.algorithm import ScheduleAlgorithm
from ksched.framework.nominator import Nominator
from ksched.framework.runtime import Framework
from ksched.framework.snapshot import Snapshot
from ksched.plugins.defaultpreemption import NAME, DefaultPreemption
from ksched.simulate.cluster import Cluster
from ksched.simulate.runner import Simulation


def preemption_plugin(frameworks: Mapping[str, Framework]) -> DefaultPreemption:
    [fw] = frameworks.values()
    plugin = fw.plugin(NAME)
    assert isinstance(plugin, DefaultPreemption)
    return plugin


def test_scheduler_cycle_shares_the_algorithms_rng() -> None:
    snapshot = Snapshot()
    frameworks = build_frameworks(default_config(), snapshot)
    algorithm = ScheduleAlgorithm(0, seed=7)
    SchedulingCycle(frameworks, snapshot, algorithm, Nominator())
    assert preemption_plugin(frameworks).rng is algorithm.rng


def test_simulation_offsets_follow_the_seed() -> None:
    offsets = []
    for _ in range(2):
        cluster = Cluster(Snapshot())
        frameworks = build_frameworks(default_config(), cluster.snapshot)
        Simulation(cluster, frameworks, ScheduleAlgorithm(0, seed=42))
        plugin = preemption_plugin(frameworks)
        offsets.append([plugin.get_offset_and_num_candidates(1000)[0] for _ in range(5)])
    assert offsets[0] == offsets[1]
    cluster = Cluster(Snapshot())
    frameworks = build_frameworks(default_config(), cluster.snapshot)
    Simulation(cluster, frameworks, ScheduleAlgorithm(0, seed=43))
    other = preemption_plugin(frameworks)
    assert [other.get_offset_and_num_candidates(1000)[0] for _ in range(5)] != offsets[0]
