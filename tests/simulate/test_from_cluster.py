"""``ksched simulate --from-cluster``, ``--dump-cluster``, ``--pod`` and ``--compare-config`` against
kubesim over HTTP through the kubeconfig it writes."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from ksched_kubesim import KubeSim

from ksched.features import FeatureGates
from ksched.simulate.cli import main
from tests.fixtures.kubesim import client_for, fast_config
from tests.simulate import test_gangs as gangs


def node(name: str, cpu: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "status": {"allocatable": {"cpu": cpu, "memory": "8Gi", "pods": "110"}, "capacity": {"cpu": cpu}},
    }


def pod(name: str, cpu: str, node_name: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "containers": [{"name": "c", "image": "pause", "resources": {"requests": {"cpu": cpu}}}]
    }
    if node_name:
        spec["nodeName"] = node_name
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": spec,
    }


@pytest.fixture
async def live(tmp_path: Path) -> AsyncIterator[Path]:
    """A kubesim of its own with nodes small (2 cpu, 1 used) and big (4 cpu), pods p-fits
    (500m) and p-huge (8 cpu) pending; the path of its kubeconfig."""
    sim = KubeSim(fast_config())
    await sim.start()
    try:
        kubeconfig = sim.write_kubeconfig(tmp_path / "kubeconfig")
        async with await client_for(kubeconfig) as api:
            for obj, path in (
                (node("small", "2"), "/api/v1/nodes"),
                (node("big", "4"), "/api/v1/nodes"),
                (pod("running", "1", "small"), "/api/v1/namespaces/default/pods"),
                (pod("p-fits", "500m"), "/api/v1/namespaces/default/pods"),
                (pod("p-huge", "8"), "/api/v1/namespaces/default/pods"),
            ):
                await api.create(path, obj)
        yield kubeconfig
    finally:
        await sim.stop()


async def simulate(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """``ksched simulate`` in a thread (it runs its own event loop); exit code, stdout, stderr."""
    code = await asyncio.to_thread(main, list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def decisions(out: str) -> dict[str, str | None]:
    return {p["pod"]: p["node"] for p in json.loads(out)["pods"]}


async def test_from_cluster_schedules_the_pending_pods(
    live: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = await simulate(capsys, "--from-cluster", "--kubeconfig", str(live), "--output", "json")
    assert code == 0, err
    pods = {p["pod"]: p for p in json.loads(out)["pods"]}
    assert set(pods) == {"default/p-fits", "default/p-huge"}  # the bound pod is not rescheduled
    assert pods["default/p-fits"]["node"] == "big"  # LeastAllocated: small already has 1 of 2 cpu used
    assert pods["default/p-huge"]["node"] is None
    assert pods["default/p-huge"]["message"] == (
        "0/2 nodes are available: 2 Insufficient cpu. no new claims to deallocate, "
        "preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling."
    )


async def test_dump_cluster_round_trips(
    live: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dump = tmp_path / "cluster.yaml"
    code, out, err = await simulate(
        capsys, "--from-cluster", "--kubeconfig", str(live), "--dump-cluster", str(dump)
    )
    assert code == 0 and out == "", err
    document = yaml.safe_load(dump.read_text())
    kinds = [(o["apiVersion"], o["kind"], o["metadata"]["name"]) for o in document["items"]]
    assert ("v1", "Node", "small") in kinds and ("v1", "Pod", "p-huge") in kinds
    assert ("v1", "Namespace", "default") in kinds
    assert all("managedFields" not in o["metadata"] for o in document["items"])
    code, offline, err = await simulate(capsys, "--cluster", str(dump), "--output", "json")
    assert code == 0, err
    code, online, err = await simulate(
        capsys, "--from-cluster", "--kubeconfig", str(live), "--output", "json"
    )
    assert json.loads(offline) == json.loads(online)


async def test_pod_files_replace_the_pending_pods(
    live: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    extra = tmp_path / "pod.yaml"
    extra.write_text(yaml.safe_dump(pod("what-if", "3") | {"metadata": {"name": "what-if"}}))
    code, out, err = await simulate(
        capsys, "--from-cluster", "--kubeconfig", str(live), "--pod", str(extra), "--output", "json"
    )
    assert code == 0, err
    assert decisions(out) == {"default/what-if": "big"}


async def test_pod_file_with_a_placed_pod_is_refused(
    live: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    extra = tmp_path / "pod.yaml"
    extra.write_text(yaml.safe_dump(pod("placed", "1", "big")))
    code, _, err = await simulate(capsys, "--from-cluster", "--kubeconfig", str(live), "--pod", str(extra))
    assert code == 2
    assert f"--pod {extra}: Pod placed: spec.nodeName is set" in err


def config(path: Path, strategy: str) -> Path:
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "kubescheduler.config.k8s.io/v1",
                "kind": "KubeSchedulerConfiguration",
                "profiles": [
                    {
                        "schedulerName": "default-scheduler",
                        "pluginConfig": [
                            {"name": "NodeResourcesFit", "args": {"scoringStrategy": {"type": strategy}}}
                        ],
                    }
                ],
            }
        )
    )
    return path


async def test_compare_config_lists_the_pods_decided_differently(
    live: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    old = config(tmp_path / "least.yaml", "LeastAllocated")
    new = config(tmp_path / "most.yaml", "MostAllocated")
    argv = ["--from-cluster", "--kubeconfig", str(live), "--compare-config", str(old), str(new)]
    code, out, err = await simulate(capsys, *argv, "--output", "json")
    assert code == 0, err
    report = json.loads(out)
    assert report["pods"] == 2
    assert [(d["pod"], d["old"]["node"], d["new"]["node"]) for d in report["differences"]] == [
        ("default/p-fits", "big", "small")
    ]
    code, table, err = await simulate(capsys, *argv)
    assert code == 0, err
    assert "default/p-fits" in table and "-> big" in table and "-> small" in table
    assert "1 of 2 pending pod(s) decided differently" in table
    code, out, err = await simulate(capsys, *argv[:-2], str(old), str(old), "--output", "json")
    assert json.loads(out)["differences"] == []


async def test_an_unreachable_cluster_is_a_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": "http://127.0.0.1:9"}}],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "x",
            }
        )
    )
    code, _, err = await simulate(capsys, "--from-cluster", "--kubeconfig", str(kubeconfig))
    assert code == 2
    assert err.startswith("ksched simulate: --from-cluster: Node: cannot reach the API server")


def test_dump_cluster_needs_from_cluster(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--cluster", "x.yaml", "--dump-cluster", str(tmp_path / "out.yaml")])
    assert exited.value.code == 2
    assert "--dump-cluster needs --from-cluster" in capsys.readouterr().err


@pytest.mark.parametrize("coscheduling", [False, True], ids=["v1alpha2", "coscheduling"])
async def test_from_cluster_reads_pod_groups_with_the_gates(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], coscheduling: bool
) -> None:
    """With the gates on, the pod groups are listed too, so a gang is placed whole as in the file;
    the dump writes them with the kind and apiVersion their API serves."""
    offline = gangs.cluster(tmp_path, coscheduling)
    sim = KubeSim(fast_config(feature_gates=FeatureGates.parse(gangs.GATES)))
    await sim.start()
    try:
        for item in json.loads(offline.read_text())["items"]:
            sim.load(item)
        kubeconfig = sim.write_kubeconfig(tmp_path / "kubeconfig")
        live = ["--from-cluster", "--kubeconfig", str(kubeconfig), "--feature-gates", gangs.GATES]
        code, online_out, err = await simulate(capsys, *live, "--output", "json")
        assert code == 0, err
        code, file_out, err = await simulate(
            capsys, "--cluster", str(offline), "--feature-gates", gangs.GATES, "--output", "json"
        )
        assert code == 0, err
        # the same placements up to the tie-break between the two equal nodes
        assert groups_of(decisions(online_out)) == groups_of(decisions(file_out))
        assert sorted(str(n) for p, n in decisions(online_out).items() if p.startswith("gangs/fits-")) == [
            "gang-node-0",
            "gang-node-1",
        ]
        dump = tmp_path / "dump.yaml"
        code, _, err = await simulate(capsys, *live, "--dump-cluster", str(dump))
        assert code == 0, err
        groups = [o for o in yaml.safe_load(dump.read_text())["items"] if o["kind"] == "PodGroup"]
        api_version = "scheduling.x-k8s.io/v1alpha1" if coscheduling else "scheduling.k8s.io/v1alpha2"
        assert sorted((g["apiVersion"], g["metadata"]["name"]) for g in groups) == [
            (api_version, "fits"),
            (api_version, "too-big"),
        ]
    finally:
        await sim.stop()


def groups_of(placed: dict[str, str | None]) -> dict[str, list[str | None]]:
    """Each pod's nodes by pod name without its index (``gangs/fits-1`` -> ``gangs/fits``), sorted."""
    out: dict[str, list[str | None]] = {}
    for pod, node in placed.items():
        out.setdefault(pod.rsplit("-", 1)[0], []).append(node)
    return {group: sorted(nodes, key=str) for group, nodes in out.items()}
