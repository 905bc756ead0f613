"""Spread constraints as the plugin uses them, and the helpers upstream keeps in ``common.go``.

A :class:`Constraint` is a pod's ``TopologySpreadConstraint`` with its label selector compiled
(``matchLabelKeys`` merged in), ``minDomains`` defaulted to 1 and the node inclusion policies
resolved (NodeInclusionPolicyInPodTopologySpread is on: affinity Honor, taints Ignore by default).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from ksched.api.core import Node, Pod, TopologySpreadConstraint
from ksched.apimachinery.labels import (
    Operator,
    Requirement,
    Selector,
    SelectorError,
    label_selector_as_selector,
)
from ksched.apimachinery.nodeselector import RequiredNodeAffinity
from ksched.framework.objects import ClusterObjects
from ksched.framework.podinfo import PodInfo
from ksched.framework.taints import find_untolerated_taint, is_schedule_effect

DO_NOT_SCHEDULE = "DoNotSchedule"
SCHEDULE_ANYWAY = "ScheduleAnyway"
HONOR = "Honor"
IGNORE = "Ignore"
LABEL_HOSTNAME = "kubernetes.io/hostname"
LABEL_TOPOLOGY_ZONE = "topology.kubernetes.io/zone"

SYSTEM_DEFAULT_CONSTRAINTS: tuple[TopologySpreadConstraint, ...] = (
    TopologySpreadConstraint(max_skew=3, topology_key=LABEL_HOSTNAME, when_unsatisfiable=SCHEDULE_ANYWAY),
    TopologySpreadConstraint(
        max_skew=5, topology_key=LABEL_TOPOLOGY_ZONE, when_unsatisfiable=SCHEDULE_ANYWAY
    ),
)
"""Upstream's ``systemDefaultConstraints`` (hostname first, then zone)."""

SelectorKey = tuple[tuple[str, str, tuple[str, ...]], ...] | None
"""A selector's canonical form: sorted, de-duplicated requirements; None selects nothing."""

_SAME_AS_IN = {
    Operator.EQUALS: Operator.IN,
    Operator.DOUBLE_EQUALS: Operator.IN,
    Operator.NOT_EQUALS: Operator.NOT_IN,
}


def selector_key(selector: Selector) -> SelectorKey:
    """Canonical, hashable form of ``selector`` (duplicate requirements collapse: they AND to the same)."""
    if selector.never:
        return None
    return tuple(
        sorted(
            {
                (r.key, str(_SAME_AS_IN.get(r.operator, r.operator)), tuple(sorted(set(r.values))))
                for r in selector.requirements
            }
        )
    )


@dataclass(frozen=True, slots=True)
class Constraint:
    """One spread constraint with its compiled selector (upstream ``topologySpreadConstraint``)."""

    max_skew: int
    topology_key: str
    selector: Selector
    key: SelectorKey
    min_domains: int = 1
    honor_node_affinity: bool = True
    honor_node_taints: bool = False

    def matches(self, labels: Mapping[str, str]) -> bool:
        return self.selector.matches(labels)


def merge_label_set_with_selector(match_labels: Mapping[str, str], selector: Selector) -> Selector:
    """``SelectorFromSet(matchLabels)`` ANDed with ``selector``'s requirements (nothing stays nothing)."""
    if selector.never:
        return selector
    return Selector.from_set(match_labels).add(*selector.requirements)


def filter_constraints(
    constraints: Sequence[TopologySpreadConstraint], pod_labels: Mapping[str, str], action: str
) -> list[Constraint]:
    """The constraints with ``whenUnsatisfiable == action``, compiled.

    ``matchLabelKeys`` values taken from the pod's labels are ANDed into the selector, as the
    1.36 scheduler still does even though the API server already merged them at creation:
    the repeated requirement selects the same pods, so nothing is counted twice.
    Raises :class:`ksched.apimachinery.labels.SelectorError` for a selector upstream rejects.
    """
    out: list[Constraint] = []
    for c in constraints:
        if c.when_unsatisfiable != action:
            continue
        selector = label_selector_as_selector(c.label_selector)
        if c.match_label_keys:
            match_labels = {k: pod_labels[k] for k in c.match_label_keys if k in pod_labels}
            if match_labels:
                selector = merge_label_set_with_selector(match_labels, selector)
        out.append(
            Constraint(
                max_skew=c.max_skew,
                topology_key=c.topology_key,
                selector=selector,
                key=selector_key(selector),
                min_domains=c.min_domains if c.min_domains is not None else 1,
                honor_node_affinity=(c.node_affinity_policy or HONOR) == HONOR,
                honor_node_taints=(c.node_taints_policy or IGNORE) == HONOR,
            )
        )
    return out


def node_has_all_keys(labels: Mapping[str, str], constraints: Sequence[Constraint]) -> bool:
    """Upstream ``nodeLabelsMatchSpreadConstraints``: every topology key is a label of the node."""
    return all(c.topology_key in labels for c in constraints)


def pod_matches_any(constraints: Sequence[Constraint], labels: Mapping[str, str]) -> bool:
    """Upstream ``podLabelsMatchSpreadConstraints``."""
    return any(c.matches(labels) for c in constraints)


def is_counted(pod: Pod, namespace: str) -> bool:
    """Pods that count towards spreading: same namespace, not terminating (upstream #87621)."""
    return pod.metadata.deletion_timestamp is None and pod.metadata.namespace == namespace


def count_matching(pods: Iterable[PodInfo], constraint: Constraint, namespace: str) -> int:
    """Upstream ``countPodsMatchSelector`` (an empty selector counts nothing)."""
    selector = constraint.selector
    if selector.empty:
        return 0
    return sum(1 for pi in pods if is_counted(pi.pod, namespace) and selector.matches(pi.labels))


def tolerates_node_taints(pod: Pod, node: Node) -> bool:
    """No NoSchedule/NoExecute taint of ``node`` is left untolerated by ``pod``."""
    if not node.spec.taints:
        return True
    return find_untolerated_taint(node.spec.taints, pod.spec.tolerations, is_schedule_effect) is None


def matches_inclusion_policies(
    constraint: Constraint, pod: Pod, node: Node, affinity: RequiredNodeAffinity
) -> bool:
    """Upstream ``matchNodeInclusionPolicies``: Honor policies exclude nodes the pod could not use."""
    if constraint.honor_node_affinity and not affinity.matches_node(node):
        return False
    return not (constraint.honor_node_taints and not tolerates_node_taints(pod, node))


# --- default constraints ------------------------------------------------------------------------

_RC = ("", "v1", "ReplicationController")
_RS = ("apps", "v1", "ReplicaSet")
_SS = ("apps", "v1", "StatefulSet")


def _parse_group_version(api_version: str) -> tuple[str, str] | None:
    """``schema.ParseGroupVersion``: "" and "v1" have no group; more than one '/' is an error."""
    if not api_version:
        return "", ""
    if api_version == "v1":
        return "", "v1"
    parts = api_version.split("/")
    if len(parts) == 1:
        return "", parts[0]
    if len(parts) == 2:
        return parts[0], parts[1]
    return None


def default_selector(pod: Pod, objects: ClusterObjects) -> Selector:
    """Upstream ``helper.DefaultSelector``: the selectors of the Services that select the pod, ANDed
    with the selector of its controlling ReplicationController, ReplicaSet or StatefulSet."""
    ns = pod.metadata.namespace
    labels = pod.metadata.labels
    label_set: dict[str, str] = {}
    for svc in objects.services.values():
        sel = svc.spec.selector
        # A nil (or, after the API round trip, empty) selector selects nothing.
        if svc.metadata.namespace != ns or not sel:
            continue
        if all(labels.get(k) == v for k, v in sel.items()):
            label_set.update(sel)
    extra: tuple[Requirement, ...] = ()
    owner = next((o for o in pod.metadata.owner_references if o.controller), None)
    gv = _parse_group_version(owner.api_version) if owner is not None else None
    if owner is not None and gv is not None:
        gvk = (gv[0], gv[1], owner.kind)
        key = f"{ns}/{owner.name}"
        if gvk == _RC:
            rc = objects.replication_controllers.get(key)
            if rc is not None:
                label_set.update(rc.spec.selector)
        elif gvk in (_RS, _SS):
            table = objects.replica_sets if gvk == _RS else objects.stateful_sets
            workload = table.get(key)
            if workload is not None:
                try:
                    other = label_selector_as_selector(workload.spec.selector)
                except SelectorError:
                    other = Selector.nothing()
                if not other.never:
                    extra = other.requirements
    return Selector.from_set(label_set).add(*extra)


def build_default_constraints(
    defaults: Sequence[TopologySpreadConstraint], pod: Pod, objects: ClusterObjects, action: str
) -> list[Constraint]:
    """Upstream ``buildDefaultConstraints``: ``defaults`` of ``action`` with the pod's default selector;
    none when that selector is empty."""
    if all(c.label_selector is None and not c.match_label_keys for c in defaults):
        # Compiling these cannot fail (no selector to parse), so the (usually empty) default selector
        # may be looked at first and the constraints compiled only when there is one.
        if not any(c.when_unsatisfiable == action for c in defaults):
            return []
        selector = default_selector(pod, objects)
        if selector.empty:
            return []
        constraints = filter_constraints(defaults, pod.metadata.labels, action)
    else:
        constraints = filter_constraints(defaults, pod.metadata.labels, action)
        if not constraints:
            return []
        selector = default_selector(pod, objects)
        if selector.empty:
            return []
    key = selector_key(selector)
    return [
        Constraint(
            max_skew=c.max_skew,
            topology_key=c.topology_key,
            selector=selector,
            key=key,
            min_domains=c.min_domains,
            honor_node_affinity=c.honor_node_affinity,
            honor_node_taints=c.honor_node_taints,
        )
        for c in constraints
    ]
