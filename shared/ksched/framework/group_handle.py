"""The part of :class:`~ksched.framework.handle.Handle` pod group plugins use (upstream
``PodGroupManager``, ``SnapshotSharedLister().PodGroupStates()``, ``GetWaitingPod``), shared by the
framework runtime and the test handle."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ksched.framework.podgroups import PodGroupStates
    from ksched.framework.snapshot import Snapshot
    from ksched.framework.waiting import WaitingPod, WaitingPods


class PodGroupHandle:
    """Needs ``pod_group_manager``, ``waiting_pods`` and the ``snapshot`` property of its class."""

    #: the process's own pod group states (the queue's, a simulation's); None: the snapshot's
    pod_group_manager: PodGroupStates | None
    waiting_pods: WaitingPods

    @property
    def snapshot(self) -> Snapshot:
        raise NotImplementedError

    @property
    def pod_group_states(self) -> PodGroupStates:
        """The pod group states of this process (upstream ``PodGroupManager().PodGroupStates()``)."""
        manager = self.pod_group_manager
        return manager if manager is not None else self.snapshot.pod_groups

    @property
    def snapshot_pod_group_states(self) -> PodGroupStates:
        return self.snapshot.pod_groups

    def get_waiting_pod(self, uid: str) -> WaitingPod | None:
        return self.waiting_pods.get(uid)
