"""The informer's check of a placement a scheduler replica decided on an older snapshot.

The replica ran the profile's PreFilter and Filter for ``pod`` and they passed ``node`` on its
snapshot at generation G plus its own placements the informer had not answered yet (those it
refused: :mod:`ksched.cache.answers`). The placement is accepted iff they pass ``node`` on the
cache now. Running
them all again costs what a cycle costs, so the check reads what changed after G
(:class:`~ksched.cache.changelog.ChangeLog`) and finds the plugins a change can turn from pass to
fail: none (accepted, nothing runs), or some to run again alone (NodeResourcesFit and NodePorts
when pods were added to the node, PodTopologySpread or InterPodAffinity when pods their terms count
changed), or it runs the whole PreFilter and Filter (:class:`FullCheck` says why; also when a
plugin run again refuses, for the verdict and message). Why the verdicts are equal is in
docs/architecture.md ("The assume check"); ``tests/cache/test_assume_check_property.py`` compares
them over random changes.
"""

from __future__ import annotations

import weakref
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum

from ksched.api.core import Pod
from ksched.cache.changelog import ChangeLog, ObjectChange, PodChange
from ksched.framework.cycle_state import CycleState
from ksched.framework.nodeinfo import NodeInfo
from ksched.framework.podinfo import PodInfo
from ksched.framework.runtime import Framework, PluginsByPoint
from ksched.framework.snapshot import Snapshot
from ksched.framework.status import Code, Status, is_skip
from ksched.plugins.interpodaffinity.plugin import NAME as INTER_POD_AFFINITY
from ksched.plugins.interpodaffinity.plugin import resolve_terms
from ksched.plugins.interpodaffinity.terms import (
    AffinityTerm,
    LabelClass,
    class_matches_all_terms,
    label_class_of,
    parsed_terms,
)
from ksched.plugins.podtopologyspread.common import DO_NOT_SCHEDULE, Constraint
from ksched.plugins.podtopologyspread.filtering import PRE_FILTER_STATE_KEY as SPREAD_STATE_KEY
from ksched.plugins.podtopologyspread.filtering import PreFilterState as SpreadState
from ksched.plugins.podtopologyspread.plugin import NAME as POD_TOPOLOGY_SPREAD
from ksched.plugins.podtopologyspread.plugin import PodTopologySpread

MAX_CHANGES = 512
"""The bound: with more node and object changes after the decision's generation than this, the
whole filter runs."""
SCAN_LIMIT = 128
"""Pod changes after the decision's generation the check reads (its own replica's placements
aside, up to four times as many in all): all of them for a pod with required pod affinity,
anti-affinity or hard spread, else the pods with required anti-affinity placed. With more, the
plugins they concern (InterPodAffinity, PodTopologySpread) run again alone: reading on would cost
about as much."""

NODE_OBJECT_PLUGINS = frozenset(
    {"NodeUnschedulable", "NodeName", "TaintToleration", "NodeAffinity", "NodeDeclaredFeatures"}
)
"""Filters that read the pod and the node object only."""
NODE_POD_PLUGINS = frozenset({"NodeResourcesFit", "NodePorts"})
"""Filters that also read the node's pods (their requests and host ports)."""
VOLUME_PLUGINS = frozenset(
    {"VolumeRestrictions", "NodeVolumeLimits", "VolumeBinding", "VolumeZone", "DynamicResources"}
)
"""Filters that pass (skip) pods without volumes or claims; the others are always fully checked."""
KNOWN_PLUGINS = (
    NODE_OBJECT_PLUGINS | NODE_POD_PLUGINS | VOLUME_PLUGINS | {INTER_POD_AFFINITY, POD_TOPOLOGY_SPREAD}
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
    """The change log no longer holds the changes after the decision, or more than the bound."""
    POD = "pod"
    """The pod changed (labels or spec) after the replica decided, or its terms do not parse."""
    NOMINATED = "nominated"
    """Pods of at least the pod's priority are nominated to the node."""
    NODE = "node"
    """The node object changed."""
    OBJECT = "object"
    """A namespace (labels select pods' namespaces) or, for default spread constraints, a workload changed."""
    ANTI_AFFINITY = "anti-affinity"
    """A changed pod's required anti-affinity selects the pod in the node's domain, or the pod's own
    required anti-affinity selects a changed pod there: the filter fails (it runs for its message)."""
    REFUSED = "refused"
    """A plugin run again alone refused (the whole filter gives the verdict and the message)."""


@dataclass(frozen=True, slots=True)
class Decision:
    """What the replica decided on, besides the pod and the node."""

    generation: int | None
    """The cache generation of its snapshot (None: not one the cache can answer for)."""
    session: str = ""
    """The replica's session: placements the cache accepted from it after ``generation`` were in
    the state the decision saw (it decided them before, and counted them at once)."""
    refused: Sequence[PodInfo] = ()
    """Its placements the decision counted that the cache refused (not in the cache)."""
    refused_known: bool = True
    """False: the cache cannot tell which of those it refused."""
    spread_slack: int | None = None
    """How far the pod's skew at the node stayed below maxSkew (the least over its hard spread
    constraints, :func:`spread_slack`); None: not known."""
    pod_changed: bool = False
    """The pod's labels or spec differ from the version decided on."""


@dataclass(frozen=True, slots=True)
class CheckResult:
    status: Status | None
    """The filter's failure (upstream's status and message); None: accepted."""
    full: str = ""
    """A :class:`FullCheck` value when the whole filter ran, else ''."""
    rerun: tuple[str, ...] = ()
    """The plugins run again alone."""


_ACCEPTED = CheckResult(None)


def check_placement(
    fw: Framework, pod: PodInfo, node: NodeInfo, changes: ChangeLog, decision: Decision
) -> CheckResult:
    """Would the profile's PreFilter and Filter pass ``pod`` (with ``spec.nodeName`` set) on ``node``
    of ``fw``'s snapshot, given that they passed on the replica's snapshot of ``decision``?"""
    full, rerun = _plan(fw, pod, node, changes, decision)
    if not full and not rerun:
        return _ACCEPTED
    names = tuple(sorted(rerun))
    if not full:
        if run_plugins(fw, rerun, pod, node) is None:
            return CheckResult(None, "", names)
        full = FullCheck.REFUSED
    return CheckResult(full_filter(fw, pod, node), full, names)


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


def run_plugins(fw: Framework, names: Collection[str], pod: PodInfo, node: NodeInfo) -> Status | None:
    """PreFilter and Filter of the profile's plugins called ``names`` alone, in the profile's order
    (plugins whose PreFilter narrows no nodes); the first failure, None when they pass."""
    state = CycleState()
    skipped: set[str] = set()
    nodes = fw.snapshot.nodes
    try:
        for pl in fw.plugins.pre_filter:
            if pl.name in names:
                _, st = pl.pre_filter(state, pod, nodes)
                if is_skip(st):
                    skipped.add(pl.name)
                elif st is not None and st.code != Code.SUCCESS:
                    return st.with_plugin(pl.name)
        for fl in fw.plugins.filter:
            if fl.name in names and fl.name not in skipped:
                st = fl.filter(state, pod, node)
                if st is not None and st.code != Code.SUCCESS:
                    return st.with_plugin(fl.name)
    except Exception as exc:  # the whole filter will say it properly
        return Status.as_error(exc)
    return None


def spread_slack(state: CycleState, node: NodeInfo) -> int | None:
    """From a cycle's state: by how much the pod's skew on ``node`` stays below maxSkew, the least
    over its hard spread constraints (PodTopologySpread's PreFilter counts, as its Filter reads
    them); None when the pod has none."""
    s = state.get(SPREAD_STATE_KEY, SpreadState)
    if s is None or not s.constraints:
        return None
    labels = node.labels
    slack: int | None = None
    for i, c in enumerate(s.constraints):
        value = labels.get(c.topology_key)
        if value is None:
            return None
        room = c.max_skew - (s.domains[i].count(value) + s.self_match[i] - s.min_match(i))
        slack = room if slack is None else min(slack, room)
    return max(slack or 0, 0)


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
    plugins: PluginsByPoint = field(repr=False)
    """The plugin lists these facts were read from (a framework may get new ones)."""
    known: bool
    spread: PodTopologySpread | None
    hard_defaults: bool
    """PodTopologySpread's default constraints include DoNotSchedule ones."""
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
    found = next((pl for pl in plugins.filter if pl.name == POD_TOPOLOGY_SPREAD), None)
    spread = found if isinstance(found, PodTopologySpread) else None
    profile = _Profile(
        plugins,
        all(_in_tree(pl) for pl in (*plugins.pre_filter, *plugins.filter)),
        spread,
        spread is not None
        and any(c.when_unsatisfiable == DO_NOT_SCHEDULE for c in spread.default_constraints),
        any(pl.name == INTER_POD_AFFINITY for pl in plugins.filter),
    )
    _profiles[fw] = profile
    return profile


# --- the pod -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Needs:
    """What of the pod's spec makes other pods matter to its filters."""

    affinity: Sequence[AffinityTerm] = ()
    """Required affinity terms, namespaces resolved (as PreFilter matches them)."""
    anti: Sequence[AffinityTerm] = ()
    spread: Sequence[Constraint] = ()
    """Hard topology spread constraints (its own, or the profile's defaults)."""
    default_spread: bool = False
    namespace_selectors: bool = False
    """Its terms pick namespaces by their labels."""

    @property
    def counts_on_others(self) -> bool:
        """Other pods' presence can be what lets it pass (required affinity, hard spread)."""
        return bool(self.affinity or self.spread)

    def plugins(self) -> frozenset[str]:
        """The plugins other pods can make pass: those to run again when such pods may be gone."""
        used = ((INTER_POD_AFFINITY, self.affinity), (POD_TOPOLOGY_SPREAD, self.spread))
        return frozenset(name for name, terms in used if terms)

    def own_plugins(self) -> frozenset[str]:
        """The plugins that read other pods through the pod's own terms and constraints."""
        used = ((INTER_POD_AFFINITY, self.affinity or self.anti), (POD_TOPOLOGY_SPREAD, self.spread))
        return frozenset(name for name, terms in used if terms)


_NO_NEEDS = _Needs()


def _needs(profile: _Profile, pod: PodInfo, snapshot: Snapshot) -> _Needs | FullCheck:
    spec = pod.pod.spec
    aff = spec.affinity
    own_terms = aff is not None and (aff.pod_affinity is not None or aff.pod_anti_affinity is not None)
    hard_spread = profile.spread is not None and (
        any(c.when_unsatisfiable == DO_NOT_SCHEDULE for c in spec.topology_spread_constraints)
        or (not spec.topology_spread_constraints and profile.hard_defaults)
    )
    if not (own_terms and profile.inter_pod_affinity) and not hard_spread:
        return _NO_NEEDS
    affinity: Sequence[AffinityTerm] = ()
    anti: Sequence[AffinityTerm] = ()
    selectors = False
    if own_terms and profile.inter_pod_affinity:
        parsed = parsed_terms(pod)
        if parsed.error is not None:
            return FullCheck.POD
        selectors = any(
            t.uses_namespace_labels for t in (*parsed.required_affinity, *parsed.required_anti_affinity)
        )
        affinity = resolve_terms(snapshot, parsed.required_affinity)
        anti = resolve_terms(snapshot, parsed.required_anti_affinity)
    spread: Sequence[Constraint] = ()
    if hard_spread and profile.spread is not None:
        try:
            spread = profile.spread.constraints(pod.pod, DO_NOT_SCHEDULE)
        except ValueError:  # a selector the API would refuse (SelectorError): the filter says so
            return FullCheck.POD
    return _Needs(affinity, anti, spread, bool(spread) and not spec.topology_spread_constraints, selectors)


# --- the plan ------------------------------------------------------------------------------------


_NOTHING: frozenset[str] = frozenset()


def _plan(
    fw: Framework, pod: PodInfo, node: NodeInfo, log: ChangeLog, decision: Decision
) -> tuple[str, frozenset[str]]:
    """(why the whole filter must run, or ''; the plugins to run again alone)."""
    profile = _profile(fw)
    if not profile.known:
        return FullCheck.PROFILE, _NOTHING
    if has_volumes_to_check(pod.pod):
        return FullCheck.VOLUMES, _NOTHING
    since = decision.generation
    if decision.pod_changed:
        return FullCheck.POD, _NOTHING
    if since is None or not log.covers(since):
        return FullCheck.HISTORY, _NOTHING
    snapshot = fw.snapshot
    needs = _needs(profile, pod, snapshot)
    if isinstance(needs, FullCheck):
        return needs, _NOTHING
    if fw.has_nominated_pods(node.name, pod):
        return FullCheck.NOMINATED, _NOTHING
    nodes = log.nodes_since(since) if log.nodes_changed_since(since) else []
    objects = log.objects_since(since) if log.objects_changed_since(since) else []
    if len(nodes) + len(objects) > MAX_CHANGES:
        return FullCheck.HISTORY, _NOTHING
    if any(change.node == node.name for change in nodes):
        return FullCheck.NODE, _NOTHING
    if any(_object_matters(change, pod, needs) for change in objects):
        return FullCheck.OBJECT, _NOTHING
    # Placements on the node by the replica itself were in its basis.
    rerun = NODE_POD_PLUGINS if log.placed_on_since(node.name, since, decision.session) else _NOTHING
    if needs.counts_on_others and (nodes or not decision.refused_known):
        rerun |= needs.plugins()  # domains or eligibility may differ, or counted pods be gone
    scanned: list[PodChange] | None = None
    own = needs.own_plugins()
    if own and not own <= rerun:
        if log.count_since(since) > 4 * SCAN_LIMIT:
            rerun |= own  # reading them would cost more than running the plugins
        else:
            scanned = log.pods_since(since)
            rerun |= _own_terms_rerun(scanned, pod, node, needs, decision, snapshot)
    if profile.inter_pod_affinity and INTER_POD_AFFINITY not in rerun:
        # The anti-affinity rules for the pods placed since (the replica's own were in its basis,
        # with these labels on this node). Not scanned with anti-affinity of its own: then
        # InterPodAffinity already runs again.
        if scanned is not None and needs.anti:
            placed = [c for c in scanned if c.placed and not _own(c, decision)]
        else:
            anti = log.anti_affinity_placed_since(since) if log.anti_affinity_placed(since) else []
            placed = [c for c in anti if not _own(c, decision)]
        if len(placed) > SCAN_LIMIT:
            rerun |= {INTER_POD_AFFINITY}  # reading on would cost about what the plugin costs
        elif placed or nodes:
            changed_nodes = {change.node for change in nodes}
            candidates = _candidates(snapshot, placed, changed_nodes, all_pods=bool(needs.anti))
            if _anti_affinity_violated(candidates, pod, node, needs, snapshot):
                return FullCheck.ANTI_AFFINITY, _NOTHING
    return "", rerun


def _own(change: PodChange, decision: Decision) -> bool:
    """A placement the replica counted when it decided (its session's, as it decided it)."""
    return change.placed and bool(change.origin) and change.origin == decision.session


def _own_terms_rerun(
    changes: Sequence[PodChange],
    pod: PodInfo,
    node: NodeInfo,
    needs: _Needs,
    decision: Decision,
    snapshot: Snapshot,
) -> frozenset[str]:
    """The plugins the pod changes can turn from pass to fail through the pod's own required
    affinity or hard spread, the decision's own placements (``decision.session``) aside and its
    refused ones counted as removed. Affinity: any pod it counts (placed elsewhere it can void the
    first-pod rule, removed it can empty the domain). Spread: the skew at the node rises by at
    most the counted pods placed in its domain plus those removed anywhere (each lowers the
    minimum by at most one; a pod placed in another domain never raises the skew), so the plugin
    runs only when that sum exceeds the decision's slack. A pod that stayed on its node and only
    changed labels counts as placed or removed only if that changed whether it is counted. Stops
    as soon as both are decided."""
    out: set[str] = set()
    affinity, spread = bool(needs.affinity), bool(needs.spread)
    counter = _SpreadCounter(needs.spread, pod, node, snapshot, decision.spread_slack or 0)
    removed = [PodChange(0, refused, "", placed=False) for refused in decision.refused]
    examined = 0
    session = decision.session
    for change in (*removed, *changes) if removed else changes:
        origin = change.origin
        if origin and origin == session and change.placed:
            # :func:`_own`'s test, inline: most of the changes read are the replica's own, and the
            # call per change cost the informer 0.01-0.02 ms per pod with hard spread constraints
            continue
        examined += 1
        if examined > SCAN_LIMIT:
            return needs.own_plugins()  # reading on would cost about what the plugins cost
        if affinity and _affinity_changed(needs.affinity, change):
            out.add(INTER_POD_AFFINITY)
            affinity = False
        if spread and counter.raises(change):
            out.add(POD_TOPOLOGY_SPREAD)
            spread = False
        if not affinity and not spread:
            break
    return frozenset(out)


def _affinity_changed(terms: Sequence[AffinityTerm], change: PodChange) -> bool:
    """Whether ``change`` adds or removes a pod matching all ``terms``."""
    now = class_matches_all_terms(terms, label_class_of(change.pod))
    if change.before is None:
        return now
    return now != class_matches_all_terms(terms, label_class_of(change.before))


class _SpreadCounter:
    """By how much changes can raise the pod's skew at the node, per hard constraint (pods alike
    matched once); ``raises`` says when one exceeds the slack."""

    def __init__(
        self, constraints: Sequence[Constraint], pod: PodInfo, node: NodeInfo, snapshot: Snapshot, slack: int
    ) -> None:
        self.constraints = constraints
        self.namespace = pod.namespace
        self.labels = node.labels
        self.node_map = snapshot.node_map
        self.slack = slack
        self.raised = [0] * len(constraints)
        self._matches: dict[tuple[int, LabelClass], bool] = {}
        #: the label keys any constraint's selector reads (a change of other labels counts alike)
        self._keys = frozenset(r.key for c in constraints for r in c.selector.requirements)

    def _counted(self, i: int, pi: PodInfo) -> bool:
        """Whether the constraint counts ``pi`` (its namespace, not terminating, selected)."""
        if pi.namespace != self.namespace or pi.pod.metadata.deletion_timestamp is not None:
            return False
        cls = label_class_of(pi)
        hit = self._matches.get((i, cls))
        if hit is None:
            hit = self._matches[(i, cls)] = self.constraints[i].matches(cls.labels)
        return hit

    def _alike(self, change: PodChange) -> bool:
        """A pod that stayed (``before``) and whose change no constraint can see: the same
        namespace and terminating state, no label a selector reads changed (a binding's topology
        labels, say)."""
        before, changed = change.before, change.changed_labels
        if before is None or changed is None or not changed.isdisjoint(self._keys):
            return False
        now, was = change.pod.pod.metadata, before.pod.metadata
        return now.namespace == was.namespace and (now.deletion_timestamp is None) == (
            was.deletion_timestamp is None
        )

    def raises(self, change: PodChange) -> bool:
        if self._alike(change):
            return False
        for i, constraint in enumerate(self.constraints):
            now = self._counted(i, change.pod)
            if change.before is not None:
                was = self._counted(i, change.before)
                if was == now:
                    continue
                placed = now  # counted from now on: as placed; no longer: as removed
            else:
                placed = change.placed
                if not now:
                    continue
            if placed:
                where = self.node_map.get(change.node)
                value = where.labels.get(constraint.topology_key) if where is not None else None
                if value is None or value != self.labels.get(constraint.topology_key):
                    continue  # another domain (or a node that counts nowhere)
            self.raised[i] += 1
            if self.raised[i] > self.slack:
                return True
        return False


def _object_matters(change: ObjectChange, pod: PodInfo, needs: _Needs) -> bool:
    """Namespaces: the pod's own (other pods' terms select it by its namespace's labels) or any
    when its terms select namespaces by label; workloads when its spread constraints are the
    profile's defaults (their selector comes from Services and controllers). Volume objects matter
    only to pods with volumes, which are always fully checked; the rest no filter reads."""
    if change.kind == "Namespace":
        return change.key == pod.namespace or needs.namespace_selectors
    return change.kind in _WORKLOAD_KINDS and needs.default_spread


def _candidates(
    snapshot: Snapshot, placed: Sequence[PodChange], changed_nodes: set[str], *, all_pods: bool
) -> Iterator[tuple[PodInfo, NodeInfo]]:
    """Pods (as they are now) placed after the decision, and the pods of nodes that changed (their
    labels may have moved them into the node's domain): every pod when the pod has required
    anti-affinity of its own, else those with required anti-affinity."""
    node_map = snapshot.node_map
    seen: set[str] = set()
    for change in placed:
        uid = change.pod.uid
        entry = snapshot.pod_locations.get(uid)
        if entry is not None and uid not in seen:
            seen.add(uid)
            where = node_map.get(entry[1])
            if where is not None:  # a pod waiting for its node counts nowhere
                yield entry[0], where
    for name in changed_nodes:
        where = node_map.get(name)
        if where is not None:
            yield from (
                (other, where)
                for other in (where.pods if all_pods else where.pods_with_required_anti_affinity)
            )


def _anti_affinity_violated(
    candidates: Iterator[tuple[PodInfo, NodeInfo]],
    pod: PodInfo,
    node: NodeInfo,
    needs: _Needs,
    snapshot: Snapshot,
) -> bool:
    """InterPodAffinity's two anti-affinity rules for ``candidates`` on the cache now: an existing
    pod's required anti-affinity term selecting the pod, or the pod's own term selecting the other
    pod, with both nodes in one domain of the term's topology key."""
    labels = node.labels
    namespace_labels: Mapping[str, str] | None = None
    for other, where in candidates:
        if other.uid == pod.uid:
            continue
        there = where.labels
        if other.has_required_anti_affinity:
            for term in parsed_terms(other).required_anti_affinity:
                if not _same_domain(there, labels, term.topology_key):
                    continue
                if namespace_labels is None:
                    namespace_labels = snapshot.objects.namespace_labels(pod.namespace)
                if term.matches_pod(pod.pod, namespace_labels):
                    return True
        for term in needs.anti:
            if _same_domain(there, labels, term.topology_key) and term.matches_pod(other.pod, None):
                return True
    return False


def _same_domain(a: Mapping[str, str], b: Mapping[str, str], key: str) -> bool:
    value = a.get(key)
    return value is not None and b.get(key) == value
