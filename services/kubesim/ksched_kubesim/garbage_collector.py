"""kube-controller-manager's garbage collector, as far as ownerReferences go.

* Background (the default for apps/v1, what ``kubectl delete`` asks): once an owner is gone, each
  object that named it is deleted if none of its other owners exists, else the reference to the gone
  owner is removed.
* Orphan (the default for batch/v1 Jobs; the API server adds the ``orphan`` finalizer): the
  references to the owner are removed from its dependents, then the finalizer from the owner.
* Foreground (``foregroundDeletion`` finalizer): the dependents are deleted (in the foreground too),
  and the owner's finalizer is removed once no dependent with ``blockOwnerDeletion`` is left.

:class:`OwnerIndex` (owner uid -> dependents) serves the workload controllers too. An object created
with a reference to an owner that does not exist is left alone (upstream deletes it): scenarios load
pods that name ReplicaSets kubesim never saw. ResourceClaims are the resourceclaim controller's.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

from .errors import ApiError
from .jsonio import JSON
from .managed_fields import CONTROLLER_MANAGER
from .registry import FOREGROUND_FINALIZER, ORPHAN_FINALIZER, DeleteOptions, Registry
from .resources import ResourceType, by_kind
from .store import Change, Entry, Table

#: dependents the resourceclaim controller collects itself (claim_controller)
_NOT_COLLECTED = ("resourceclaims.resource.k8s.io",)

Later = Callable[..., None]
Dependent = tuple[str, str, str]
"""(storage key, namespace, name) of an object that has ownerReferences."""


def owner_references(entry: Entry) -> list[JSON]:
    if b'"ownerReferences"' not in entry.body:
        return []
    refs = entry.obj()["metadata"].get("ownerReferences")
    return [r for r in refs if isinstance(r, dict)] if isinstance(refs, list) else []


class OwnerIndex:
    """Who refers to whom: owner uid -> dependents, kept up to date from the store's changes."""

    def __init__(self) -> None:
        self.dependents: dict[str, set[Dependent]] = {}
        self._owners: dict[Dependent, tuple[str, ...]] = {}

    def on_change(self, table: Table, change: Change) -> None:
        entry = change.new or change.old
        assert entry is not None
        has_refs = change.new is not None and b'"ownerReferences"' in change.new.body
        key: Dependent = (table.rt.storage_key, entry.namespace, entry.name)
        if not has_refs and key not in self._owners:
            return  # the common case: an object without owners before and after
        old_uids = self._owners.pop(key, ())
        for uid in old_uids:
            found = self.dependents.get(uid)
            if found is not None:
                found.discard(key)
                if not found:
                    del self.dependents[uid]
        if change.new is None:
            return
        uids = tuple(str(r.get("uid") or "") for r in owner_references(change.new))
        if uids:
            self._owners[key] = uids
            for uid in uids:
                self.dependents.setdefault(uid, set()).add(key)

    def of(self, uid: str, storage_key: str | None = None) -> list[Dependent]:
        """The dependents of owner ``uid`` (of one resource if ``storage_key``), sorted."""
        return sorted(d for d in self.dependents.get(uid, ()) if storage_key is None or d[0] == storage_key)


class GarbageCollector:
    """Reacts to store changes (after the :class:`OwnerIndex` saw them); acts through ``later``."""

    def __init__(self, registry: Registry, index: OwnerIndex, later: Later) -> None:
        self.registry = registry
        self.index = index
        self.later = later
        #: uid -> (resource, namespace) of owners being deleted in the foreground
        self._foreground: dict[str, tuple[ResourceType, str, str]] = {}

    def on_change(self, table: Table, change: Change) -> None:
        new, old = change.new, change.old
        rt = table.rt
        if new is None and old is not None:
            self._foreground.pop(old.uid, None)
            if old.uid in self.index.dependents:
                self.later(("gc", old.namespace, old.uid, "collect"), 0.0, self.collect, old.uid)
            for ref in owner_references(old):
                uid = str(ref.get("uid") or "")
                if uid in self._foreground:
                    self._check_foreground(uid)
            return
        if new is None or not new.deleting:
            return
        if b'"orphan"' not in new.body and b'"foregroundDeletion"' not in new.body:
            return
        finalizers = new.obj()["metadata"].get("finalizers") or []
        if ORPHAN_FINALIZER in finalizers:
            self.later(
                ("gc", new.namespace, new.uid, "orphan"), 0.0, self.orphan, rt, new.namespace, new.name
            )
        if FOREGROUND_FINALIZER in finalizers:
            self._foreground[new.uid] = (rt, new.namespace, new.name)
            self._check_foreground(new.uid)

    def _check_foreground(self, uid: str) -> None:
        self.later(("gc", "", uid, "foreground"), 0.0, self.foreground, uid)

    # --- the three policies -------------------------------------------------------------------

    def _dependents(self, uid: str) -> list[tuple[ResourceType, Entry]]:
        out = []
        for storage_key, namespace, name in self.index.of(uid):
            if storage_key in _NOT_COLLECTED:
                continue
            table = self.registry.store.tables.get(storage_key)
            entry = table.get(namespace, name) if table is not None else None
            if table is not None and entry is not None:
                out.append((table.rt, entry))
        return out

    def _owner_exists(self, dependent: Entry, ref: JSON) -> bool:
        rt = by_kind(str(ref.get("apiVersion") or ""), str(ref.get("kind") or ""))
        if rt is None or rt.storage_key not in self.registry.store.tables:
            return False
        table = self.registry.table(rt)
        owner = table.get(dependent.namespace if rt.namespaced else "", str(ref.get("name") or ""))
        return owner is not None and owner.uid == ref.get("uid")

    def collect(self, uid: str) -> None:
        """Background: delete what only the gone owner ``uid`` owned, unlink the rest."""
        for rt, entry in self._dependents(uid):
            refs = owner_references(entry)
            if any(r.get("uid") != uid and self._owner_exists(entry, r) for r in refs):
                self._unlink(rt, entry, uid)
            elif not entry.deleting:
                with contextlib.suppress(ApiError):
                    self.registry.delete(
                        rt, entry.namespace, entry.name, DeleteOptions(propagation="Background")
                    )

    def orphan(self, rt: ResourceType, namespace: str, name: str) -> None:
        """Orphan: unlink every dependent, then let the owner go."""
        owner = self.registry.table(rt).get(namespace, name)
        if owner is None or not owner.deleting:
            return
        for dep_rt, entry in self._dependents(owner.uid):
            self._unlink(dep_rt, entry, owner.uid)
        self._drop_finalizer(rt, owner, ORPHAN_FINALIZER)

    def foreground(self, uid: str) -> None:
        """Foreground: delete the dependents; release the owner when the blocking ones are gone."""
        found = self._foreground.get(uid)
        if found is None:
            return
        rt, namespace, name = found
        owner = self.registry.table(rt).get(namespace, name)
        if owner is None or owner.uid != uid:
            self._foreground.pop(uid, None)
            return
        blocking = 0
        for dep_rt, entry in self._dependents(uid):
            if any(r.get("uid") == uid and r.get("blockOwnerDeletion") for r in owner_references(entry)):
                blocking += 1
            if not entry.deleting:
                with contextlib.suppress(ApiError):
                    self.registry.delete(
                        dep_rt, entry.namespace, entry.name, DeleteOptions(propagation="Foreground")
                    )
        if not blocking:
            self._foreground.pop(uid, None)
            self._drop_finalizer(rt, owner, FOREGROUND_FINALIZER)

    # --- writes -------------------------------------------------------------------------------

    def _unlink(self, rt: ResourceType, entry: Entry, uid: str) -> None:
        obj = entry.obj()
        meta = obj["metadata"]
        kept = [r for r in meta.get("ownerReferences") or [] if r.get("uid") != uid]
        if kept:
            meta["ownerReferences"] = kept
        else:
            meta.pop("ownerReferences", None)
        self._write(rt, entry, obj)

    def _drop_finalizer(self, rt: ResourceType, entry: Entry, finalizer: str) -> None:
        obj = entry.obj()
        meta = obj["metadata"]
        kept = [f for f in meta.get("finalizers") or [] if f != finalizer]
        if kept:
            meta["finalizers"] = kept
        else:
            meta.pop("finalizers", None)
        self._write(rt, entry, obj)

    def _write(self, rt: ResourceType, entry: Entry, obj: Any) -> None:
        with contextlib.suppress(ApiError):  # changed meanwhile: its change brings us back
            self.registry.update(rt, entry.namespace, entry.name, obj, manager=CONTROLLER_MANAGER)
