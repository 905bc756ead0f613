"""The queue's nominations: upstream's nominator bookkeeping (``pkg/scheduler/backend/queue/
nominator.go``) on top of :class:`ksched.framework.nominator.Nominator`."""

from __future__ import annotations

from ksched.api.core import Pod
from ksched.framework.nominator import Nominator

from .queued_pod import QueuedPod


class Nominations:
    """Which node each queued pod is nominated to (its status, or an override)."""

    def __init__(self) -> None:
        self.nominator = Nominator()

    def add(self, entry: QueuedPod, override: str | None = None) -> None:
        """``override`` None is upstream's ModeNoop (use the pod's status); a string is ModeOverride."""
        self.nominator.remove(entry.uid)
        node = override if override is not None else (entry.pod.status.nominated_node_name or "")
        if node:
            self.nominator.add(entry.info.pod_info, node)

    def update(self, old_pod: Pod, entry: QueuedPod) -> None:
        override: str | None = None
        if not old_pod.status.nominated_node_name and not entry.pod.status.nominated_node_name:
            override = self.nominator.node_of(entry.uid)
        self.add(entry, override)

    def delete(self, uid: str) -> None:
        self.nominator.remove(uid)
