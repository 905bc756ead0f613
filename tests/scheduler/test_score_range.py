"""A Score plugin's normalized scores must stay in [0, 100]: the cycle fails naming the first plugin
that left the range (upstream ``RunScorePlugins``' "applying score defaultWeights" error), and in-range
scores are weighted and summed."""

from __future__ import annotations

import numpy as np

from ksched.framework.cycle_state import CycleState
from ksched.framework.nodeinfo import NodeInfo
from ksched.framework.podinfo import PodInfo
from ksched.framework.runtime import Framework, PluginsByPoint
from ksched.framework.status import Status
from ksched.framework.testing import make_node, make_pod, make_snapshot


class Fixed:
    """Scores each node from a table."""

    def __init__(self, name: str, scores: dict[str, int]) -> None:
        self.name = name
        self.scores = scores

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        return self.scores[node.name]


def run(*plugins: tuple[Fixed, int]) -> tuple[dict[str, list[int]] | None, list[int] | None, str]:
    nodes = ["a", "b", "c"]
    fw = Framework("p1", make_snapshot([make_node(n) for n in nodes]))
    fw.set_plugins(PluginsByPoint(score=list(plugins)))
    infos = fw.snapshot.nodes
    outcome, status = fw.run_score_plugins(
        CycleState(), PodInfo(make_pod("p")), infos, np.arange(len(infos), dtype=np.int64)
    )
    if outcome is None:
        assert status is not None
        return None, None, status.message
    per_plugin = {name: scores.tolist() for name, scores in outcome.plugin_scores.items()}
    return per_plugin, outcome.totals.tolist(), ""


def test_in_range_scores_are_weighted_and_summed() -> None:
    per_plugin, totals, _ = run(
        (Fixed("A", {"a": 10, "b": 0, "c": 100}), 2), (Fixed("B", {"a": 1, "b": 2, "c": 3}), 1)
    )
    assert per_plugin == {"A": [20, 0, 200], "B": [1, 2, 3]}
    assert totals == [21, 2, 203]


def test_the_first_plugin_out_of_range_is_named() -> None:
    _, _, message = run(
        (Fixed("Fine", {"a": 0, "b": 50, "c": 100}), 1),
        (Fixed("TooHigh", {"a": 101, "b": 0, "c": 0}), 1),
        (Fixed("TooLow", {"a": 0, "b": -1, "c": 0}), 1),
    )
    assert message == (
        'applying score defaultWeights on Score plugins: plugin "TooHigh" returns an invalid score 101, '
        "it should in the range of [0, 100] after normalizing"
    )


def test_a_negative_score_is_named_with_its_value() -> None:
    _, _, message = run((Fixed("TooLow", {"a": 0, "b": -1, "c": 0}), 1))
    assert 'plugin "TooLow" returns an invalid score -1' in message


class Raising(Fixed):
    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        raise RuntimeError("scoring backend gone")


class FailingNormalize(Fixed):
    def normalize_score(self, state: CycleState, pod: PodInfo, nodes: object, scores: object) -> Status:
        return Status.as_error(RuntimeError("cannot normalize"))


class RaisingNormalize(Fixed):
    def normalize_score(self, state: CycleState, pod: PodInfo, nodes: object, scores: object) -> Status:
        raise ValueError("division by zero")


def test_a_score_plugins_error_reads_as_upstreams() -> None:
    """Upstream's ``RunScorePlugins``: ``running Score plugins: plugin "X" failed with: <error>``, and
    for NormalizeScore ``running Normalize on Score plugins: plugin "X" failed with: <error>``."""
    _, _, message = run((Fixed("Fine", {"a": 1, "b": 2, "c": 3}), 1), (Raising("Boom", {}), 1))
    assert message == 'running Score plugins: plugin "Boom" failed with: scoring backend gone'
    _, _, message = run((FailingNormalize("Norm", {"a": 1, "b": 2, "c": 3}), 1))
    assert message == 'running Normalize on Score plugins: plugin "Norm" failed with: cannot normalize'
    _, _, message = run((RaisingNormalize("Norm", {"a": 1, "b": 2, "c": 3}), 1))
    assert message == 'running Normalize on Score plugins: plugin "Norm" failed with: division by zero'
