"""NodeResourcesFit and BalancedAllocation against the real kube-scheduler 1.36.2 decisions
recorded in ``../shared/fidelity-public``: per-node weighted scores of both plugins on every scenario
(under the scenario's own configuration where it has one), and, where only resources rejected nodes,
the FailedScheduling reason histogram and how many nodes preemption could not help
(UnschedulableAndUnresolvable)."""

from __future__ import annotations

import re

import numpy as np
import pytest

from ksched.framework.cycle_state import CycleState
from ksched.framework.podinfo import PodInfo
from ksched.framework.status import Code
from ksched.plugins.noderesources.balanced_allocation import NAME as BA_NAME
from ksched.plugins.noderesources.fit import NAME as FIT_NAME
from tests.fidelity import Scenario, load_scenario, scenario_ids

RESOURCE_REASON = re.compile(r"^(\d+) (Insufficient .+|Too many pods)$")


def check_scores(scenario: Scenario) -> None:
    """Each plugin's weighted score on every scored node equals upstream's; raises AssertionError."""
    scores: dict[str, dict[str, int]] = scenario.golden["scores"]
    fw, snapshot = scenario.framework, scenario.cluster.snapshot
    pod, rows = PodInfo(scenario.pod), np.array([snapshot.get(name).index for name in scores], dtype=np.intp)
    for name in (FIT_NAME, BA_NAME):
        weight, plugin, state = scenario.weight(name), fw.plugin(name), CycleState()
        recorded = [node_scores.get(name) for node_scores in scores.values()]
        if weight == 0 or plugin is None:
            assert recorded == [None] * len(scores), f"{name} is not a score plugin of the profile"
            continue
        if plugin.pre_score(state, pod, snapshot.nodes) is not None:
            assert recorded == [None] * len(scores), f"{name}: PreScore skipped here but upstream scored"
            continue
        batch = plugin.score_batch(state, pod, snapshot, rows).tolist()
        for i, node in enumerate(scores):
            one = plugin.score(state, pod, snapshot.get(node))
            assert one == batch[i], f"{name} {node}: score {one} != score_batch {batch[i]}"
            assert one * weight == recorded[i], (
                f"{name} {node}: {one} x weight {weight} != upstream {recorded[i]}"
            )


@pytest.mark.parametrize("sid", scenario_ids())
def test_scores_match_upstream(sid: str | None) -> None:
    scenario = load_scenario(sid)
    scenario.skip_if_unsupported()
    if not scenario.golden["scores"]:
        pytest.skip("no scores recorded (unschedulable or scoring skipped)")
    check_scores(scenario)


@pytest.mark.parametrize("sid", scenario_ids())
def test_filter_matches_upstream(sid: str | None) -> None:
    scenario = load_scenario(sid)
    scenario.skip_if_unsupported()
    golden, snapshot, fit = scenario.golden, scenario.cluster.snapshot, scenario.framework.plugin(FIT_NAME)
    assert fit is not None
    pod, state = PodInfo(scenario.pod), CycleState()
    fit.pre_filter(state, pod, snapshot.nodes)
    statuses = {ni.name: fit.filter(state, pod, ni) for ni in snapshot.nodes}
    feasible: list[str] = golden["feasible"]
    assert all(statuses[name] is None for name in feasible)
    message = golden["message"]
    if not isinstance(message, str):
        return
    filter_part, _, post_filter = message.partition(". ")
    histogram = filter_part.rstrip(".").split(": ", 1)[1].split(", ")
    if not all(RESOURCE_REASON.match(h) for h in histogram):
        return  # other plugins rejected nodes first; their share cannot be told apart here
    counts: dict[str, int] = {}
    for status in statuses.values():
        for reason in status.reasons if status is not None else ():
            counts[reason] = counts.get(reason, 0) + 1
    assert sorted(f"{n} {r}" for r, n in counts.items()) == histogram
    unresolvable = sum(
        1 for s in statuses.values() if s is not None and s.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    )
    not_helpful = re.search(r"(\d+) Preemption is not helpful for scheduling", post_filter)
    if not_helpful and "preemptionPolicy" not in post_filter:
        assert unresolvable == int(not_helpful.group(1))


def test_configs_scenarios_are_covered() -> None:
    """The non-default configurations are scored under their own profile, not skipped."""
    ids = [sid for sid in scenario_ids() if sid is not None]
    configs = [sid for sid in ids if load_scenario(sid).config_path.name == f"{sid}.config.yaml"]
    if not ids:
        load_scenario(None)
    assert len(configs) >= 8
