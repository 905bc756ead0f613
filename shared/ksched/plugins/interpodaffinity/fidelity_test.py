"""InterPodAffinity alone against the goldens recorded from the real kube-scheduler 1.36.2.

For each ``interpod`` and ``mixed`` scenario of /work/shared/fidelity-public: every node upstream
found feasible passes this plugin's Filter; the normalized, weighted (x2) scores over the feasible
nodes equal upstream's per-plugin InterPodAffinity scores; for unschedulable pods, this plugin
rejects at least as many nodes with each of its reasons as the FailedScheduling message counts
(other plugins run before it and may have rejected some of them first).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ksched.api.core import Namespace, Node, Pod
from ksched.api.files import load_objects
from ksched.framework.cycle_state import CycleState
from ksched.framework.podinfo import PodInfo
from ksched.plugins.interpodaffinity.filtering import (
    ERR_REASON_AFFINITY_RULES_NOT_MATCH,
    ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH,
    ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH,
)
from ksched.plugins.interpodaffinity.testing import plugin_for, snapshot_of

GOLDEN_DIR = Path("/work/shared/fidelity-public")
WEIGHT = 2  # InterPodAffinity's weight in the default profile
REASONS = (
    ERR_REASON_AFFINITY_RULES_NOT_MATCH,
    ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH,
    ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH,
)


def _scenarios() -> list[str]:
    if not GOLDEN_DIR.is_dir():
        return []
    out = []
    for path in sorted(GOLDEN_DIR.glob("*.expected.json")):
        golden = json.loads(path.read_text())
        if {"interpod", "mixed"} & set(golden.get("categories", [])):
            out.append(path.name.split(".")[0])
    return out


def _load(sid: str) -> tuple[dict[str, Any], list[Node], list[Pod], list[Namespace], Pod]:
    golden = json.loads((GOLDEN_DIR / f"{sid}.expected.json").read_text())
    objects = load_objects(GOLDEN_DIR / f"{sid}.yaml", skipped=[])
    nodes = [o for o in objects if isinstance(o, Node)]
    namespaces = [o for o in objects if isinstance(o, Namespace)]
    pods = [o for o in objects if isinstance(o, Pod) and o.status.phase not in ("Succeeded", "Failed")]
    pending = next(p for p in pods if f"{p.metadata.namespace}/{p.metadata.name}" == golden["pod"])
    bound = [p for p in pods if p.spec.node_name]
    return golden, nodes, bound, namespaces, pending


@pytest.mark.skipif(not GOLDEN_DIR.is_dir(), reason="fidelity goldens not present")
@pytest.mark.parametrize("sid", _scenarios())
def test_matches_upstream_golden(sid: str) -> None:
    golden, nodes, bound, namespaces, pending = _load(sid)
    snap = snapshot_of(nodes, bound, namespaces)
    plugin = plugin_for(snap)
    state = CycleState()
    pi = PodInfo(pending)
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
    want = [golden["scores"][n].get("InterPodAffinity", 0) for n in feasible]
    if plugin.pre_score(state, pi, feasible_nodes) is not None:
        assert want == [0] * len(feasible)
        return
    scores = np.array([plugin.score(state, pi, ni) for ni in feasible_nodes], dtype=np.int64)
    plugin.normalize_score(state, pi, feasible_nodes, scores)
    assert (scores * WEIGHT).tolist() == want


def test_some_scenarios_exercise_the_plugin() -> None:
    if not GOLDEN_DIR.is_dir():
        pytest.skip("fidelity goldens not present")
    assert len(_scenarios()) >= 6
