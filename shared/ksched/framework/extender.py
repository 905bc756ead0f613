"""Scheduler extenders as the framework sees them (upstream ``framework.Extender``). Interface only.

An extender is an external process consulted at fixed points of the cycle: Filter after the
in-tree filters, Prioritize after the in-tree scores, Bind instead of the bind plugins, and
ProcessPreemption while DefaultPreemption finalizes its candidates. The calls are async (HTTP in
:mod:`ksched.extenders.http`); :mod:`ksched.framework.extender_calls` runs them at those points.
A failing call raises (any exception); whether that fails the attempt depends on ``is_ignorable``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final, Protocol

if TYPE_CHECKING:
    from ksched.api.core import Pod
    from ksched.framework.nodeinfo import NodeInfo
    from ksched.framework.podinfo import PodInfo

#: the pseudo plugin put in a pod's unschedulable plugins when extenders rejected nodes (any
#: cluster event requeues it, as upstream's ``framework.ExtenderName``)
EXTENDER_NAME: Final = "Extender"
#: extender scores are 0..10 and scaled to the framework's 0..100 (upstream ``MaxExtenderPriority``)
MAX_EXTENDER_PRIORITY: Final = 10


class ExtenderError(Exception):
    """An extender call failed (transport, HTTP status, undecodable reply, or an error it reported)."""


@dataclass(slots=True)
class FilterVerdict:
    """What an extender's Filter returned: the nodes that passed (a subset of those sent, in the
    extender's order) and, per rejected node, its message."""

    nodes: list[NodeInfo]
    failed: dict[str, str] = field(default_factory=dict)
    failed_and_unresolvable: dict[str, str] = field(default_factory=dict)


@dataclass(slots=True)
class Victims:
    """Pods to evict on one node (most important first) and how many PodDisruptionBudgets that breaks."""

    pods: list[PodInfo]
    num_pdb_violations: int = 0


class Extender(Protocol):
    """One configured extender."""

    @property
    def name(self) -> str:
        """How logs, metrics and ``ksched simulate`` scores name it (upstream: its urlPrefix)."""
        ...

    def is_ignorable(self) -> bool:
        """A failing call is skipped rather than failing the scheduling attempt."""
        ...

    def is_interested(self, pod: Pod) -> bool:
        """Whether the extender takes part for ``pod`` (managed resources requested or limited)."""
        ...

    def is_filter(self) -> bool: ...

    def is_prioritizer(self) -> bool: ...

    def is_binder(self) -> bool: ...

    def supports_preemption(self) -> bool: ...

    async def filter(self, pod: Pod, nodes: Sequence[NodeInfo]) -> FilterVerdict:
        """The nodes of ``nodes`` the pod may run on; all of them when there is no filter verb."""
        ...

    async def prioritize(self, pod: Pod, nodes: Sequence[NodeInfo]) -> tuple[list[tuple[str, int]], int]:
        """(node name, score 0..10) pairs and the extender's weight; without a prioritize verb, every
        node scored 0 and weight 0 (called for every interested extender, as upstream)."""
        ...

    async def bind(self, pod: Pod, node_name: str) -> None:
        """Bind ``pod`` to ``node_name``; raises when the extender could not."""
        ...

    async def process_preemption(
        self, pod: Pod, victims: Mapping[str, Victims], nodes: Mapping[str, NodeInfo]
    ) -> dict[str, Victims]:
        """The candidates (node name -> victims) the extender accepts, possibly with other victims;
        ``nodes`` resolves the pods it names (by UID) on each node."""
        ...
