"""What the queue needs of each scheduling profile: its PreEnqueue plugins, its queueing-hint map
(event -> hint functions of the plugins that registered it), and the QueueSort order.

Built from the profile's Framework as upstream's ``buildQueueingHintMap``: a plugin without a hint
function gets one that always says Queue, and a plugin registering Node/Add without
Node/UpdateNodeTaint also gets Node/UpdateNodeTaint (upstream's fix for issue 109437).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from ksched.framework import interfaces as ifc
from ksched.framework.events import (
    ActionType,
    ClusterEvent,
    EventResource,
    QueueingHint,
    QueueingHintFn,
)
from ksched.framework.results import QueuedPodInfo
from ksched.framework.runtime import Framework

from .events import event_matches

log = logging.getLogger(__name__)

LessFn = Callable[[QueuedPodInfo, QueuedPodInfo], bool]
SortKeyFn = Callable[[QueuedPodInfo], tuple[float, ...]]
"""A QueueSort plugin's ``sort_key`` (``ksched.framework.interfaces.QueueSortKey``)."""


def always_queue(pod: object, old: object, new: object) -> QueueingHint:
    """Upstream ``defaultQueueingHintFn``."""
    return QueueingHint.QUEUE


@dataclass(frozen=True, slots=True)
class HintFunction:
    plugin: str
    fn: QueueingHintFn


@dataclass(slots=True)
class QueueProfile:
    """One schedulerName's queue-side plugins."""

    name: str
    pre_enqueue: dict[str, ifc.PreEnqueuePlugin] = field(default_factory=dict)
    """Plugin name -> plugin, in configured order."""
    hints: dict[ClusterEvent, list[HintFunction]] = field(default_factory=dict)
    """Registered event -> hint functions (upstream ``QueueingHintMap``)."""

    _matching: dict[ClusterEvent, list[list[HintFunction]]] = field(default_factory=dict, repr=False)

    def register(self, plugin: str, event: ClusterEvent, fn: QueueingHintFn | None) -> None:
        self.hints.setdefault(event, []).append(HintFunction(plugin, fn or always_queue))
        self._matching.clear()

    def matching(self, event: ClusterEvent) -> list[list[HintFunction]]:
        """The hint functions registered for events ``event`` matches, worked out once per event
        (registrations are made when the profile is built)."""
        found = self._matching.get(event)
        if found is None:
            found = self._matching[event] = [
                fns for registered, fns in self.hints.items() if event_matches(registered, event)
            ]
        return found


_NODE_TAINT = ClusterEvent(EventResource.NODE, int(ActionType.UPDATE_NODE_TAINT))


def profile_from_framework(fw: Framework) -> QueueProfile:
    """The queue profile of one Framework (see the module docstring)."""
    profile = QueueProfile(fw.profile_name)
    for pl in fw.plugins.pre_enqueue:
        profile.pre_enqueue[pl.name] = pl
    for ext in fw.plugins.enqueue_extensions:
        events = ext.events_to_register()
        node_added = node_taint = False
        for registered in events:
            event = registered.event
            if event.resource == EventResource.NODE:
                node_added = node_added or bool(event.action & ActionType.ADD)
                node_taint = node_taint or bool(event.action & ActionType.UPDATE_NODE_TAINT)
            profile.register(ext.name, event, registered.hint)
        if node_added and not node_taint:
            profile.register(ext.name, _NODE_TAINT, None)
    return profile


def profiles_from_frameworks(frameworks: Mapping[str, Framework]) -> tuple[dict[str, QueueProfile], LessFn]:
    """Queue profiles by schedulerName, and the QueueSort ``less`` (the same plugin for every profile,
    which ``build_frameworks`` enforces)."""
    if not frameworks:
        raise ValueError("the queue needs at least one scheduling profile")
    profiles = {name: profile_from_framework(fw) for name, fw in frameworks.items()}
    first = next(iter(frameworks.values()))
    return profiles, first.queue_sort_less()


def plugin_events(profiles: Iterable[QueueProfile]) -> dict[str, list[ClusterEvent]]:
    """Plugin name -> events it registered, over every profile (upstream ``buildEventMap``)."""
    out: dict[str, list[ClusterEvent]] = {}
    for profile in profiles:
        for event, fns in profile.hints.items():
            for hint in fns:
                out.setdefault(hint.plugin, []).append(event)
    return out
