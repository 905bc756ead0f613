"""The PodGroup protection controller of kube-controller-manager (``podgroupprotection``, GenericWorkload).

A PodGroup is created with the ``scheduling.k8s.io/podgroup-protection`` finalizer (the strategy adds
it). Once it is being deleted, the controller removes the finalizer, by an update of the PodGroup,
when no pod of its namespace that has not finished (phase Succeeded or Failed) names it in
``spec.schedulingGroup.podGroupName``; the deletion then completes. It looks again when such a
PodGroup is written and when a pod naming one is deleted, finishes, or is replaced by a pod of the
same name (upstream's pod event handler).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

from ksched.api.scheduling import POD_GROUP_PROTECTION_FINALIZER

from .errors import ApiError
from .jsonio import JSON, decode
from .managed_fields import CONTROLLER_MANAGER
from .registry import PODS, Registry
from .resources import BY_KEY
from .store import Change

POD_GROUPS = BY_KEY["podgroups.scheduling.k8s.io"]
TERMINAL_PHASES = ("Succeeded", "Failed")

Later = Callable[..., None]
"""``later(key, delay, callback, *args)``: the lifecycle's timer (one pending per key)."""


def group_of(pod: JSON) -> str:
    """The PodGroup ``pod`` names ('' for none)."""
    group = (pod.get("spec") or {}).get("schedulingGroup") or {}
    name = group.get("podGroupName") if isinstance(group, dict) else None
    return name if isinstance(name, str) else ""


def is_terminated(pod: JSON) -> bool:
    return (pod.get("status") or {}).get("phase") in TERMINAL_PHASES


class PodGroupProtection:
    def __init__(self, registry: Registry, later: Later) -> None:
        self.registry = registry
        self.later = later
        #: PodGroups being deleted (namespace, name): only pods naming one of them need a look
        self.deleting: set[tuple[str, str]] = set()

    def on_change(self, key: str, change: Change) -> None:
        if key == POD_GROUPS.key:
            entry = change.new or change.old
            assert entry is not None
            if change.new is not None and change.new.deleting:
                self.deleting.add(entry.key)
                self._check_later(entry.namespace, entry.name)
            else:
                self.deleting.discard(entry.key)
        elif key == PODS.key and self.deleting:
            for pod in self._released(change):
                name = group_of(pod)
                if name:
                    self._check_later(str(pod["metadata"].get("namespace") or ""), name)

    @staticmethod
    def _released(change: Change) -> list[JSON]:
        """The pods of ``change`` that may have stopped keeping their group's finalizer."""
        new = change.new.obj() if change.new is not None else None
        old = change.old.obj() if change.old is not None else None
        out = []
        if new is not None and is_terminated(new):
            out.append(new)
        replaced = change.new is not None and change.old is not None and change.new.uid != change.old.uid
        if old is not None and (new is None or replaced):
            out.append(old)
        return out

    def _check_later(self, namespace: str, name: str) -> None:
        if POD_GROUPS.storage_key in self.registry.store.tables:
            self.later(("podgroup", namespace, name, "protect"), 0.0, self.check, namespace, name)

    def check(self, namespace: str, name: str) -> None:
        """Remove the finalizer of PodGroup ``namespace/name`` if it is being deleted and unused."""
        entry = self.registry.table(POD_GROUPS).get(namespace, name)
        if entry is None or not entry.deleting:
            return
        group = entry.obj()
        finalizers: list[Any] = group["metadata"].get("finalizers") or []
        if POD_GROUP_PROTECTION_FINALIZER not in finalizers or self._in_use(namespace, name):
            return
        group["metadata"]["finalizers"] = [f for f in finalizers if f != POD_GROUP_PROTECTION_FINALIZER]
        with contextlib.suppress(ApiError):  # changed meanwhile: its write brings us back
            self.registry.update(POD_GROUPS, namespace, name, group, manager=CONTROLLER_MANAGER)

    def _in_use(self, namespace: str, name: str) -> bool:
        pods = self.registry.table(PODS)
        for entry in pods.objects.values():
            if entry.namespace != namespace:
                continue
            pod = decode(entry.body)
            if group_of(pod) == name and not is_terminated(pod):
                return True
        return False
