"""The 2-minute chaos run inside ``make test`` (``make chaos`` is the 5,000-node, 20,000-pod one):
every fault of ``ksched bench chaos`` once, in a seeded order, while 900 pods are created (half of
them with a hard topology spread, a tenth with a required anti-affinity: the replicas' decisions
conflict often); nothing lost, nothing bound twice, no node overcommitted, no hard constraint
broken, every bound pod with its Scheduled event, and every fault recovered from. Then the NATS
faults against a 3-server JetStream cluster, one server lost with its disk."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from ksched.bench.chaos import FAULTS, ChaosOptions, chosen_faults, default_faults, double_bound, run

pytestmark = pytest.mark.e2e


async def test_every_fault_under_load_loses_nothing(tmp_path: Path) -> None:
    lines: list[str] = []
    options = ChaosOptions(nodes=60, pods=900, seed=7, workdir=tmp_path, spread_tenths=5)
    report = await run(options, log=lines.append)
    print(report.table())
    assert sorted(f.fault for f in report.faults) == sorted(default_faults(1))
    assert report.bound == 900, report.table()
    assert (report.lost, report.double_bound, report.overcommitted_nodes, report.violated) == (0, 0, 0, 0), (
        report.double_bound_examples,
        report.violated_examples,
    )
    assert report.events_missing == 0, report.table()
    unrecovered = [f.fault for f in report.faults if f.recovered_after is None]
    assert not unrecovered, report.table()


async def test_losing_one_server_of_a_nats_cluster_loses_nothing(tmp_path: Path) -> None:
    faults = ("lose-nats-server", "restart-nats-server", "pause-nats-server")
    options = ChaosOptions(nodes=40, pods=400, seed=3, faults=faults, nats_servers=3, workdir=tmp_path)
    report = await run(options)
    print(report.table())
    assert [f.fault for f in report.faults].count("replace-nats-server") == 1
    assert report.bound == 400, report.table()
    assert (report.lost, report.double_bound, report.overcommitted_nodes) == (0, 0, 0), (
        report.double_bound_examples
    )
    assert not [f.fault for f in report.faults if f.recovered_after is None], report.table()
    (lost,) = [f for f in report.faults if f.fault == "lose-nats-server"]
    assert lost.bound_during > 0, report.table()  # the pipeline went on with two servers


def test_losing_a_server_needs_a_cluster() -> None:
    assert "lose-nats-server" not in default_faults(1) and "lose-nats-server" in default_faults(3)
    with pytest.raises(ValueError, match="lose-nats-server needs --nats-servers 3"):
        chosen_faults(ChaosOptions(faults=("lose-nats-server",)))
    with pytest.raises(ValueError, match="unknown fault"):
        chosen_faults(ChaosOptions(faults=("unplug-everything",)))
    assert FAULTS.keys() >= set(default_faults(3))


def _event(pod: str, reason: str, note: str = "", series: bool = False) -> dict[str, object]:
    event: dict[str, object] = {"regarding": {"name": pod}, "reason": reason, "note": note}
    if series:
        event["series"] = {"count": 2}
    return event


def test_double_bound_reads_the_schedulers_events() -> None:
    events = [
        _event("once", "Scheduled", "Successfully assigned chaos/once to n1"),
        _event("twice", "Scheduled"),
        _event("twice", "Scheduled"),
        _event("series", "Scheduled", series=True),
        _event("refused", "Scheduled"),
        _event("refused", "FailedScheduling", "pod chaos/refused is already assigned to node n2"),
        _event("pending", "FailedScheduling", "0/3 nodes are available: 3 Insufficient cpu."),
    ]
    assert double_bound(events) == {"twice", "series", "refused"}


def test_violations_reads_anti_affinity_and_hard_spread() -> None:
    from ksched.api.core import Pod
    from ksched.bench.chaos import _pod, violations

    def placed(i: int, node: str) -> Pod:
        body = _pod(i, nodes=4)
        body["spec"]["nodeName"] = node
        return msgspec.convert(body, Pod)

    assert "topologySpreadConstraints" in _pod(3, 4, spread_tenths=2)["spec"]  # --spread-tenths 2
    assert "topologySpreadConstraints" not in _pod(3, 4)["spec"]
    nodes = ["n0", "n1", "n2", "n3"]
    anti = [placed(2, "n0"), placed(12, "n1")]  # pods 2 and 12: one anti-affinity group
    spread = [placed(1, "n0"), placed(11, "n1"), placed(21, "n2"), placed(31, "n3")]
    assert violations(anti + spread, nodes) == []
    assert violations([placed(2, "n0"), placed(12, "n0")], nodes) == [
        "anti-affinity: c-00002 and c-00012 on n0",
        "anti-affinity: c-00012 and c-00002 on n0",
    ]
    assert violations([placed(1, "n0"), placed(11, "n0"), placed(21, "n2")], nodes) == [
        "topology spread [('spread', 's')]: skew 2 > 1 (2 on n0: c-00001, c-00011; 0 on n1)"
    ]


def test_a_leader_refused_with_429_outside_api_faults_is_not_starved() -> None:
    from ksched.bench.chaos import ChaosReport, LeaderExit

    report = ChaosReport(seed=1, nodes=4, pods=10)
    report.leader_exits = [
        LeaderExit("queue-0", 10.0, "not renewed within renewDeadline (4.0s): HTTP 429"),
        LeaderExit("informer-0", 20.0, "not renewed within renewDeadline (4.0s): TimeoutError"),
        LeaderExit("queue-1", 30.0, "not renewed within renewDeadline (4.0s): HTTP 403", "restart-apiserver"),
    ]
    assert [e.service for e in report.starved_leader_exits] == ["informer-0"]


def test_events_lost_are_counted_per_kill() -> None:
    from ksched.bench.chaos import ChaosReport, FaultRecord

    report = ChaosReport(seed=1, nodes=4, pods=10)
    report.faults = [
        FaultRecord("kill-binder", "binder-0", 1.0, 1.0, 0.5, events_lost=3),
        FaultRecord("kill-scheduler", "scheduler-1", 5.0, 1.0, 0.5, events_lost=1),
        FaultRecord("pause-nats-server", "nats-server", 9.0, 5.0, 0.5, events_lost=7),
    ]
    assert report.events_lost_per_kill == 2.0  # (3 + 1) / 2 kills; the pause is no kill
    lines = report.table().splitlines()
    assert lines[0].endswith("events lost") and lines[1].endswith(" 3")
    assert "lost per kill 2.0" in report.table()
    assert msgspec.json.decode(report.to_json())["events_lost_per_kill"] == 2.0
