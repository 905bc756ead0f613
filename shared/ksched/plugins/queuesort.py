"""PrioritySort: the active queue pops higher priority first, then the earlier-queued pod
(upstream ``queuesort``)."""

from __future__ import annotations

from typing import Any

from ksched.framework.handle import Handle
from ksched.framework.interfaces import QueueSortKey, QueueSortPlugin
from ksched.framework.results import QueuedPodInfo

NAME = "PrioritySort"


class PrioritySort:
    name = NAME

    def less(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        """Whether ``a`` goes before ``b``: higher ``spec.priority`` (unset is 0), then older timestamp."""
        p1 = a.pod_info.priority
        p2 = b.pod_info.priority
        return p1 > p2 or (p1 == p2 and a.timestamp < b.timestamp)

    def sort_key(self, info: QueuedPodInfo) -> tuple[float, ...]:
        """``less`` as a key: higher priority first, then the older timestamp."""
        return (-info.pod_info.priority, info.timestamp)


# The extension points PrioritySort implements, checked by mypy against ksched.framework.interfaces
# (upstream's ``var _ fwk.<Point>Plugin = &PrioritySort{}`` lines).
_QUEUE_SORT: type[QueueSortPlugin] = PrioritySort
_SORT_KEY: type[QueueSortKey] = PrioritySort


def new(args: Any, handle: Handle) -> PrioritySort:
    return PrioritySort()
