"""kube-scheduler-simulator's result annotations, compared with the example of its documentation
(``simulator/docs/debuggable-scheduler.md`` in kubernetes-sigs/kube-scheduler-simulator: a pod
scheduled on one of two equal nodes): the same keys, the same JSON shapes and, where the values do
not depend on the nodes' sizes or the release's default plugins, the same values. Then ``ksched
simulate --output simulator`` end to end."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from ksched.api.files import decode_objects
from ksched.config import default_config
from ksched.config.profile import build_frameworks
from ksched.framework.algorithm import ScheduleAlgorithm
from ksched.reporting import simulator_results as sr
from ksched.simulate.cli import main as simulate_main
from ksched.simulate.cluster import build_cluster
from ksched.simulate.runner import PodOutcome, Simulation

# Values of the documented example (shortened to a node and a few plugins where long): the shape
# each annotation has.
DOCUMENTED: list[tuple[str, str]] = [
    (sr.BIND, '{"DefaultBinder":"success"}'),
    (
        sr.FILTER,
        '{"node-282x7":{"NodeName":"passed","NodeResourcesFit":"passed","TaintToleration":"passed"}}',
    ),
    (sr.FINAL_SCORE, '{"node-282x7":{"NodeResourcesFit":"73","TaintToleration":"300"}}'),
    (sr.PERMIT, "{}"),
    (sr.PERMIT_TIMEOUT, "{}"),
    (sr.POST_FILTER, "{}"),
    (sr.PRE_BIND, '{"VolumeBinding":"success"}'),
    (sr.PRE_FILTER_RESULT, "{}"),
    (sr.PRE_FILTER_STATUS, '{"NodeResourcesFit":"success","VolumeBinding":"success"}'),
    (sr.PRE_SCORE, '{"TaintToleration":"success"}'),
    (sr.RESERVE, '{"VolumeBinding":"success"}'),
    (sr.SCORE, '{"node-282x7":{"NodeResourcesFit":"73","TaintToleration":"0"}}'),
]

NODES = ["node-282x7", "node-gp9t4"]


def shape(value: Any) -> Any:
    """The JSON shape: ``str``, or a dict/list of the shape of its members (None when empty)."""
    if isinstance(value, dict):
        shapes = {json.dumps(shape(v)) for v in value.values()}
        assert len(shapes) <= 1, f"members of different shapes: {value}"
        return ["dict", json.loads(shapes.pop()) if shapes else None]
    if isinstance(value, list):
        shapes = {json.dumps(shape(v)) for v in value}
        return ["list", json.loads(shapes.pop()) if shapes else None]
    assert isinstance(value, str), value
    return "str"


def compatible(a: Any, b: Any) -> bool:
    """Equal shapes, an empty member (None) matching any."""
    if a is None or b is None:
        return True
    if isinstance(a, list) and isinstance(b, list):
        return a[0] == b[0] and compatible(a[1], b[1])
    return bool(a == b)


def node(name: str) -> dict[str, Any]:
    capacity = {"cpu": "4", "memory": "16Gi", "pods": "110"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "status": {"capacity": capacity, "allocatable": capacity},
    }


def pod(name: str, cpu: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
        "spec": {"containers": [{"name": "c", "image": "nginx", "resources": {"requests": {"cpu": cpu}}}]},
    }


def simulate(*pods: dict[str, Any]) -> list[PodOutcome]:
    objects = decode_objects([(f"obj {i}", o) for i, o in enumerate([*map(node, NODES), *pods])])
    config = default_config()
    cluster = build_cluster(objects, ["default-scheduler"])
    frameworks = build_frameworks(config, cluster.snapshot)
    return Simulation(cluster, frameworks, ScheduleAlgorithm(seed=1), record=True).run()


@pytest.fixture(scope="module")
def scheduled() -> dict[str, str]:
    (outcome,) = simulate(pod("hoge-pod", "100m"))
    assert outcome.record is not None and outcome.node in NODES
    return sr.result_annotations(outcome.record)


@pytest.mark.parametrize(("key", "documented"), DOCUMENTED, ids=[k.split("/")[1] for k, _ in DOCUMENTED])
def test_each_annotation_has_the_documented_shape(
    scheduled: dict[str, str], key: str, documented: str
) -> None:
    assert key.startswith("kube-scheduler-simulator.sigs.k8s.io/")
    ours = json.loads(scheduled[key])
    assert compatible(shape(json.loads(documented)), shape(ours)), (documented, scheduled[key])


def test_the_documented_case_gives_the_documented_values(scheduled: dict[str, str]) -> None:
    assert set(scheduled) == {k for k, _ in DOCUMENTED} | {sr.SELECTED_NODE}
    assert scheduled[sr.SELECTED_NODE] in NODES
    filtered = json.loads(scheduled[sr.FILTER])
    assert set(filtered) == set(NODES)
    for plugins in filtered.values():
        assert {"NodeName", "NodeResourcesFit", "TaintToleration", "NodeUnschedulable"} <= set(plugins)
        assert set(plugins.values()) == {"passed"}
    raw, final = json.loads(scheduled[sr.SCORE]), json.loads(scheduled[sr.FINAL_SCORE])
    for name in NODES:
        assert raw[name]["TaintToleration"] == "0" and final[name]["TaintToleration"] == "300"  # weight 3
        assert raw[name]["NodeResourcesFit"] == final[name]["NodeResourcesFit"]  # no normalize, weight 1
    assert json.loads(scheduled[sr.PRE_SCORE])["TaintToleration"] == "success"
    statuses = json.loads(scheduled[sr.PRE_FILTER_STATUS])
    assert statuses["NodeResourcesFit"] == "success"
    assert statuses["NodeAffinity"] == ""  # Skip: the simulator records Status.Message(), empty
    assert json.loads(scheduled[sr.RESERVE])["VolumeBinding"] == "success"


def test_an_unschedulable_pod_records_each_nodes_rejection_and_postfilter() -> None:
    (outcome,) = simulate(pod("huge", "64"))
    assert outcome.node is None and outcome.record is not None
    got = sr.result_annotations(outcome.record)
    filtered = json.loads(got[sr.FILTER])
    for name in NODES:
        assert filtered[name]["NodeResourcesFit"] == "Insufficient cpu"
        assert filtered[name]["NodeUnschedulable"] == "passed"
    assert json.loads(got[sr.POST_FILTER]) == {name: {} for name in NODES}  # no victim anywhere
    assert got[sr.SELECTED_NODE] == "" and json.loads(got[sr.SCORE]) == {}


def test_go_json_and_durations_as_go_writes_them() -> None:
    assert sr.go_json({"b": "x<y>&z", "a": "don't"}) == '{"a":"don\'t","b":"x\\u003cy\\u003e\\u0026z"}'
    from ksched.framework.record import go_duration

    table = [(0, "0s"), (1.5, "1.5s"), (60, "1m0s"), (7200, "2h0m0s"), (0.001, "1ms"), (90.25, "1m30.25s")]
    assert [go_duration(s) for s, _ in table] == [text for _, text in table]


def test_history_appends_and_drops_the_oldest_beyond_the_annotation_limit() -> None:
    first = sr.with_history({sr.SELECTED_NODE: "a"}, {})
    second = sr.with_history({sr.SELECTED_NODE: "b"}, first)
    assert [h[sr.SELECTED_NODE] for h in json.loads(second[sr.HISTORY])] == ["a", "b"]
    big = {sr.FILTER: "x" * (100 * 1024)}
    current: dict[str, str] = {}
    for _ in range(4):
        current = sr.with_history(big, current)
    assert len(current[sr.HISTORY].encode()) <= sr.TOTAL_ANNOTATION_SIZE_LIMIT
    assert len(json.loads(current[sr.HISTORY])) == 2


def test_simulate_output_simulator_prints_the_pods_with_their_annotations(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cluster = tmp_path / "cluster.yaml"
    docs = [*map(node, NODES), pod("fits", "100m"), pod("huge", "64")]
    docs[2]["metadata"]["resourceVersion"] = "7"
    cluster.write_text(yaml.safe_dump_all(docs))
    assert simulate_main(["--cluster", str(cluster), "--output", "simulator", "--seed", "1"]) == 0
    printed = list(yaml.safe_load_all(capsys.readouterr().out))
    by_name = {p["metadata"]["name"]: p for p in printed}
    assert set(by_name) == {"fits", "huge"}
    fits, huge = by_name["fits"], by_name["huge"]
    assert fits["spec"]["nodeName"] in NODES
    assert fits["metadata"]["annotations"][sr.SELECTED_NODE] == fits["spec"]["nodeName"]
    assert "resourceVersion" not in fits["metadata"]  # kubectl create takes it
    assert fits["spec"]["containers"][0]["image"] == "nginx"  # the manifest as read
    history = json.loads(fits["metadata"]["annotations"][sr.HISTORY])
    assert history[0][sr.FILTER] == fits["metadata"]["annotations"][sr.FILTER]
    assert "nodeName" not in huge["spec"]
    (condition,) = huge["status"]["conditions"]
    assert condition["reason"] == "Unschedulable" and condition["message"].startswith(
        "0/2 nodes are available"
    )
    assert "Insufficient cpu" in huge["metadata"]["annotations"][sr.FILTER]
