"""Pods waiting at Permit (upstream ``runtime/waiting_pods_map.go``): each waits for every plugin that
asked it to, until the plugin allows it, rejects it, or its time runs out.

A scheduler replica keeps them only for the length of a pod group cycle (docs/gang.md): a plugin
allows the group's waiting members there; whatever is still pending afterwards travels with the
placement to the binder, which waits for it (``Placement.permit_waits``)."""

from __future__ import annotations

from ksched.framework.podinfo import PodInfo

MAX_PERMIT_TIMEOUT = 15 * 60.0
"""Upstream ``maxTimeout``: a longer Permit wait is cut to this."""


class WaitingPod:
    """One pod held at Permit by ``pending`` plugins (name -> timeout in seconds). A rejection ends
    the pod group cycle's wait at once (the group is not schedulable), so only Allow is kept here."""

    __slots__ = ("pending", "pod")

    def __init__(self, pod: PodInfo, pending: dict[str, float]) -> None:
        self.pod = pod
        self.pending = dict(pending)

    def allow(self, plugin: str) -> None:
        self.pending.pop(plugin, None)

    @property
    def allowed(self) -> bool:
        """Every plugin it waited for allowed it."""
        return not self.pending


class WaitingPods:
    """Upstream's ``waitingPodsMap``, by pod uid."""

    def __init__(self) -> None:
        self._pods: dict[str, WaitingPod] = {}

    def add(self, pod: PodInfo, waits: dict[str, float]) -> WaitingPod:
        waiting = WaitingPod(pod, waits)
        self._pods[pod.uid] = waiting
        return waiting

    def get(self, uid: str) -> WaitingPod | None:
        return self._pods.get(uid)

    def remove(self, uid: str) -> WaitingPod | None:
        return self._pods.pop(uid, None)
