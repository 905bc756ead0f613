"""The informer's watch handlers: list and watch events of nodes, pods and the other objects
applied to the cache, with the feed messages and ledger drops each change implies."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from ksched.api.collections import Collection
from ksched.api.core import Node, Pod
from ksched.api.lifecycle import PodLifecycle
from ksched.bus.messages import PendingPodAction
from ksched.cache.ledger import ClusterCache
from ksched.framework.nominator import Nominator
from ksched.framework.objects import object_key
from ksched.framework.podinfo import PodInfo
from ksched_informer import feeds, metrics
from ksched_informer.gangs import Gangs
from ksched_informer.publisher import Publisher
from ksched_informer.reflector import DELETED

ObjectHandler = Callable[[str, Any], Awaitable[None]]


def pod_key(pod: Pod) -> str:
    return f"{pod.metadata.namespace}/{pod.metadata.name}"


class WatchHandlers:
    """Applies what the reflectors list and watch. ``confirmed(uid)`` is told of each assumed pod
    the watch shows bound or deleted (its ledger entry can go)."""

    def __init__(
        self,
        cache: ClusterCache,
        nominator: Nominator,
        publisher: Publisher,
        scheduler_names: set[str],
        confirmed: Callable[[str], None],
        gangs: Gangs,
    ) -> None:
        self.cache = cache
        self.nominator = nominator
        self.publisher = publisher
        self.scheduler_names = scheduler_names
        self.confirmed = confirmed
        self.gangs = gangs

    # --- nodes -----------------------------------------------------------------------------------
    async def on_node_list(self, nodes: list[Node]) -> None:
        listed = {n.metadata.name for n in nodes}
        for ni in list(self.cache.snapshot.nodes):
            if ni.name not in listed and ni.node is not None:
                await self.on_node_event(DELETED, ni.node)
        for node in nodes:
            old = self.cache.snapshot.node_map.get(node.metadata.name)
            if (
                old is None
                or old.node is None
                or old.node.metadata.resource_version != node.metadata.resource_version
            ):
                await self.on_node_event("ADDED", node)

    async def on_node_event(self, kind: str, node: Node) -> None:
        metrics.EVENTS_OF("Node", kind).inc()
        name = node.metadata.name
        existing = self.cache.snapshot.node_map.get(name)
        old = existing.node if existing is not None else None
        if kind == DELETED:
            if old is None:
                return
            self.cache.remove_node(name)
            self.publisher.emit_events(feeds.node_events(old, None), name, old, None)
        else:
            self.cache.upsert_node(node)
            self.publisher.emit_events(feeds.node_events(old, node), name, old, node)
        self.publisher.dirty.set()

    # --- pods ------------------------------------------------------------------------------------
    def _schedulable(self, pod: Pod) -> bool:
        return not pod.spec.node_name and pod.spec.scheduler_name in self.scheduler_names

    async def on_pod_list(self, pods: list[Pod]) -> None:
        listed = {p.metadata.uid for p in pods}
        known = set(self.cache.pending) | {
            uid for uid in self.cache.snapshot.pod_locations if uid not in self.cache.assumed
        }
        for uid in known - listed:
            entry = self.cache.snapshot.pod_locations.get(uid)
            pod = entry[0].pod if entry is not None else self.cache.pending.get(uid)
            if pod is not None:
                await self.on_pod_event(DELETED, pod)
        for pod in pods:
            await self.on_pod_event("ADDED", pod)

    async def on_pod_event(self, kind: str, pod: Pod) -> None:
        metrics.EVENTS_OF("Pod", kind).inc()
        pod = self.gangs.adapt(pod)
        cache, publisher = self.cache, self.publisher
        uid = pod.metadata.uid
        was_pending = cache.pending.get(uid)
        was_assumed = uid in cache.assumed
        placed = cache.snapshot.pod_locations.get(uid)
        old_placed = placed[0].pod if placed is not None and not was_assumed else None
        if kind == DELETED:
            cache.remove_pod(uid)
            self.gangs.members.note(pod, known=False)
            self.nominator.remove(uid)
            if was_pending is not None:
                publisher.emit_pending(PendingPodAction.DELETE, was_pending, "deleted")
            if old_placed is not None:
                events = feeds.assigned_pod_events(old_placed, None)
                publisher.emit_events(events, pod_key(pod), old_placed, None)
            if was_assumed:
                self.confirmed(uid)
            publisher.dirty.set()
            return
        if old_placed is not None and old_placed.metadata.resource_version == pod.metadata.resource_version:
            return  # a relist of an unchanged pod
        if was_pending is not None and was_pending.metadata.resource_version == pod.metadata.resource_version:
            return
        cache.upsert_pod(pod, schedulable=self._schedulable(pod))
        self.gangs.members.note(pod, known=uid in cache.pending or cache.snapshot.location(uid) is not None)
        if pod.spec.node_name:
            self.nominator.remove(uid)
            if was_pending is not None or was_assumed:
                publisher.emit_pending(PendingPodAction.DELETE, pod, PodLifecycle.BOUND)
            publisher.emit_events(feeds.assigned_pod_events(old_placed, pod), pod_key(pod), old_placed, pod)
            if was_assumed:
                self.confirmed(uid)
        elif uid in cache.pending:
            if pod.status.nominated_node_name:
                self.nominator.add(PodInfo(pod), pod.status.nominated_node_name)
            else:
                self.nominator.remove(uid)
            action = PendingPodAction.UPDATE if was_pending is not None else PendingPodAction.ADD
            publisher.emit_pending(action, pod)
        elif was_pending is not None:
            publisher.emit_pending(PendingPodAction.DELETE, pod, "scheduler-changed")
        publisher.dirty.set()

    # --- other objects ---------------------------------------------------------------------------
    def object_list(self, res: Collection) -> Callable[[list[Any]], Awaitable[None]]:
        on_event = self.object_event(res)

        async def on_list(items: list[Any]) -> None:
            table = self.cache.snapshot.objects.table(res.kind)
            listed = {object_key(o) for o in items}
            for key in [k for k in table if k not in listed]:
                await on_event(DELETED, table[key])
            for obj in items:
                old = table.get(object_key(obj))
                if old is None or old.metadata.resource_version != obj.metadata.resource_version:
                    await on_event("ADDED", obj)

        return on_list

    def object_event(self, res: Collection) -> ObjectHandler:
        async def on_event(kind: str, obj: Any) -> None:
            metrics.EVENTS_OF(res.kind, kind).inc()
            key = object_key(obj)
            table = self.cache.snapshot.objects.table(res.kind)
            old = table.get(key)
            if kind == DELETED:
                self.cache.remove_object(res.kind, key)
                new = None
            else:
                self.cache.upsert_object(obj)
                new = obj
            resource = res.resource.event_resource
            if resource and (old is not None or new is not None):
                self.publisher.emit_events(feeds.object_events(resource, old, new), key, old, new)
            self.publisher.dirty.set()

        return on_event
