"""SchedulingGates: a pod with ``spec.schedulingGates`` waits outside the active queue until its
gates are removed (upstream ``schedulinggates``, a PreEnqueue plugin)."""

from __future__ import annotations

from typing import Any

from ksched.api.core import Pod
from ksched.apimachinery.typed import as_typed
from ksched.framework.events import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    EventResource,
    QueueingHint,
)
from ksched.framework.handle import Handle
from ksched.framework.interfaces import EnqueueExtensions, PreEnqueuePlugin
from ksched.framework.status import Status

NAME = "SchedulingGates"


def gated_message(gates: list[str]) -> str:
    """``waiting for scheduling gates: [a b]`` (Go's ``%v`` of a string slice)."""
    return f"waiting for scheduling gates: [{' '.join(gates)}]"


class SchedulingGates:
    name = NAME

    def pre_enqueue(self, pod: Pod) -> Status | None:
        gates = pod.spec.scheduling_gates
        if not gates:
            return None
        return Status.unresolvable(gated_message([g.name for g in gates]))

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(
                ClusterEvent(EventResource.POD, ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED),
                self.hint_gates_eliminated,
            )
        ]

    @staticmethod
    def hint_gates_eliminated(pod: Pod, old: object, new: object) -> QueueingHint:
        """Queue only when the gated pod itself lost its gates."""
        _, modified = as_typed(old, new, Pod)
        if modified is None:
            raise TypeError("expected Pod, but got None")
        if modified.metadata.uid != pod.metadata.uid:
            return QueueingHint.QUEUE_SKIP
        return QueueingHint.QUEUE


# The extension points SchedulingGates implements, checked by mypy against ksched.framework.interfaces
# (upstream's ``var _ fwk.<Point>Plugin = &SchedulingGates{}`` lines).
_PRE_ENQUEUE: type[PreEnqueuePlugin] = SchedulingGates
_ENQUEUE_EXTENSIONS: type[EnqueueExtensions] = SchedulingGates


def new(args: Any, handle: Handle) -> SchedulingGates:
    return SchedulingGates()
