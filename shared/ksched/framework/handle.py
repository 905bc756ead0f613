"""What a plugin can reach besides its arguments (upstream ``framework.Handle``). Interface only."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from ksched.framework.cycle_state import CycleState
    from ksched.framework.extender import Extender
    from ksched.framework.nodeinfo import NodeInfo
    from ksched.framework.podgroups import PodGroupStates
    from ksched.framework.podinfo import PodInfo
    from ksched.framework.snapshot import Snapshot
    from ksched.framework.status import Status
    from ksched.framework.waiting import WaitingPod


class Nominator(Protocol):
    """Pods nominated to nodes by preemption and not yet bound."""

    def nominated_pods_for_node(self, node_name: str) -> Sequence[PodInfo]: ...


class Handle(Protocol):
    """Given to every plugin factory; the snapshot object stays the same, its content changes."""

    @property
    def snapshot(self) -> Snapshot: ...

    @property
    def nominator(self) -> Nominator: ...

    @property
    def profile_name(self) -> str: ...

    @property
    def parallelism(self) -> int: ...

    @property
    def client(self) -> object | None:
        """The API client (:class:`ksched.client.rest.Client`) where API calls are allowed (the
        binder); else None."""
        ...

    @property
    def pod_group_states(self) -> PodGroupStates:
        """Upstream ``PodGroupManager().PodGroupStates()``: the groups this process knows."""
        ...

    @property
    def snapshot_pod_group_states(self) -> PodGroupStates:
        """Upstream ``SnapshotSharedLister().PodGroupStates()``: the groups of the snapshot's pods."""
        ...

    def get_waiting_pod(self, uid: str) -> WaitingPod | None: ...

    def activate(self, pods: dict[str, Any]) -> None: ...

    @property
    def extenders(self) -> Sequence[Extender]:
        """The configured scheduler extenders (DefaultPreemption consults them)."""
        ...

    def run_filter_plugins(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None: ...

    def run_filter_plugins_with_nominated_pods(
        self, state: CycleState, pod: PodInfo, node: NodeInfo
    ) -> Status | None: ...

    def run_pre_filter_extension_add_pod(
        self, state: CycleState, pod: PodInfo, to_add: PodInfo, node: NodeInfo
    ) -> Status | None: ...

    def run_pre_filter_extension_remove_pod(
        self, state: CycleState, pod: PodInfo, to_remove: PodInfo, node: NodeInfo
    ) -> Status | None: ...
