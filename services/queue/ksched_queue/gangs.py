"""The queue's view of pod groups (GenericWorkload; docs/gang.md).

- What GangScheduling's PreEnqueue reads: each group's PodGroup (put in the profiles' snapshot, where
  the plugin looks it up) and how many of its pods the informer knows, from the group view every
  pending pod carries and from PodGroup events.
- Which pods of each group the queue holds, so that popping one member pops the group whole.
"""

from __future__ import annotations

import logging

import msgspec

from ksched.api.base import DECODE_ERRORS
from ksched.api.scheduling import PodGroup
from ksched.bus.messages import PendingPod
from ksched.framework.objects import ClusterObjects
from ksched.framework.podgroups import CountedState, CountedStates, GroupKey

log = logging.getLogger(__name__)

_pod_group = msgspec.json.Decoder(PodGroup)


class QueueGangs:
    """Pod groups as the queue knows them; a ``PodGroupStates`` for the profiles' frameworks."""

    def __init__(self, objects: ClusterObjects) -> None:
        self.objects = objects
        self.states = CountedStates()
        self._members: dict[GroupKey, set[str]] = {}
        self._key_of: dict[str, GroupKey] = {}

    def note(self, pending: PendingPod) -> None:
        """A pending pod arrived or changed: its group's view, and the pod as one of its members (the
        informer sends a view with every pending pod of a group)."""
        self._forget_member(pending.uid)
        view = pending.group
        if view is None or not view.name:
            return
        key = (pending.namespace, view.name)
        self._members.setdefault(key, set()).add(pending.uid)
        self._key_of[pending.uid] = key
        self.states.counts[key] = CountedState(view.all_pods)
        name = f"{key[0]}/{key[1]}"
        if not view.pod_group:
            self.objects.pod_groups.pop(name, None)
            return
        try:
            self.objects.pod_groups[name] = _pod_group.decode(view.pod_group)
        except DECODE_ERRORS as exc:
            log.warning(
                "pending pod %s/%s: bad PodGroup JSON in its group view: %s",
                pending.namespace,
                pending.name,
                exc,
            )

    def pod_group_changed(self, old: object, new: object) -> None:
        """A PodGroup event (objects decoded by ``objects.decode_object``)."""
        if isinstance(new, PodGroup):
            self.objects.pod_groups[f"{new.metadata.namespace}/{new.metadata.name}"] = new
        elif isinstance(old, PodGroup):
            self.objects.pod_groups.pop(f"{old.metadata.namespace}/{old.metadata.name}", None)

    def removed(self, uid: str) -> None:
        """The queue no longer holds the pod."""
        self._forget_member(uid)

    def _forget_member(self, uid: str) -> None:
        key = self._key_of.pop(uid, None)
        if key is None:
            return
        members = self._members[key]
        members.discard(uid)
        if not members:
            del self._members[key]

    def others(self, uid: str) -> list[str]:
        """The other members of ``uid``'s group the queue holds (in no particular state)."""
        key = self._key_of.get(uid)
        if key is None:
            return []
        return sorted(m for m in self._members.get(key, ()) if m != uid)

    def group_of(self, uid: str) -> str:
        """``namespace/name`` of the pod's group, '' for a pod in none."""
        key = self._key_of.get(uid)
        return f"{key[0]}/{key[1]}" if key is not None else ""
