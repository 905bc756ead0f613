"""The informer's check of a placement a scheduler replica decided on an older snapshot.

The replica ran the profile's PreFilter and Filter for ``pod`` and they passed ``node`` on its
snapshot at generation G (plus its own placements the informer had not answered yet, which it
names: ``relied_on``). The placement is accepted iff they pass ``node`` on the cache now. Running
them all again costs what a cycle costs, so the check reads what changed after G
(:class:`~ksched.cache.changelog.ChangeLog`): it runs nothing when no change can turn any plugin's
pass into a failure, NodeResourcesFit and NodePorts alone when pods were added to the node and
nothing else matters, and the whole PreFilter and Filter otherwise (:class:`FullCheck` says why).
Why the verdicts are equal is in docs/architecture.md ("The assume check");
``tests/cache/test_assume_check_property.py`` compares them over random changes.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum

from ksched.api.core import Pod
from ksched.cache.changelog import Change, NodeChange, ObjectChange, PodChange
from ksched.framework.cycle_state import CycleState
from ksched.framework.nodeinfo import NodeInfo
from ksched.framework.podinfo import PodInfo
from ksched.framework.runtime import Framework, PluginsByPoint
from ksched.framework.selectors import SelectorError
from ksched.framework.snapshot import Snapshot
from ksched.framework.status import Code, Status, is_skip
from ksched.plugins.interpodaffinity.plugin import NAME as INTER_POD_AFFINITY
from ksched.plugins.interpodaffinity.plugin import resolve_terms
from ksched.plugins.interpodaffinity.terms import AffinityTerm, parsed_terms, pod_matches_all_terms
from ksched.plugins.podtopologyspread.common import DO_NOT_SCHEDULE, Constraint
from ksched.plugins.podtopologyspread.plugin import NAME as POD_TOPOLOGY_SPREAD
from ksched.plugins.podtopologyspread.plugin import PodTopologySpread

MAX_CHANGES = 512
"""The bound: with more changes after the decision's generation the whole filter runs (reading
that many changes would cost about as much; a replica that far behind is rare)."""

NODE_OBJECT_PLUGINS = frozenset(
    {"NodeUnschedulable", "NodeName", "TaintToleration", "NodeAffinity", "NodeDeclaredFeatures"}
)
"""Filters that read the pod and the node object only."""
NODE_POD_PLUGINS = ("NodeResourcesFit", "NodePorts")
"""Filters that also read the node's pods (their requests and host ports)."""
VOLUME_PLUGINS = frozenset(
    {"VolumeRestrictions", "NodeVolumeLimits", "VolumeBinding", "VolumeZone", "DynamicResources"}
)
"""Filters that pass (skip) pods without volumes or claims; the others are always fully checked."""
KNOWN_PLUGINS = frozenset(
    {*NODE_OBJECT_PLUGINS, *NODE_POD_PLUGINS, *VOLUME_PLUGINS, INTER_POD_AFFINITY, POD_TOPOLOGY_SPREAD}
)

_WORKLOAD_KINDS = frozenset({"Service", "ReplicaSet", "StatefulSet", "ReplicationController"})
"""Objects that make a pod's default spread constraints (``PodTopologySpreadArgs.defaultConstraints``)."""


class FullCheck(StrEnum):
    """Why the whole PreFilter and Filter ran (label of ``ksched_assume_full_checks_total``)."""

    PROFILE = "profile"
    """The profile has a PreFilter or Filter plugin whose inputs this module does not know."""
    VOLUMES = "volumes"
    """The pod has volumes or resource claims the volume plugins check."""
    HISTORY = "history"
    """The change log no longer holds the changes after the decision, or holds more than the bound."""
    POD = "pod"
    """The pod changed (labels or spec) after the replica decided."""
    NOMINATED = "nominated"
    """Pods of at least the pod's priority are nominated to the node."""
    NODE = "node"
    """The node object changed."""
    OBJECT = "object"
    """A namespace (labels select pods' namespaces) or, for default spread constraints, a workload changed."""
    RELIED_ON = "relied-on"
    """A placement the replica counted when it decided is not in the cache (rejected, forgotten)."""
    AFFINITY = "affinity"
    """A pod matching the pod's required affinity changed, or a node did."""
    SPREAD = "spread"
    """A pod its hard spread constraints count changed in a way that can raise the skew, or a node did."""
    ANTI_AFFINITY = "anti-affinity"
    """A changed pod's required anti-affinity selects the pod in the node's domain, or the pod's own
    required anti-affinity selects a changed pod there: the filter fails (it runs for its message)."""
    NODE_PODS = "node-pods"
    """The node's pods changed and NodeResourcesFit or NodePorts now refuses."""


@dataclass(frozen=True, slots=True)
class CheckResult:
    status: Status | None
    """The filter's failure (upstream's status and message); None: accepted."""
    full: str = ""
    """A :class:`FullCheck` value when the whole filter ran, else ''."""


def check_placement(
    fw: Framework,
    pod: PodInfo,
    node: NodeInfo,
    changes: Sequence[Change] | None,
    *,
    relied_on: Mapping[str, str] | None = None,
    pod_changed: bool = False,
) -> CheckResult:
    """Would the profile's PreFilter and Filter pass ``pod`` (with ``spec.nodeName`` set) on ``node``
    of ``fw``'s snapshot, given that they passed on the replica's snapshot before ``changes``?

    ``changes``: the cache's changes after the decision's generation (None when not known);
    ``relied_on``: uid -> node of the replica's own placements it counted but the decision's
    generation does not include; ``pod_changed``: the pod differs from the version decided on.
    """
    why, node_pods = _plan(fw, pod, node, changes, relied_on or {}, pod_changed)
    if not why and node_pods:
        status = run_node_pod_plugins(fw, pod, node)
        if status is None:
            return CheckResult(None)
        why = FullCheck.NODE_PODS
    if not why:
        return CheckResult(None)
    return CheckResult(full_filter(fw, pod, node), why)


def full_filter(fw: Framework, pod: PodInfo, node: NodeInfo) -> Status | None:
    """The profile's PreFilter over the snapshot, then its Filter on ``node`` with the pods nominated
    there (as a scheduling cycle evaluates one node); the first failure, None when it passes."""
    state = CycleState()
    result, status, _ = fw.run_pre_filter_plugins(state, pod)
    if status is not None and status.code != Code.SUCCESS:
        return status
    if result is not None and result.node_names is not None and node.name not in result.node_names:
        return Status.unresolvable("node(s) didn't satisfy plugin(s) at PreFilter")
    return fw.run_filter_plugins_with_nominated_pods(state, pod, node)


def run_node_pod_plugins(fw: Framework, pod: PodInfo, node: NodeInfo) -> Status | None:
    """PreFilter and Filter of the profile's NodeResourcesFit and NodePorts alone, in order."""
    state = CycleState()
    skipped: set[str] = set()
    nodes = fw.snapshot.nodes
    try:
        for pl in fw.plugins.pre_filter:
            if pl.name in NODE_POD_PLUGINS:
                _, st = pl.pre_filter(state, pod, nodes)
                if is_skip(st):
                    skipped.add(pl.name)
                elif st is not None and st.code != Code.SUCCESS:
                    return st.with_plugin(pl.name)
        for fl in fw.plugins.filter:
            if fl.name in NODE_POD_PLUGINS and fl.name not in skipped:
                st = fl.filter(state, pod, node)
                if st is not None and st.code != Code.SUCCESS:
                    return st.with_plugin(fl.name)
    except Exception as exc:  # the whole filter will say it properly
        return Status.as_error(exc)
    return None


def counts_on_other_pods(fw: Framework, pod: PodInfo) -> bool:
    """Whether other pods' presence can be what lets ``pod`` pass (its required pod affinity, its
    hard topology spread). A replica names its unconfirmed placements for such a pod: the informer
    must know whether the state the decision saw still holds them (``relied_on``)."""
    profile = _profile(fw)
    if not profile.known:
        return False  # the informer runs the whole filter anyway
    if profile.inter_pod_affinity and parsed_terms(pod).required_affinity:
        return True
    if profile.spread is None:
        return False
    try:
        return bool(profile.spread.constraints(pod.pod, DO_NOT_SCHEDULE))
    except SelectorError:
        return False


def has_volumes_to_check(pod: Pod) -> bool:
    """Resource claims, or a volume that VolumeRestrictions, NodeVolumeLimits, VolumeBinding or
    VolumeZone read."""
    if pod.spec.resource_claims:
        return True
    return any(
        v.persistent_volume_claim is not None
        or v.ephemeral is not None
        or v.csi is not None
        or v.gce_persistent_disk is not None
        or v.aws_elastic_block_store is not None
        or v.rbd is not None
        or v.iscsi is not None
        for v in pod.spec.volumes
    )


# --- the profile ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Profile:
    plugins: PluginsByPoint
    """The plugin lists these facts were read from (a framework may get new ones)."""
    known: bool
    spread: PodTopologySpread | None
    inter_pod_affinity: bool


_profiles: weakref.WeakKeyDictionary[Framework, _Profile] = weakref.WeakKeyDictionary()


def _in_tree(plugin: object) -> bool:
    known = getattr(plugin, "name", "") in KNOWN_PLUGINS
    return known and type(plugin).__module__.startswith("ksched.plugins.")


def _profile(fw: Framework) -> _Profile:
    cached = _profiles.get(fw)
    if cached is not None and cached.plugins is fw.plugins:
        return cached
    plugins = fw.plugins
    known = all(_in_tree(pl) for pl in (*plugins.pre_filter, *plugins.filter))
    spread = next((pl for pl in plugins.filter if pl.name == POD_TOPOLOGY_SPREAD), None)
    profile = _Profile(
        plugins,
        known,
        spread if isinstance(spread, PodTopologySpread) else None,
        any(pl.name == INTER_POD_AFFINITY for pl in plugins.filter),
    )
    _profiles[fw] = profile
    return profile


# --- the pod -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Needs:
    """What of the pod's spec makes other pods matter to its filters."""

    affinity: Sequence[AffinityTerm]
    """Required affinity terms, namespaces resolved (as PreFilter matches them)."""
    anti: Sequence[AffinityTerm]
    spread: Sequence[Constraint]
    """Hard topology spread constraints (its own, or the profile's defaults)."""
    default_spread: bool
    namespace_selectors: bool
    """Its terms pick namespaces by their labels."""
    namespace_labels: Mapping[str, str]

    @property
    def counts_on_others(self) -> bool:
        return bool(self.affinity or self.spread)


def _needs(profile: _Profile, pod: PodInfo, snapshot: Snapshot) -> _Needs | FullCheck:
    affinity: Sequence[AffinityTerm] = ()
    anti: Sequence[AffinityTerm] = ()
    selectors = False
    if profile.inter_pod_affinity:
        parsed = parsed_terms(pod)
        if parsed.error is not None:
            return FullCheck.AFFINITY
        own = (*parsed.required_affinity, *parsed.required_anti_affinity)
        selectors = any(t.uses_namespace_labels for t in own)
        affinity = resolve_terms(snapshot, parsed.required_affinity)
        anti = resolve_terms(snapshot, parsed.required_anti_affinity)
    spread: Sequence[Constraint] = ()
    if profile.spread is not None:
        try:
            spread = profile.spread.constraints(pod.pod, DO_NOT_SCHEDULE)
        except SelectorError:
            return FullCheck.SPREAD
    return _Needs(
        affinity,
        anti,
        spread,
        bool(spread) and not pod.pod.spec.topology_spread_constraints,
        selectors,
        snapshot.objects.namespace_labels(pod.namespace),
    )


# --- the plan ------------------------------------------------------------------------------------


def _plan(
    fw: Framework,
    pod: PodInfo,
    node: NodeInfo,
    changes: Sequence[Change] | None,
    relied_on: Mapping[str, str],
    pod_changed: bool,
) -> tuple[str, bool]:
    """(why the whole filter must run, or ''; whether the node's pods changed)."""
    profile = _profile(fw)
    if not profile.known:
        return FullCheck.PROFILE, False
    if has_volumes_to_check(pod.pod):
        return FullCheck.VOLUMES, False
    if pod_changed:
        return FullCheck.POD, False
    if changes is None:
        return FullCheck.HISTORY, False
    snapshot = fw.snapshot
    needs = _needs(profile, pod, snapshot)
    if isinstance(needs, FullCheck):
        return needs, False
    if needs.counts_on_others and any(snapshot.location(uid) != where for uid, where in relied_on.items()):
        return FullCheck.RELIED_ON, False
    if fw.has_nominated_pods(node.name, pod):
        return FullCheck.NOMINATED, False
    node_pods = False
    placed: dict[str, None] = {}  # pods placed after the decision (ordered set)
    changed_nodes: set[str] = set()
    for change in changes:
        if isinstance(change, PodChange):
            if change.placed:
                node_pods = node_pods or change.node == node.name
                if change.pod.has_required_anti_affinity or needs.anti:
                    placed[change.pod.uid] = None
            why = _breaks_own_terms(change, pod, node, needs, snapshot)
            if why:
                return why, node_pods
        elif isinstance(change, NodeChange):
            if change.node == node.name:
                return FullCheck.NODE, node_pods
            if needs.spread:
                return FullCheck.SPREAD, node_pods
            if needs.affinity:
                return FullCheck.AFFINITY, node_pods
            changed_nodes.add(change.node)
        elif _object_matters(change, pod, needs):
            return FullCheck.OBJECT, node_pods
    if profile.inter_pod_affinity and (placed or changed_nodes):
        candidates = _candidates(snapshot, placed, changed_nodes, all_pods=bool(needs.anti))
        if _anti_affinity_violated(candidates, pod, node, needs):
            return FullCheck.ANTI_AFFINITY, node_pods
    return "", node_pods


def _breaks_own_terms(
    change: PodChange, pod: PodInfo, node: NodeInfo, needs: _Needs, snapshot: Snapshot
) -> str:
    """Whether ``change`` can turn the pod's required affinity or hard spread from pass to fail:
    any version of a pod its affinity counts (placed elsewhere it can void the first-pod rule,
    removed it can empty the domain); a pod its spread counts removed (the minimum may drop) or
    placed in the node's domain (its count rises). A pod placed in another domain only raises
    that domain's count, which never raises the skew."""
    other = change.pod
    if needs.affinity and pod_matches_all_terms(needs.affinity, other.pod):
        return FullCheck.AFFINITY
    if not needs.spread or other.namespace != pod.namespace:
        return ""
    for constraint in needs.spread:
        if not constraint.matches(other.labels):
            continue
        if not change.placed:
            return FullCheck.SPREAD
        where = snapshot.node_map.get(change.node)
        if where is None:
            return FullCheck.SPREAD
        value = where.labels.get(constraint.topology_key)
        if value is not None and value == node.labels.get(constraint.topology_key):
            return FullCheck.SPREAD
    return ""


def _object_matters(change: ObjectChange, pod: PodInfo, needs: _Needs) -> bool:
    """Namespaces: the pod's own (other pods' terms select it by its namespace's labels) or any
    when its terms select namespaces by label; workloads when its spread constraints are the
    profile's defaults (their selector comes from Services and controllers). Volume objects matter
    only to pods with volumes, which are always fully checked; the rest no filter reads."""
    if change.kind == "Namespace":
        return change.key == pod.namespace or needs.namespace_selectors
    return change.kind in _WORKLOAD_KINDS and needs.default_spread


def _candidates(
    snapshot: Snapshot, placed: Mapping[str, None], changed_nodes: set[str], *, all_pods: bool
) -> Iterator[tuple[PodInfo, NodeInfo]]:
    """Pods (as they are now) placed after the decision, and the pods of nodes that changed (their
    labels may have moved them into the node's domain): every pod when the pod has required
    anti-affinity of its own, else those with required anti-affinity."""
    node_map = snapshot.node_map
    for uid in placed:
        entry = snapshot.pod_locations.get(uid)
        if entry is not None:
            where = node_map.get(entry[1])
            if where is not None:  # a pod waiting for its node counts nowhere
                yield entry[0], where
    for name in changed_nodes:
        where = node_map.get(name)
        if where is not None:
            for other in where.pods if all_pods else where.pods_with_required_anti_affinity:
                yield other, where


def _anti_affinity_violated(
    candidates: Iterator[tuple[PodInfo, NodeInfo]], pod: PodInfo, node: NodeInfo, needs: _Needs
) -> bool:
    """InterPodAffinity's two anti-affinity rules for ``candidates`` on the cache now: an existing
    pod's required anti-affinity term selecting the pod, or the pod's own term selecting the other
    pod, with both nodes in one domain of the term's topology key."""
    labels = node.labels
    for other, where in candidates:
        if other.uid == pod.uid:
            continue
        there = where.labels
        if other.has_required_anti_affinity:
            for term in parsed_terms(other).required_anti_affinity:
                if _same_domain(there, labels, term.topology_key) and term.matches_pod(
                    pod.pod, needs.namespace_labels
                ):
                    return True
        for term in needs.anti:
            if _same_domain(there, labels, term.topology_key) and term.matches_pod(other.pod, None):
                return True
    return False


def _same_domain(a: Mapping[str, str], b: Mapping[str, str], key: str) -> bool:
    value = a.get(key)
    return value is not None and b.get(key) == value
