"""The informer's part of gang scheduling (docs/gang.md): the pod-group resources it list-watches, the
Coscheduling adapter, each group's members (the group view pending pods carry to the queue), and the
group commit that accepts a gang's placements all or none and records them durably."""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

import msgspec

from ksched.api.collections import COSCHEDULING_POD_GROUPS, POD_GROUPS, Collection
from ksched.api.core import Pod
from ksched.api.coscheduling import CoschedulingPodGroup, as_pod_group, is_adapted, with_label_group
from ksched.api.scheduling import PodGroup
from ksched.bus.jetstream import TypedKV
from ksched.bus.messages import (
    AssumeGroupRequest,
    AssumeRejectCode,
    AssumeReply,
    AssumeRequest,
    GangCommit,
    GangRef,
    PendingPodGroup,
    Placement,
)
from ksched.cache.ledger import ClusterCache
from ksched.features import GANG_SCHEDULING, GENERIC_WORKLOAD, FeatureGates
from ksched.framework.nominator import Nominator
from ksched.framework.podgroups import GroupKey, group_key
from ksched_informer import metrics
from ksched_informer.reflector import DELETED, OnEvent, OnList

log = logging.getLogger(__name__)


class GangMembers:
    """The pods of every pod group the cache knows: pending for one of our profiles, assumed, or
    bound (upstream's ``AllPodsCount``)."""

    def __init__(self) -> None:
        self._members: dict[GroupKey, set[str]] = {}
        self._key_of: dict[str, GroupKey] = {}

    def note(self, pod: Pod, known: bool) -> None:
        """``pod`` changed; ``known``: the cache still holds it (pending, assumed or bound)."""
        uid = pod.metadata.uid
        key = group_key(pod) if known else None
        old = self._key_of.get(uid)
        if old == key:
            return
        if old is not None:
            members = self._members[old]
            members.discard(uid)
            if not members:
                del self._members[old]
            del self._key_of[uid]
        if key is not None:
            self._members.setdefault(key, set()).add(uid)
            self._key_of[uid] = key

    def count(self, key: GroupKey) -> int:
        return len(self._members.get(key, ()))

    def of(self, group: str) -> frozenset[str]:
        """The uids of the pods of ``group`` (``namespace/name``)."""
        namespace, _, name = group.partition("/")
        return frozenset(self._members.get((namespace, name), ()))


class PodGroupSources:
    """Which PodGroup the cache holds under a key: the v1alpha2 object if there is one, else the
    Coscheduling one (as the gang it stands for), else none."""

    def __init__(self, cache: ClusterCache) -> None:
        self.cache = cache
        self.coscheduling: dict[str, CoschedulingPodGroup] = {}

    def _held(self, key: str) -> PodGroup | None:
        return self.cache.snapshot.objects.pod_groups.get(key)

    def native(self, upsert: OnEvent) -> OnEvent:
        """Events of v1alpha2 PodGroups; a deleted one gives way to a Coscheduling group of its name."""

        async def on_event(kind: str, obj: Any) -> None:
            await upsert(kind, obj)
            fallback = self.coscheduling.get(_key(obj)) if kind == DELETED else None
            if fallback is not None:
                await upsert("ADDED", as_pod_group(fallback))

        return on_event

    def native_list(self, on_list: OnList, upsert: OnEvent) -> OnList:
        """A (re)list of v1alpha2 PodGroups, after which Coscheduling groups fill the names left free
        (the generic list handler deletes every held object the list lacks, adapted ones included)."""

        async def listed(items: list[Any]) -> None:
            await on_list(items)
            for key, group in self.coscheduling.items():
                if self._held(key) is None:
                    await upsert("ADDED", as_pod_group(group))

        return listed

    def adapted_list(self, upsert: OnEvent) -> OnList:
        async def on_list(items: list[Any]) -> None:
            listed = {_key(g): g for g in items}
            for key, held in list(self.cache.snapshot.objects.pod_groups.items()):
                if is_adapted(held) and key not in listed:
                    await upsert(DELETED, held)
            self.coscheduling = {}
            for group in items:
                await self.adapted_event(upsert)("ADDED", group)

        return on_list

    def adapted_event(self, upsert: OnEvent) -> OnEvent:
        """Events of Coscheduling PodGroups, upserted as v1alpha2 gangs unless a v1alpha2 object wins."""

        async def on_event(kind: str, obj: Any) -> None:
            key = _key(obj)
            held = self._held(key)
            if kind == DELETED:
                self.coscheduling.pop(key, None)
                if held is not None and is_adapted(held):
                    await upsert(DELETED, held)
                return
            self.coscheduling[key] = obj
            if held is None or is_adapted(held):
                await upsert(kind, as_pod_group(obj))

        return on_event


def _key(obj: Any) -> str:
    return f"{obj.metadata.namespace}/{obj.metadata.name}"


class Gangs:
    """Everything gang scheduling needs of the informer, per the feature gates."""

    def __init__(self, gates: FeatureGates, cache: ClusterCache) -> None:
        self.enabled = gates.enabled(GENERIC_WORKLOAD)
        self.adapter = gates.enabled(GANG_SCHEDULING)
        self.cache = cache
        self.members = GangMembers()
        self.sources = PodGroupSources(cache)

    def resources(
        self, upsert: Callable[[Collection], OnEvent], lister: Callable[[Collection], OnList]
    ) -> list[tuple[Collection, OnList, OnEvent]]:
        """The extra list-watches and their handlers (``upsert``/``lister``: the informer's generic
        object handlers for a resource)."""
        if not self.enabled:
            return []
        native = upsert(POD_GROUPS)
        out = [
            (POD_GROUPS, self.sources.native_list(lister(POD_GROUPS), native), self.sources.native(native)),
        ]
        if self.adapter:
            adapted = (self.sources.adapted_list(native), self.sources.adapted_event(native))
            out.append((COSCHEDULING_POD_GROUPS, *adapted))
        return out

    def adapt(self, pod: Pod) -> Pod:
        """A pod as the scheduler reads it: a Coscheduling label becomes its ``schedulingGroup``."""
        return with_label_group(pod) if self.adapter else pod

    def cycle_mates(self, pod: Pod | None) -> frozenset[str]:
        """The uids of the pods of ``pod``'s group, which one pod group cycle tries together (none
        for a pod of no group, or with the gates off)."""
        key = group_key(pod) if self.enabled and pod is not None else None
        return self.members.of(f"{key[0]}/{key[1]}") if key is not None else frozenset()

    def view(self, pod: Pod) -> PendingPodGroup | None:
        """What the queue's PreEnqueue reads of ``pod``'s group, as the cache sees it now."""
        key = group_key(pod) if self.enabled else None
        if key is None:
            return None
        group = self.cache.snapshot.objects.pod_groups.get(f"{key[0]}/{key[1]}")
        raw = msgspec.json.encode(group) if group is not None else b""
        return PendingPodGroup(name=key[1], pod_group=raw, all_pods=self.members.count(key))


Recorder = Callable[[list[Placement], GangCommit], Awaitable[None]]
"""Writes a commit's ledger entries and then its commit record (raises if it could not)."""


class GroupCommitter:
    """Accepts a gang's placements all or none (docs/gang.md, "The group commit")."""

    def __init__(
        self,
        cache: ClusterCache,
        check_and_assume: Callable[[AssumeRequest], AssumeReply | None],
        record: Recorder,
        epoch: Callable[[], str],
        written: Callable[[str], bool],
        nominator: Nominator,
        members: GangMembers,
    ) -> None:
        self.cache = cache
        self.check_and_assume = check_and_assume
        self.nominator = nominator
        self.members = members
        self.record = record
        self.epoch = epoch
        self.written = written
        """Whether a commit's outcome (PodGroupScheduled) is written: its record stays until it is."""
        #: commit id -> members still assumed (their commit record goes when none is and the
        #: commit's outcome is written)
        self.open: dict[str, set[str]] = {}

    async def commit(self, req: AssumeGroupRequest) -> tuple[AssumeReply, list[Placement]]:
        """The reply and, when accepted, the placements to publish (recorded, not yet published)."""
        pending = {p.pod_uid: self.cache.pending.get(p.pod_uid) for p in req.placements}
        assumed: list[str] = []
        # the group's pods were all in flight in the replica's cycle: their nominations keep no room
        # from each other here either (Nominator.in_flight; seed 9305, case 62 of the gangs)
        with self.nominator.in_flight(self.members.of(req.group) | {p.pod_uid for p in req.placements}):
            for i, p in enumerate(req.placements):
                rejected = self.check_and_assume(req.member(i))
                if rejected is not None:
                    self._roll_back(req, assumed)
                    rejected.reason = f"pod {p.namespace}/{p.name}: {rejected.reason}"
                    return rejected, []
                assumed.append(p.pod_uid)
        problem = self._quorum_problem(req.group)
        if problem is not None:
            self._roll_back(req, assumed)
            metrics.ASSUMES_OF(problem.code).inc()
            return problem, []
        ref = GangRef(group=req.group, commit_id=req.commit_id, members=assumed)
        now = time.time()
        placements = [
            msgspec.structs.replace(
                p, assumed_at=now, gang=ref, pod=p.pod or msgspec.json.encode(pending[p.pod_uid])
            )
            for p in req.placements
        ]
        try:
            await self.record(
                placements, GangCommit(commit_id=req.commit_id, group=req.group, members=assumed)
            )
        except Exception as exc:
            log.warning("group commit of %s accepted but not recorded (%s); rolled back", req.group, exc)
            self._roll_back(req, assumed)
            metrics.ASSUMES_OF(AssumeRejectCode.NOT_READY).inc()
            return AssumeReply(accepted=False, code=AssumeRejectCode.NOT_READY, reason=str(exc)), []
        self.open[req.commit_id] = set(assumed)
        metrics.ASSUMES_OF("accepted").inc(len(assumed))
        return AssumeReply(accepted=True, epoch=self.epoch(), generation=self.cache.generation), placements

    def _quorum_problem(self, group: str) -> AssumeReply | None:
        """Upstream's Permit quorum on the cache: the group's assumed and bound pods reach minCount."""
        pod_group = self.cache.snapshot.objects.pod_groups.get(group)
        if pod_group is None:
            return AssumeReply(
                accepted=False,
                code=AssumeRejectCode.POD_GROUP_NOT_FOUND,
                reason=f"pod group {group} not found",
                epoch=self.epoch(),
            )
        need = pod_group.min_count
        namespace, _, name = group.partition("/")
        state = self.cache.snapshot.pod_groups.get(namespace, name)
        have = state.scheduled_pods_count() if state is not None else 0
        if need is not None and have < need:
            return AssumeReply(
                accepted=False,
                code=AssumeRejectCode.QUORUM_NOT_MET,
                reason=f"{have} pods of pod group {group} would be scheduled, minCount is {need}",
                epoch=self.epoch(),
            )
        return None

    def _roll_back(self, req: AssumeGroupRequest, uids: list[str]) -> None:
        """Forget the members assumed so far; every member's assume counts as refused for the
        replica's session (the ones checked were logged as accepted)."""
        for uid in reversed(uids):
            self.cache.forget(uid)
        if req.session:
            self.cache.answers.retract(req.session, range(req.seq, req.seq + len(req.placements)))

    def settled(self) -> list[str]:
        """Commit ids none of whose members is still assumed (bound, deleted or forgotten) and whose
        outcome is written: their records can go."""
        assumed = self.cache.assumed.keys()
        done = [cid for cid, members in self.open.items() if not members & assumed and self.written(cid)]
        for cid in done:
            del self.open[cid]
        return done


async def commit_records(commits: TypedKV[GangCommit]) -> dict[str, str]:
    """Commit id -> group of every commit record (their members' ledger entries stand, their
    outcome may not be written yet)."""
    records = {}
    for key in await commits.keys():
        entry = await commits.get(key)
        if entry is not None:
            records[entry.value.commit_id] = entry.value.group
    return records
