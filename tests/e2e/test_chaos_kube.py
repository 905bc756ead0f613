"""The short chaos profile against a real control plane (``make chaos`` runs the full one): a fresh
etcd and kube-apiserver 1.36.2 of ``../shared/kube-1.36`` (its own: the run kills the API server),
every fault once (each service killed, NATS restarted and paused, a scheduler paused past its lease,
kube-apiserver killed and started again, stopped for 3 s, flooded into 429s, etcd compacted) while
a few hundred pods are created, some with a required anti-affinity or a hard topology spread. Then:
every pod bound, none lost, none bound twice, no node overcommitted, no hard constraint broken,
every bound pod with its Scheduled event, every fault recovered from, and no leader that stopped
for want of renewing while the API server was up (its own work starving its renewals)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ksched.bench.chaos import KUBE_ONLY, ChaosOptions, default_faults, run
from tests.fixtures.kube136 import kube_folder

pytestmark = pytest.mark.e2e

PODS = 300


async def test_every_fault_of_a_real_api_server_loses_nothing(tmp_path: Path) -> None:
    options = ChaosOptions(nodes=20, pods=PODS, seed=5, kube=kube_folder(), workdir=tmp_path)
    report = await run(options, log=print)
    table = report.table()
    print(table)
    assert sorted(f.fault for f in report.faults) == sorted(default_faults(1, kube=True)), table
    assert {f.fault for f in report.faults} >= KUBE_ONLY
    assert report.bound == PODS, table
    assert (report.lost, report.double_bound, report.overcommitted_nodes, report.violated) == (0, 0, 0, 0), (
        report.double_bound_examples,
        report.violated_examples,
    )
    assert report.events_missing == 0, table
    assert not [f.fault for f in report.faults if f.recovered_after is None], table
    assert not report.starved_leader_exits, table
    assert report.rejected_429 > 0, table  # the flood was refused, as an overloaded server does


def test_the_real_api_server_faults_need_one() -> None:
    assert not KUBE_ONLY.intersection(default_faults(1))
    assert set(default_faults(1, kube=True)) >= KUBE_ONLY and "restart-kubesim" not in default_faults(
        1, kube=True
    )
