"""Builders for PodTopologySpread tests and benchmarks, shaped like upstream's ``st.MakePod()`` calls.

Nodes get exactly the labels given (no implicit hostname label), so upstream tables port as written.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import msgspec

from ksched.api.core import Node, Pod, TopologySpreadConstraint
from ksched.api.meta import LabelSelector
from ksched.apimachinery.labels import label_selector_as_selector
from ksched.framework.snapshot import Snapshot
from ksched.framework.testing import FakeHandle
from ksched.plugins.args.types import LIST_DEFAULTING, PodTopologySpreadArgs
from ksched.plugins.podtopologyspread.common import SelectorKey, selector_key
from ksched.plugins.podtopologyspread.plugin import PodTopologySpread
from ksched.plugins.podtopologyspread.scoring import PreScoreState

_uids = itertools.count(1)
NO_SCHEDULE_TAINT = {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}


def exists(*keys: str) -> dict[str, Any]:
    """A labelSelector requiring each key to exist (``st.MakeLabelSelector().Exists(k)``)."""
    return {"matchExpressions": [{"key": k, "operator": "Exists"} for k in keys]}


def match_labels(labels: Mapping[str, str], *exprs: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"matchLabels": dict(labels)}
    if exprs:
        out["matchExpressions"] = [dict(e) for e in exprs]
    return out


def spread(
    max_skew: int,
    key: str,
    when: str,
    selector: Mapping[str, Any] | None = None,
    min_domains: int | None = None,
    affinity_policy: str | None = None,
    taints_policy: str | None = None,
    match_label_keys: Sequence[str] | None = None,
) -> dict[str, Any]:
    """A topologySpreadConstraint in API shape (``SpreadConstraint(maxSkew, key, when, sel, ...)``)."""
    c: dict[str, Any] = {"maxSkew": max_skew, "topologyKey": key, "whenUnsatisfiable": when}
    if selector is not None:
        c["labelSelector"] = dict(selector)
    if min_domains is not None:
        c["minDomains"] = min_domains
    if affinity_policy is not None:
        c["nodeAffinityPolicy"] = affinity_policy
    if taints_policy is not None:
        c["nodeTaintsPolicy"] = taints_policy
    if match_label_keys is not None:
        c["matchLabelKeys"] = list(match_label_keys)
    return c


def constraint(**kwargs: Any) -> TopologySpreadConstraint:
    """A typed constraint from ``spread()`` arguments (for plugin args)."""
    return msgspec.convert(spread(**kwargs), TopologySpreadConstraint)


def pod(
    name: str = "p",
    namespace: str = "default",
    *,
    labels: Mapping[str, str] | None = None,
    node: str = "",
    constraints: Iterable[Mapping[str, Any]] = (),
    node_selector: Mapping[str, str] | None = None,
    affinity_in: tuple[str, Sequence[str]] | None = None,
    affinity_not_in: tuple[str, Sequence[str]] | None = None,
    tolerations: Iterable[str] = (),
    terminating: bool = False,
    owner: tuple[str, str, str] | None = None,
    nominated_node: str = "",
    uid: str | None = None,
) -> Pod:
    """A pod; ``owner`` is (apiVersion, kind, name) of its controller, ``tolerations`` are keys (Exists)."""
    meta: dict[str, Any] = {"name": name, "namespace": namespace, "uid": uid or f"{name}-{next(_uids)}"}
    if labels:
        meta["labels"] = dict(labels)
    if terminating:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    if owner is not None:
        api_version, kind, owner_name = owner
        meta["ownerReferences"] = [
            {
                "apiVersion": api_version,
                "kind": kind,
                "name": owner_name,
                "uid": f"u-{owner_name}",
                "controller": True,
            }
        ]
    spec: dict[str, Any] = {"containers": [{"name": "c"}], "schedulerName": "default-scheduler"}
    if node:
        spec["nodeName"] = node
    if constraints:
        spec["topologySpreadConstraints"] = [dict(c) for c in constraints]
    if node_selector:
        spec["nodeSelector"] = dict(node_selector)
    terms = []
    if affinity_in is not None:
        terms.append({"key": affinity_in[0], "operator": "In", "values": list(affinity_in[1])})
    if affinity_not_in is not None:
        terms.append({"key": affinity_not_in[0], "operator": "NotIn", "values": list(affinity_not_in[1])})
    if terms:
        required = {"nodeSelectorTerms": [{"matchExpressions": terms}]}
        spec["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": required}}
    if tolerations:
        spec["tolerations"] = [{"key": k, "operator": "Exists"} for k in tolerations]
    status: dict[str, Any] = {"nominatedNodeName": nominated_node} if nominated_node else {}
    return msgspec.convert({"metadata": meta, "spec": spec, "status": status}, Pod)


def node(name: str, labels: Mapping[str, str] | None = None, *, tainted: bool = False) -> Node:
    """A node with exactly ``labels``; ``tainted`` adds the unschedulable NoSchedule taint."""
    spec: dict[str, Any] = {"taints": [NO_SCHEDULE_TAINT]} if tainted else {}
    raw = {
        "metadata": {"name": name, "labels": dict(labels or {})},
        "spec": spec,
        "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}},
    }
    return msgspec.convert(raw, Node)


def zoned(name: str, zone: str, **extra: str) -> Node:
    """``st.MakeNode().Name(name).Label("zone", zone).Label("node", name)`` plus ``extra`` labels."""
    return node(name, {"zone": zone, "node": name, **extra})


def make_plugin(
    snapshot: Snapshot,
    default_constraints: Sequence[TopologySpreadConstraint] = (),
    defaulting_type: str = LIST_DEFAULTING,
) -> PodTopologySpread:
    args = PodTopologySpreadArgs(
        default_constraints=list(default_constraints), defaulting_type=defaulting_type
    )
    return PodTopologySpread(args, FakeHandle(snapshot))


def sel_key(selector: Mapping[str, Any] | None) -> SelectorKey:
    """The canonical key of an API-shaped labelSelector (None selects nothing)."""
    ls = None if selector is None else msgspec.convert(dict(selector), LabelSelector)
    return selector_key(label_selector_as_selector(ls))


def counts_by_value(state: PreScoreState, i: int) -> dict[str, int]:
    """Upstream's ``TopologyValueToPodCounts[i]`` of a PreScore state (empty for hostname constraints)."""
    counts = state.domain_counts[i]
    if counts is None:
        return {}
    values = state.topologies[i].values
    return {values[vid]: int(counts[vid]) for vid in range(len(counts)) if counts[vid] >= 0}
