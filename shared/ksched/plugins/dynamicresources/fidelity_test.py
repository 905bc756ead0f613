"""DynamicResources alone against the ``dra`` goldens recorded from the real kube-scheduler 1.36.2.

For each scenario: every node upstream found feasible passes this plugin's Filter; for unschedulable
pods, the plugin rejects at least as many nodes with each of its reasons as the FailedScheduling
message counts (NodeResourcesFit runs first and may have rejected some); the normalized, weighted
scores over the feasible nodes equal upstream's; PostFilter's part of the message is upstream's;
and after Reserve on upstream's node, the pod's claims are allocated exactly as upstream allocated
them (``claims`` of the golden).
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from ksched.framework.cycle_state import CycleState
from ksched.framework.podinfo import PodInfo
from ksched.framework.results import NodeToStatus
from ksched.plugins.dynamicresources.claims import claim_summary
from ksched.plugins.dynamicresources.plugin import MSG_CANNOT_ALLOCATE, MSG_NOT_AVAILABLE, NAME
from tests.fidelity import in_categories, load_scenario, scenario_ids


@pytest.mark.parametrize("sid", scenario_ids(keep=in_categories("dra")))
def test_dra_scenario_matches_upstream(sid: str | None) -> None:
    scenario = load_scenario(sid)
    golden, snap, plugin = scenario.golden, scenario.cluster.snapshot, scenario.framework.plugin(NAME)
    assert plugin is not None
    state, pi = CycleState(), PodInfo(scenario.pod)
    _, pre = plugin.pre_filter(state, pi, snap.nodes)
    assert pre is None
    statuses = {ni.name: plugin.filter(state, pi, ni) for ni in snap.nodes}
    feasible = golden["feasible"]
    for name in feasible:
        assert statuses[name] is None, f"{name} is feasible upstream but {statuses[name]}"
    message = golden.get("message_filter_part") or ""
    for reason in (MSG_CANNOT_ALLOCATE, MSG_NOT_AVAILABLE):
        m = re.search(rf"(\d+) {re.escape(reason)}", message)
        if m:
            ours = sum(1 for s in statuses.values() if s is not None and reason in s.reasons)
            assert ours >= int(m.group(1)), f"{reason}: upstream {m.group(1)}, ours {ours}"
    if golden["node"] is None:
        _, status = plugin.post_filter(state, pi, NodeToStatus())
        assert status is not None and f" {status.message}, preemption: " in (golden["message"] or "")
        return
    if not golden.get("scoring_skipped"):
        nodes = [snap.get(n) for n in feasible]
        scores = np.array([plugin.score(state, pi, ni) for ni in nodes], dtype=np.int64)
        plugin.normalize_score(state, pi, nodes, scores)
        want = [golden["scores"][n].get(NAME, 0) for n in feasible]
        assert (scores * scenario.weight(NAME)).tolist() == want
    assert plugin.reserve(state, pi, golden["node"]) is None
    claims = {c.key: claim_summary(c) for c in plugin.objects_after_pre_bind(state, pi)}
    assert claims == golden["claims"]
