"""Builders for InterPodAffinity tests and benchmarks (upstream ``st.MakePod().PodAffinityIn(...)``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import msgspec

from ksched.api.core import Namespace, Node, Pod
from ksched.framework.snapshot import Snapshot
from ksched.framework.testing import FakeHandle, make_pod
from ksched.plugins.args.types import InterPodAffinityArgs
from ksched.plugins.interpodaffinity.plugin import InterPodAffinity, new

Term = dict[str, Any]


def term(
    topology_key: str,
    *,
    match_labels: Mapping[str, str] | None = None,
    expressions: Sequence[tuple[str, str, Sequence[str]]] = (),
    namespaces: Sequence[str] | None = None,
    namespace_selector: Mapping[str, Any] | None = None,
) -> Term:
    """A PodAffinityTerm; ``expressions`` are (key, operator, values)."""
    selector: dict[str, Any] = {}
    if match_labels is not None:
        selector["matchLabels"] = dict(match_labels)
    if expressions:
        selector["matchExpressions"] = [
            {"key": k, "operator": op, "values": list(vs)} for k, op, vs in expressions
        ]
    out: Term = {"labelSelector": selector, "topologyKey": topology_key}
    if namespaces is not None:
        out["namespaces"] = list(namespaces)
    if namespace_selector is not None:
        out["namespaceSelector"] = dict(namespace_selector)
    return out


def term_in(key: str, topology_key: str, values: Sequence[str], **kw: Any) -> Term:
    return term(topology_key, expressions=[(key, "In", values)], **kw)


def term_not_in(key: str, topology_key: str, values: Sequence[str], **kw: Any) -> Term:
    return term(topology_key, expressions=[(key, "NotIn", values)], **kw)


def term_exists(key: str, topology_key: str, **kw: Any) -> Term:
    return term(topology_key, expressions=[(key, "Exists", ())], **kw)


def affinity(
    *,
    required: Sequence[Term] | None = None,
    anti: Sequence[Term] | None = None,
    preferred: Sequence[tuple[int, Term]] | None = None,
    preferred_anti: Sequence[tuple[int, Term]] | None = None,
) -> dict[str, Any]:
    """An Affinity; a section given (even empty) is present, as upstream's builders make it."""
    out: dict[str, Any] = {}
    if required is not None or preferred is not None:
        pa: dict[str, Any] = {}
        if required:
            pa["requiredDuringSchedulingIgnoredDuringExecution"] = list(required)
        if preferred:
            pa["preferredDuringSchedulingIgnoredDuringExecution"] = [
                {"weight": w, "podAffinityTerm": t} for w, t in preferred
            ]
        out["podAffinity"] = pa
    if anti is not None or preferred_anti is not None:
        paa: dict[str, Any] = {}
        if anti:
            paa["requiredDuringSchedulingIgnoredDuringExecution"] = list(anti)
        if preferred_anti:
            paa["preferredDuringSchedulingIgnoredDuringExecution"] = [
                {"weight": w, "podAffinityTerm": t} for w, t in preferred_anti
            ]
        out["podAntiAffinity"] = paa
    return out


def pod(
    name: str = "pod",
    namespace: str = "",
    *,
    labels: Mapping[str, str] | None = None,
    node: str = "",
    aff: Mapping[str, Any] | None = None,
    requests: Mapping[str, str] | None = None,
) -> Pod:
    spec = {"affinity": dict(aff)} if aff else None
    return make_pod(name, namespace, labels=labels, node_name=node, spec=spec, requests=requests)


def node(
    name: str, labels: Mapping[str, str] | None = None, allocatable: Mapping[str, str] | None = None
) -> Node:
    """A node with exactly ``labels`` (no implicit hostname label, as upstream's test nodes)."""
    alloc = dict(allocatable or {"cpu": "4", "memory": "32Gi", "pods": "110"})
    raw = {
        "metadata": {"name": name, "labels": dict(labels or {})},
        "status": {"allocatable": alloc, "capacity": alloc},
    }
    return msgspec.convert(raw, Node)


def namespace(name: str, labels: Mapping[str, str] | None = None) -> Namespace:
    return msgspec.convert({"metadata": {"name": name, "labels": dict(labels or {})}}, Namespace)


def snapshot_of(
    nodes: Sequence[Node], pods: Sequence[Pod] = (), namespaces: Sequence[Namespace] = ()
) -> Snapshot:
    snap = Snapshot.build(list(nodes), list(pods))
    for ns in namespaces:
        snap.objects.namespaces[ns.metadata.name] = ns
    return snap


def plugin_for(snapshot: Snapshot, args: InterPodAffinityArgs | None = None) -> InterPodAffinity:
    return new(args, FakeHandle(snapshot))
