"""Every user of node selectors answers alike, from the one implementation in
``ksched.apimachinery.nodeselector``: NodeAffinity (per node and batched), PodTopologySpread's node
inclusion and VolumeBinding's PV node affinity. Terms that upstream cannot parse (a key such as
``"bad key"``, a value such as ``"a b"``) never match in any of them."""

from __future__ import annotations

from typing import Any

import msgspec
import numpy as np
import pytest

from ksched.api.core import NodeSelector as NodeSelectorSpec
from ksched.api.core import PersistentVolume
from ksched.apimachinery.nodeselector import NodeSelector
from ksched.framework.cycle_state import CycleState
from ksched.framework.podinfo import PodInfo
from ksched.framework.testing import make_node, make_pod, make_snapshot
from ksched.plugins.helper.storage import check_node_affinity
from ksched.plugins.nodeaffinity import NodeAffinity
from ksched.plugins.podtopologyspread.index import required_affinity

NODE_LABELS = [{"zone": "a"}, {"zone": "a b"}, {"bad key": "x"}, {}, {"zone": "b", "n": "7"}]
TERMS: list[dict[str, Any]] = [
    {"key": "zone", "operator": "In", "values": ["a"]},
    {"key": "zone", "operator": "NotIn", "values": ["a b"]},
    {"key": "zone", "operator": "In", "values": ["a b"]},
    {"key": "bad key", "operator": "In", "values": ["x"]},
    {"key": "bad key", "operator": "DoesNotExist"},
    {"key": "zone", "operator": "Exists", "values": ["a"]},
    {"key": "n", "operator": "Gt", "values": ["5"]},
    {"key": "n", "operator": "Gt", "values": ["x"]},
]


@pytest.mark.parametrize("expr", TERMS, ids=lambda e: f"{e['key']} {e['operator']} {e.get('values')}")
def test_every_user_agrees(expr: dict[str, Any]) -> None:
    terms = {"nodeSelectorTerms": [{"matchExpressions": [expr]}]}
    nodes = [make_node(f"n{i}", labels=labels) for i, labels in enumerate(NODE_LABELS)]
    snapshot = make_snapshot(nodes)
    pod = PodInfo(
        make_pod(
            spec={"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": terms}}}
        )
    )
    pv = msgspec.convert(
        {"metadata": {"name": "pv"}, "spec": {"nodeAffinity": {"required": terms}}}, PersistentVolume
    )

    plugin, state = NodeAffinity(), CycleState()
    plugin.pre_filter(state, pod, snapshot.nodes)
    node_affinity = [plugin.filter(state, pod, ni) is None for ni in snapshot.nodes]
    batched = plugin.filter_batch(state, pod, snapshot, np.arange(len(nodes), dtype=np.intp)).tolist()
    spreading = [required_affinity(pod).matches_node(n) for n in nodes]
    volumes = [check_node_affinity(pv, n.metadata.labels) for n in nodes]

    selector = NodeSelector(msgspec.convert(terms, NodeSelectorSpec))
    assert node_affinity == batched == spreading == volumes == [selector.matches_node(n) for n in nodes]
    if selector.errors:
        assert not any(node_affinity)
