"""kube-controller-manager's workload controllers for kubesim: Deployments, ReplicaSets, StatefulSets
and Jobs (one module each), reacting to the store's changes through the lifecycle's timers.

Each object is synced by its kind's controller when it, an object it owns (through the owner index)
or, for a Deployment, one of its ReplicaSets changes; a sync reads the current state and converges
one step, as upstream's controllers do (writes by the manager ``kube-controller-manager``)."""

from __future__ import annotations

import contextlib

from ..errors import ApiError
from ..garbage_collector import OwnerIndex, owner_references
from ..registry import PODS, Registry
from ..store import Change, Table
from .common import JOBS, REPLICA_SETS, REVISIONS, Controller, Later
from .deployment import DeploymentController
from .job import TRACKING_FINALIZER, JobController
from .replicaset import ReplicaSetController
from .statefulset import StatefulSetController

__all__ = ["WorkloadControllers"]

#: seconds an owner waits after a change of what it owns before it syncs: the changes of a burst
#: (pods bound, started ...) make one sync, as upstream's work queue coalesces them
DEPENDENT_DELAY = 0.05
_TRACKING = TRACKING_FINALIZER.encode()


class WorkloadControllers:
    def __init__(self, registry: Registry, index: OwnerIndex, later: Later) -> None:
        self.registry = registry
        self.later = later
        self.deployments = DeploymentController(registry, index, later)
        self.replica_sets = ReplicaSetController(registry, index, later)
        self.stateful_sets = StatefulSetController(registry, index, later)
        self.jobs = JobController(registry, index, later)
        self._by_kind: dict[str, Controller] = {
            c.rt.kind: c for c in (self.deployments, self.replica_sets, self.stateful_sets, self.jobs)
        }
        self._by_key: dict[str, Controller] = {c.rt.storage_key: c for c in self._by_kind.values()}
        #: resources whose objects' controllers look again when they change
        self._dependents = frozenset({PODS.storage_key, REPLICA_SETS.storage_key, REVISIONS.storage_key})
        self._pods = PODS.storage_key

    def catch_up(self) -> None:
        """Sync every existing workload (adopting orphans), as the controllers do when they start."""
        for key, controller in self._by_key.items():
            for entry in list(self.registry.store.tables[key].objects.values()):
                controller.queue_adopting(entry)

    def on_change(self, table: Table, change: Change) -> None:
        key = table.rt.storage_key
        entry = change.new or change.old
        assert entry is not None
        controller = self._by_key.get(key)
        if controller is not None:
            if change.new is not None and (change.old is None or _selector_changed(change)):
                controller.queue_adopting(change.new)
            else:
                controller.queue(entry.namespace, entry.name)
        if key not in self._dependents:
            return
        for ref in owner_references(entry):
            owner = self._by_kind.get(str(ref.get("kind") or ""))
            if ref.get("controller") and owner is not None:
                owner.queue(entry.namespace, str(ref.get("name") or ""), DEPENDENT_DELAY)
        if key == self._pods and change.new is not None and _TRACKING in change.new.body:
            self.later(
                (PODS.key, entry.namespace, entry.name, "job-tracking"),
                0.0,
                self._release_orphan,
                entry.namespace,
                entry.name,
            )

    def _release_orphan(self, namespace: str, name: str) -> None:
        """A pod that still has the Job tracking finalizer but no Job any more (deleted) loses it."""
        entry = self.registry.table(PODS).get(namespace, name)
        if entry is None:
            return
        jobs = self.registry.table(JOBS)
        for ref in owner_references(entry):
            if ref.get("kind") == "Job" and ref.get("controller"):
                job = jobs.get(namespace, str(ref.get("name") or ""))
                if job is not None and job.uid == ref.get("uid"):
                    return
        pod = entry.obj()
        meta = pod["metadata"]
        kept = [f for f in meta.get("finalizers") or [] if f != TRACKING_FINALIZER]
        if kept:
            meta["finalizers"] = kept
        else:
            meta.pop("finalizers", None)
        with contextlib.suppress(ApiError):
            self.registry.update(PODS, namespace, name, pod, manager="kube-controller-manager")


def _selector_changed(change: Change) -> bool:
    assert change.new is not None and change.old is not None
    new_spec, old_spec = change.new.obj().get("spec") or {}, change.old.obj().get("spec") or {}
    return new_spec.get("selector") != old_spec.get("selector")
