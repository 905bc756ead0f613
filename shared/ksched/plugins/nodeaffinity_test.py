"""NodeAffinity table tests ported from upstream ``node_affinity_test.go`` (checked against 1.36.2),
plus batch/per-node agreement properties."""

from __future__ import annotations

from typing import Any

import msgspec
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ksched.api.core import NodeAffinity as NodeAffinitySpec
from ksched.api.core import Pod
from ksched.framework.cycle_state import CycleState
from ksched.framework.events import ActionType, EventResource, QueueingHint
from ksched.framework.nodeinfo import NodeInfo
from ksched.framework.podinfo import PodInfo
from ksched.framework.results import PreFilterResult
from ksched.framework.status import Code, Status
from ksched.framework.testing import make_node, make_pod, make_snapshot
from ksched.plugins.args.types import NodeAffinityArgs
from ksched.plugins.nodeaffinity import (
    ERR_REASON_CONFLICT,
    ERR_REASON_ENFORCED,
    ERR_REASON_POD,
    NodeAffinity,
    new,
)

MAX = 100
NAME_FIELD = "metadata.name"


def expr(key: str, op: str, values: list[str] | None = None) -> dict[str, Any]:
    return {"key": key, "operator": op, **({"values": values} if values is not None else {})}


def term(
    exprs: list[dict[str, Any]] | None = None, fields: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if exprs is not None:
        out["matchExpressions"] = exprs
    if fields is not None:
        out["matchFields"] = fields
    return out


def required_spec(*terms: dict[str, Any]) -> dict[str, Any]:
    return {
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": list(terms)}
            }
        }
    }


def pod(spec: dict[str, Any] | None = None) -> Pod:
    return make_pod("p", spec=spec or {})


def added(raw: dict[str, Any]) -> NodeAffinityArgs:
    return NodeAffinityArgs(added_affinity=msgspec.convert(raw, NodeAffinitySpec))


UNRESOLVABLE_POD = Status.unresolvable(ERR_REASON_POD)
ADDED_NODE2 = {
    "requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [term(fields=[expr(NAME_FIELD, "In", ["node2"])])]
    }
}


# (name, pod spec, node labels, node name, want filter, want prefilter status, want prefilter result, args,
# run prefilter)
FILTER_CASES: list[
    tuple[
        str,
        dict[str, Any],
        dict[str, str],
        str,
        Status | None,
        Status | None,
        frozenset[str] | None,
        dict[str, Any] | None,
        bool,
    ]
] = [
    ("missing labels", {"nodeSelector": {"foo": "bar"}}, {}, "", UNRESOLVABLE_POD, None, None, None, True),
    ("same labels", {"nodeSelector": {"foo": "bar"}}, {"foo": "bar"}, "", None, None, None, None, True),
    (
        "node labels are superset",
        {"nodeSelector": {"foo": "bar"}},
        {"foo": "bar", "baz": "blah"},
        "",
        None,
        None,
        None,
        None,
        True,
    ),
    (
        "node labels are subset",
        {"nodeSelector": {"foo": "bar", "baz": "blah"}},
        {"foo": "bar"},
        "",
        UNRESOLVABLE_POD,
        None,
        None,
        None,
        True,
    ),
    (
        "Pod with matchExpressions using In operator that matches the existing node",
        required_spec(term([expr("foo", "In", ["bar", "value2"])])),
        {"foo": "bar"},
        "",
        None,
        None,
        None,
        None,
        True,
    ),
    (
        "Pod with matchExpressions using Gt operator that matches the existing node",
        required_spec(term([expr("kernel-version", "Gt", ["0204"])])),
        {"kernel-version": "0206"},
        "",
        None,
        None,
        None,
        None,
        True,
    ),
    (
        "Pod with matchExpressions using NotIn operator that matches the existing node",
        required_spec(term([expr("mem-type", "NotIn", ["DDR", "DDR2"])])),
        {"mem-type": "DDR3"},
        "",
        None,
        None,
        None,
        None,
        True,
    ),
    (
        "Pod with matchExpressions using Exists operator that matches the existing node",
        required_spec(term([expr("GPU", "Exists")])),
        {"GPU": "NVIDIA-GRID-K1"},
        "",
        None,
        None,
        None,
        None,
        True,
    ),
    (
        "Pod with affinity that don't match node's labels won't schedule onto the node",
        required_spec(term([expr("foo", "In", ["value1", "value2"])])),
        {"foo": "bar"},
        "",
        UNRESOLVABLE_POD,
        None,
        None,
        None,
        True,
    ),
    (
        "Pod with empty MatchExpressions is not a valid value will match no objects and won't schedule onto "
        "the node",
        required_spec(term([])),
        {"foo": "bar"},
        "",
        UNRESOLVABLE_POD,
        None,
        None,
        None,
        True,
    ),
    (
        "Pod with no Affinity will schedule onto a node",
        {},
        {"foo": "bar"},
        "",
        None,
        Status.skip(),
        None,
        None,
        True,
    ),
    (
        "Pod with Affinity but nil NodeSelector will schedule onto a node",
        {"affinity": {"nodeAffinity": {}}},
        {"foo": "bar"},
        "",
        None,
        Status.skip(),
        None,
        None,
        True,
    ),
    (
        "Pod with multiple matchExpressions ANDed that matches the existing node",
        required_spec(term([expr("GPU", "Exists"), expr("GPU", "NotIn", ["AMD", "INTER"])])),
        {"GPU": "NVIDIA-GRID-K1"},
        "",
        None,
        None,
        None,
        None,
        True,
    ),
    (
        "Pod with multiple matchExpressions ANDed that doesn't match the existing node",
        required_spec(term([expr("GPU", "Exists"), expr("GPU", "In", ["AMD", "INTER"])])),
        {"GPU": "NVIDIA-GRID-K1"},
        "",
        UNRESOLVABLE_POD,
        None,
        None,
        None,
        True,
    ),
    (
        "Pod with multiple NodeSelectorTerms ORed in affinity, matches the node's labels and will schedule "
        "onto the node",
        required_spec(
            term([expr("foo", "In", ["bar", "value2"])]), term([expr("diffkey", "In", ["wrong", "value2"])])
        ),
        {"foo": "bar"},
        "",
        None,
        None,
        None,
        None,
        True,
    ),
    (
        "Pod with an Affinity and a PodSpec.NodeSelector(the old thing that we are deprecating) both are "
        "satisfied, "
        "will schedule onto the node",
        {"nodeSelector": {"foo": "bar"}, **required_spec(term([expr("foo", "Exists")]))},
        {"foo": "bar"},
        "",
        None,
        None,
        None,
        None,
        True,
    ),
    (
        "Pod with an Affinity matches node's labels but the PodSpec.NodeSelector(the old thing that we are "
        "deprecating) "
        "is not satisfied, won't schedule onto the node",
        {"nodeSelector": {"foo": "bar"}, **required_spec(term([expr("foo", "Exists")]))},
        {"foo": "barrrrrr"},
        "",
        UNRESOLVABLE_POD,
        None,
        None,
        None,
        True,
    ),
    (
        "Pod with an invalid value in Affinity term won't be scheduled onto the node",
        required_spec(term([expr("foo", "NotIn", ["invalid value: ___@#$%^"])])),
        {"foo": "bar"},
        "",
        UNRESOLVABLE_POD,
        None,
        None,
        None,
        True,
    ),
    (
        "Pod with matchFields using In operator that matches the existing node",
        required_spec(term(fields=[expr(NAME_FIELD, "In", ["node1"])])),
        {},
        "node1",
        None,
        None,
        frozenset({"node1"}),
        None,
        True,
    ),
    (
        "Pod with matchFields using In operator that does not match the existing node",
        required_spec(term(fields=[expr(NAME_FIELD, "In", ["node1"])])),
        {},
        "node2",
        UNRESOLVABLE_POD,
        None,
        frozenset({"node1"}),
        None,
        True,
    ),
    (
        "Pod with two terms: matchFields does not match, but matchExpressions matches",
        required_spec(
            term(fields=[expr(NAME_FIELD, "In", ["node1"]), expr(NAME_FIELD, "In", ["node2"])]),
            term([expr("foo", "In", ["bar"])]),
        ),
        {"foo": "bar"},
        "node2",
        None,
        None,
        None,
        None,
        True,
    ),
    (
        "Pod with one term: matchFields does not match, but matchExpressions matches",
        required_spec(term([expr("foo", "In", ["bar"])], [expr(NAME_FIELD, "In", ["node1"])])),
        {"foo": "bar"},
        "node2",
        UNRESOLVABLE_POD,
        None,
        frozenset({"node1"}),
        None,
        True,
    ),
    (
        "Pod with one term: both matchFields and matchExpressions match",
        required_spec(term([expr("foo", "In", ["bar"])], [expr(NAME_FIELD, "In", ["node1"])])),
        {"foo": "bar"},
        "node1",
        None,
        None,
        frozenset({"node1"}),
        None,
        True,
    ),
    (
        "Pod with two terms: both matchFields and matchExpressions do not match",
        required_spec(
            term(fields=[expr(NAME_FIELD, "In", ["node1"])]), term([expr("foo", "In", ["not-match-to-bar"])])
        ),
        {"foo": "bar"},
        "node2",
        UNRESOLVABLE_POD,
        None,
        None,
        None,
        True,
    ),
    (
        "Pod with two terms of node.Name affinity",
        required_spec(
            term(fields=[expr(NAME_FIELD, "In", ["node1"])]), term(fields=[expr(NAME_FIELD, "In", ["node2"])])
        ),
        {},
        "node2",
        None,
        None,
        frozenset({"node1", "node2"}),
        None,
        True,
    ),
    (
        "Pod with two conflicting mach field requirements",
        required_spec(term(fields=[expr(NAME_FIELD, "In", ["node1"]), expr(NAME_FIELD, "In", ["node2"])])),
        {"foo": "bar"},
        "node2",
        UNRESOLVABLE_POD,
        Status.unresolvable(ERR_REASON_CONFLICT),
        None,
        None,
        True,
    ),
    (
        "Matches added affinity and Pod's node affinity",
        required_spec(term([expr("zone", "In", ["foo"])])),
        {"zone": "foo"},
        "node2",
        None,
        None,
        None,
        ADDED_NODE2,
        True,
    ),
    (
        "Matches added affinity but not Pod's node affinity",
        required_spec(term([expr("zone", "In", ["bar"])])),
        {"zone": "foo"},
        "node2",
        UNRESOLVABLE_POD,
        None,
        None,
        ADDED_NODE2,
        True,
    ),
    (
        "Doesn't match added affinity",
        {},
        {"zone": "foo"},
        "node2",
        Status.unresolvable(ERR_REASON_ENFORCED),
        None,
        None,
        {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [term([expr("zone", "In", ["bar"])])]
            }
        },
        True,
    ),
    (
        "Matches node selector correctly even if PreFilter is not called",
        {"nodeSelector": {"foo": "bar"}},
        {"foo": "bar", "baz": "blah"},
        "",
        None,
        None,
        None,
        None,
        False,
    ),
    (
        "Matches node affinity correctly even if PreFilter is not called",
        required_spec(term([expr("GPU", "Exists"), expr("GPU", "NotIn", ["AMD", "INTER"])])),
        {"GPU": "NVIDIA-GRID-K1"},
        "",
        None,
        None,
        None,
        None,
        False,
    ),
]


@pytest.mark.parametrize(
    ("spec", "labels", "node_name", "want", "want_pf_status", "want_pf_names", "args", "run_pre_filter"),
    [c[1:] for c in FILTER_CASES],
    ids=[c[0] for c in FILTER_CASES],
)
def test_node_affinity(
    spec: dict[str, Any],
    labels: dict[str, str],
    node_name: str,
    want: Status | None,
    want_pf_status: Status | None,
    want_pf_names: frozenset[str] | None,
    args: dict[str, Any] | None,
    run_pre_filter: bool,
) -> None:
    pl = NodeAffinity(added(args) if args else None)
    node = make_node(node_name, labels=labels)
    pi = PodInfo(pod(spec))
    state = CycleState()
    if run_pre_filter:
        result, status = pl.pre_filter(state, pi, [])
        assert status == want_pf_status
        assert result == (PreFilterResult(want_pf_names) if want_pf_names is not None else None)
    assert pl.filter(state, pi, NodeInfo(node)) == want
    if node_name:  # the batch path needs a snapshot row (nodes there always have names)
        snapshot = make_snapshot([node])
        assert pl.filter_batch(state, pi, snapshot, np.array([0], dtype=np.intp)).tolist() == [want is None]


LABEL1 = {"foo": "bar"}
LABEL2 = {"key": "value"}
LABEL3 = {"az": "az1"}
LABEL4 = {"abc": "az11", "def": "az22"}
LABEL5 = {"foo": "bar", "key": "value", "az": "az1"}
AFFINITY1 = {
    "nodeAffinity": {
        "preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 2, "preference": term([expr("foo", "In", ["bar"])])}
        ]
    }
}
AFFINITY2 = {
    "nodeAffinity": {
        "preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 2, "preference": term([expr("foo", "In", ["bar"])])},
            {"weight": 4, "preference": term([expr("key", "In", ["value"])])},
            {
                "weight": 5,
                "preference": term(
                    [expr("foo", "In", ["bar"]), expr("key", "In", ["value"]), expr("az", "In", ["az1"])]
                ),
            },
        ]
    }
}

# (name, affinity, nodes, expected, args, run prescore)
PRIORITY_CASES: list[
    tuple[
        str, dict[str, Any] | None, list[tuple[str, dict[str, str]]], list[int], dict[str, Any] | None, bool
    ]
] = [
    (
        "all nodes are same priority as NodeAffinity is nil",
        None,
        [("node1", LABEL1), ("node2", LABEL2), ("node3", LABEL3)],
        [0, 0, 0],
        None,
        False,
    ),
    (
        "no node matches preferred scheduling requirements in NodeAffinity of pod so all nodes' priority is "
        "zero",
        AFFINITY1,
        [("node1", LABEL4), ("node2", LABEL2), ("node3", LABEL3)],
        [0, 0, 0],
        None,
        True,
    ),
    (
        "only node1 matches the preferred scheduling requirements of pod",
        AFFINITY1,
        [("node1", LABEL1), ("node2", LABEL2), ("node3", LABEL3)],
        [MAX, 0, 0],
        None,
        True,
    ),
    (
        "all nodes matches the preferred scheduling requirements of pod but with different priorities ",
        AFFINITY2,
        [("node1", LABEL1), ("node5", LABEL5), ("node2", LABEL2)],
        [18, MAX, 36],
        None,
        True,
    ),
    (
        "added affinity",
        None,
        [("node1", LABEL1), ("node2", LABEL2)],
        [MAX, 0],
        AFFINITY1["nodeAffinity"],
        True,
    ),
    (
        "added affinity and pod has default affinity",
        AFFINITY1,
        [("node1", LABEL1), ("node2", LABEL2), ("node3", LABEL5)],
        [40, 60, MAX],
        {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 3, "preference": term([expr("key", "In", ["value"])])}
            ]
        },
        True,
    ),
    (
        "calculate the priorities correctly even if PreScore is not called",
        AFFINITY2,
        [("node1", LABEL1), ("node5", LABEL5), ("node2", LABEL2)],
        [18, MAX, 36],
        None,
        False,
    ),
]


@pytest.mark.parametrize(
    ("affinity", "nodes", "expected", "args", "run_pre_score"),
    [c[1:] for c in PRIORITY_CASES],
    ids=[c[0] for c in PRIORITY_CASES],
)
def test_node_affinity_priority(
    affinity: dict[str, Any] | None,
    nodes: list[tuple[str, dict[str, str]]],
    expected: list[int],
    args: dict[str, Any] | None,
    run_pre_score: bool,
) -> None:
    pl = NodeAffinity(added(args) if args else None)
    snapshot = make_snapshot([make_node(n, labels=lbl) for n, lbl in nodes])
    pi = PodInfo(pod({"affinity": affinity} if affinity else {}))
    state = CycleState()
    if run_pre_score:
        assert pl.pre_score(state, pi, snapshot.nodes) is None
    scores = np.array([pl.score(state, pi, ni) for ni in snapshot.nodes], dtype=np.int64)
    assert (
        pl.score_batch(state, pi, snapshot, np.arange(len(nodes), dtype=np.intp)).tolist() == scores.tolist()
    )
    assert pl.normalize_score(state, pi, snapshot.nodes, scores) is None
    assert scores.tolist() == expected


def test_skip_is_returned_in_pre_score_when_node_affinity_is_nil() -> None:
    snapshot = make_snapshot([make_node("node1", labels=LABEL1)])
    assert NodeAffinity().pre_score(CycleState(), PodInfo(pod()), snapshot.nodes) == Status.skip()


def test_pre_score_returns_error_when_an_incoming_pod_has_a_broken_affinity() -> None:
    broken = {
        "nodeAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 2, "preference": term([expr("invalid key", "In", ["bar"])])}
            ]
        }
    }
    status = NodeAffinity().pre_score(CycleState(), PodInfo(pod({"affinity": broken})), [])
    assert status is not None and status.code == Code.ERROR
    assert status.message == (
        '[0].matchExpressions[0].key: Invalid value: "invalid key": name part must consist of alphanumeric '
        "characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  "
        "or "
        "'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
    )


def test_pre_score_is_not_skipped_with_added_preferred_terms_only() -> None:
    pl = NodeAffinity(added(AFFINITY1["nodeAffinity"]))
    assert pl.pre_score(CycleState(), PodInfo(pod()), []) is None


def test_new_rejects_invalid_added_affinity() -> None:
    args = added(
        {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [term([expr("a/b/c", "In", ["x"])])]
            }
        }
    )
    with pytest.raises(
        ValueError,
        match=r"addedAffinity\.requiredDuringSchedulingIgnoredDuringExecution\.nodeSelectorTerms\[0\]",
    ):
        new(args, None)  # type: ignore[arg-type]


POD_WITH_NODE_AFFINITY = required_spec(term([expr("foo", "In", ["bar"])]))
ENFORCED_FOO_BAR = {
    "requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [term([expr("foo", "In", ["bar"])])]
    }
}
HINT_CASES: list[tuple[str, dict[str, Any] | None, Any, Any, QueueingHint | None]] = [
    ("backoff-wrong-new-object", None, None, "not-a-node", None),
    ("backoff-wrong-old-object", None, "not-a-node", make_node("n"), None),
    ("skip-queue-on-add", None, None, make_node("n"), QueueingHint.QUEUE_SKIP),
    ("queue-on-add", None, None, make_node("n", labels={"foo": "bar"}), QueueingHint.QUEUE),
    (
        "skip-unrelated-changes",
        None,
        make_node("n"),
        make_node("n", capacity={"cpu": "1"}),
        QueueingHint.QUEUE_SKIP,
    ),
    (
        "skip-unrelated-changes-on-labels",
        None,
        make_node("n"),
        make_node("n", labels={"k": "v"}),
        QueueingHint.QUEUE_SKIP,
    ),
    (
        "skip-labels-changes-on-suitable-node",
        None,
        make_node("n", labels={"foo": "bar"}),
        make_node("n", labels={"foo": "bar", "k": "v"}),
        QueueingHint.QUEUE_SKIP,
    ),
    (
        "skip-labels-changes-on-node-from-suitable-to-unsuitable",
        None,
        make_node("n", labels={"foo": "bar"}),
        make_node("n", labels={"k": "v"}),
        QueueingHint.QUEUE_SKIP,
    ),
    (
        "queue-on-labels-change-makes-pod-schedulable",
        None,
        make_node("n"),
        make_node("n", labels={"foo": "bar"}),
        QueueingHint.QUEUE,
    ),
    (
        "skip-queue-on-add-scheduler-enforced-node-affinity",
        ENFORCED_FOO_BAR,
        None,
        make_node("n"),
        QueueingHint.QUEUE_SKIP,
    ),
    (
        "queue-on-add-scheduler-enforced-node-affinity",
        ENFORCED_FOO_BAR,
        None,
        make_node("n", labels={"foo": "bar"}),
        QueueingHint.QUEUE,
    ),
]


@pytest.mark.parametrize(
    ("args", "old", "new_obj", "expected"), [c[1:] for c in HINT_CASES], ids=[c[0] for c in HINT_CASES]
)
def test_is_schedulable_after_node_change(
    args: dict[str, Any] | None, old: Any, new_obj: Any, expected: QueueingHint | None
) -> None:
    pl = NodeAffinity(added(args) if args else None)
    p = pod(POD_WITH_NODE_AFFINITY)
    if expected is None:  # upstream returns an error, which the queue treats as Queue
        with pytest.raises(TypeError):
            pl.hint_node_change(p, old, new_obj)
        return
    assert pl.hint_node_change(p, old, new_obj) == expected


def test_hint_surfaces_parse_errors_when_nothing_matched() -> None:
    broken = pod(required_spec(term([expr("foo", "NotIn", ["bad value!"])])))
    with pytest.raises(ValueError, match="Invalid value"):
        NodeAffinity().hint_node_change(broken, None, make_node("n"))


def test_events_to_register_with_queueing_hints() -> None:
    (event,) = NodeAffinity().events_to_register()
    assert (event.event.resource, event.event.action) == (
        EventResource.NODE,
        ActionType.ADD | ActionType.UPDATE_NODE_LABEL,
    )
    assert event.hint is not None


def test_pre_filter_result_ignores_terms_with_other_fields() -> None:
    # matchFields NotIn does not pin names: the term makes every node eligible.
    p = pod(required_spec(term(fields=[expr(NAME_FIELD, "NotIn", ["node1"])])))
    assert NodeAffinity().pre_filter(CycleState(), PodInfo(p), []) == (None, None)


# --- batch agreement ---------------------------------------------------------------------------------
LABEL_KEYS = ["zone", "gpu", "n"]
LABEL_VALUES = ["a", "b", "1", "20", "-3", "0x1", "1_0"]
labels_st = st.dictionaries(st.sampled_from(LABEL_KEYS), st.sampled_from(LABEL_VALUES), max_size=3)
req_st = st.builds(
    expr,
    st.sampled_from([*LABEL_KEYS, "bad key!"]),
    st.sampled_from(["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", "Bogus"]),
    st.one_of(st.none(), st.lists(st.sampled_from([*LABEL_VALUES, "bad value!"]), max_size=2)),
)
field_st = st.builds(
    expr,
    st.sampled_from([NAME_FIELD, "spec.other"]),
    st.sampled_from(["In", "NotIn", "Exists"]),
    st.lists(st.sampled_from(["n0", "n1", "n9", ""]), min_size=1, max_size=2),
)
term_st = st.builds(
    term,
    st.one_of(st.none(), st.lists(req_st, max_size=2)),
    st.one_of(st.none(), st.lists(field_st, max_size=1)),
)


@settings(max_examples=200, deadline=None)
@given(
    nodes=st.lists(labels_st, min_size=1, max_size=8),
    selector=st.dictionaries(st.sampled_from(LABEL_KEYS), st.sampled_from(LABEL_VALUES), max_size=2),
    required=st.one_of(st.none(), st.lists(term_st, max_size=3)),
    preferred=st.lists(st.tuples(st.integers(0, 5), term_st), max_size=3),
)
def test_batch_filter_and_score_agree_with_per_node(
    nodes: list[dict[str, str]],
    selector: dict[str, str],
    required: list[dict[str, Any]] | None,
    preferred: list[tuple[int, dict[str, Any]]],
) -> None:
    snapshot = make_snapshot([make_node(f"n{i}", labels=lbl) for i, lbl in enumerate(nodes)])
    spec: dict[str, Any] = {"nodeSelector": selector}
    node_affinity: dict[str, Any] = {}
    if required is not None:
        node_affinity["requiredDuringSchedulingIgnoredDuringExecution"] = {"nodeSelectorTerms": required}
    if preferred:
        node_affinity["preferredDuringSchedulingIgnoredDuringExecution"] = [
            {"weight": w, "preference": t} for w, t in preferred
        ]
    spec["affinity"] = {"nodeAffinity": node_affinity}
    pi = PodInfo(pod(spec))
    pl = NodeAffinity()
    rows = np.arange(len(nodes), dtype=np.intp)[::-1].copy()
    state = CycleState()
    pl.pre_filter(state, pi, snapshot.nodes)
    assert pl.filter_batch(state, pi, snapshot, rows).tolist() == [
        pl.filter(state, pi, snapshot.nodes[r]) is None for r in rows
    ]
    status = pl.pre_score(state, pi, snapshot.nodes)
    if status is None:
        assert pl.score_batch(state, pi, snapshot, rows).tolist() == [
            pl.score(state, pi, snapshot.nodes[r]) for r in rows
        ]
