"""InterPodAffinity alone against the goldens recorded from the real kube-scheduler 1.36.2.

For each ``interpod``, ``mixed`` and ``configs`` scenario of ``../shared/fidelity-public`` (the latter under
their own configuration: InterPodAffinity's args and score weight): every node upstream found feasible passes
this plugin's Filter; the normalized, weighted scores over the feasible nodes equal upstream's per-plugin
InterPodAffinity scores; for unschedulable pods, this plugin rejects at least as many nodes with each of its
reasons as the FailedScheduling message counts (other plugins run before it and may have rejected some of
them first).
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from ksched.framework.cycle_state import CycleState
from ksched.framework.podinfo import PodInfo
from ksched.plugins.interpodaffinity.filtering import (
    ERR_REASON_AFFINITY_RULES_NOT_MATCH,
    ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH,
    ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH,
)
from tests.fidelity import Scenario, in_categories, load_scenario, scenario_ids

NAME = "InterPodAffinity"
CATEGORIES = ("interpod", "mixed", "configs")
REASONS = (
    ERR_REASON_AFFINITY_RULES_NOT_MATCH,
    ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH,
    ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH,
)


def check_golden(scenario: Scenario) -> None:
    """The plugin's filter verdicts and weighted scores agree with upstream's; raises AssertionError."""
    golden, snap, plugin = scenario.golden, scenario.cluster.snapshot, scenario.framework.plugin(NAME)
    assert plugin is not None
    state, pi = CycleState(), PodInfo(scenario.pod)
    _, pre = plugin.pre_filter(state, pi, snap.nodes)
    assert pre is None or pre.code.label == "Skip"
    statuses = {ni.name: (plugin.filter(state, pi, ni) if pre is None else None) for ni in snap.nodes}
    feasible = golden["feasible"]
    for name in feasible:
        assert statuses[name] is None, f"{name} is feasible upstream but {statuses[name]}"
    message = golden.get("message_filter_part") or ""
    for reason in REASONS:
        m = re.search(rf"(\d+) {re.escape(reason)}", message)
        if m:
            ours = sum(
                1 for n, s in statuses.items() if n not in feasible and s is not None and reason in s.reasons
            )
            assert ours >= int(m.group(1)), f"{reason}: upstream {m.group(1)}, ours {ours}"
    if not feasible or golden.get("scoring_skipped"):
        return
    feasible_nodes = [snap.get(n) for n in feasible]
    want = [golden["scores"][n].get(NAME, 0) for n in feasible]
    weight = scenario.weight(NAME)
    if weight == 0 or plugin.pre_score(state, pi, feasible_nodes) is not None:
        assert want == [0] * len(feasible)
        return
    scores = np.array([plugin.score(state, pi, ni) for ni in feasible_nodes], dtype=np.int64)
    plugin.normalize_score(state, pi, feasible_nodes, scores)
    assert (scores * weight).tolist() == want, f"weight {weight}"


@pytest.mark.parametrize("sid", scenario_ids(keep=in_categories(*CATEGORIES)))
def test_matches_upstream_golden(sid: str | None) -> None:
    check_golden(load_scenario(sid))


def test_some_scenarios_exercise_the_plugin() -> None:
    ids = [sid for sid in scenario_ids(keep=in_categories("interpod", "mixed")) if sid is not None]
    if not ids:
        load_scenario(None)
    assert len(ids) >= 6
