"""The table ``ksched simulate`` prints for people: chosen node, top nodes with each plugin's weighted
score, rejected nodes grouped by plugin and reason, aligned, and no progress bar when piped."""

from __future__ import annotations

import io

import pytest

from ksched.progress import progress_bar
from ksched.simulate.output import to_table
from ksched.simulate.runner import PodOutcome


def outcome() -> PodOutcome:
    weighted = {"TaintToleration": 300, "ImageLocality": 0}
    scores = {f"node-{i}": {"NodeResourcesFit": 90 - i, **weighted} for i in range(7)}
    return PodOutcome(
        pod="default/web",
        node="node-0",
        scores=scores,
        totals={n: sum(s.values()) for n, s in scores.items()},
        filter={
            "small-1": {"plugin": "NodeResourcesFit", "reasons": ["Insufficient cpu"]},
            "small-2": {"plugin": "NodeResourcesFit", "reasons": ["Insufficient cpu", "Insufficient memory"]},
            "tainted": {"plugin": "TaintToleration", "reasons": ["node(s) had untolerated taint(s)"]},
        },
    )


def test_top_nodes_with_weighted_scores_and_grouped_rejections() -> None:
    text = to_table([outcome()], width=120)
    lines = text.splitlines()
    assert lines[0] == "default/web  -> node-0"
    assert "top 5 of 7 feasible node(s), weighted scores" in text
    header = next(line for line in lines if line.strip().startswith("node "))
    assert header.split() == ["node", "total", "NodeResourcesFit", "TaintToleration"]  # zero columns left out
    rows = [line.split() for line in lines if line.strip().startswith("node-")]
    assert [r[0] for r in rows] == ["node-0", "node-1", "node-2", "node-3", "node-4"]
    assert rows[0] == ["node-0", "*", "390", "90", "300"]
    assert "3 node(s) filtered out" in text
    cpu = next(line for line in lines if "Insufficient cpu" in line)
    memory = next(line for line in lines if "Insufficient memory" in line)
    assert cpu.split()[0] == "NodeResourcesFit" and cpu.split()[-3:] == ["2", "small-1,", "small-2"]
    assert memory.split()[-2:] == ["1", "small-2"]
    assert all(line == line.rstrip() for line in lines)


def test_unschedulable_pod_shows_its_message_and_no_score_table() -> None:
    message = "0/3 nodes are available: 3 Insufficient cpu."
    text = to_table([PodOutcome(pod="default/big", node=None, message=message)], width=100)
    assert text.splitlines()[0] == "default/big  unschedulable"
    assert "message: 0/3 nodes are available: 3 Insufficient cpu." in text
    assert "weighted scores" not in text


def test_no_progress_bar_when_standard_error_is_not_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    err = io.StringIO()
    monkeypatch.setattr("sys.stderr", err)
    with progress_bar(1000, "scheduling") as advance:
        advance(10)
    assert err.getvalue() == ""


def test_a_progress_bar_on_a_terminal_for_long_runs_only(monkeypatch: pytest.MonkeyPatch) -> None:
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    err = Terminal()
    monkeypatch.setattr("sys.stderr", err)
    with progress_bar(10, "short") as advance:
        advance(10)
    assert err.getvalue() == ""
    with progress_bar(100, "scheduling") as advance:
        advance(100)
    assert "scheduling" in err.getvalue()
