"""What a successful DefaultPreemption PostFilter returns (read by the plugin and by its effects)."""

from __future__ import annotations

from dataclasses import dataclass, field

from ksched.framework.podinfo import PodInfo
from ksched.framework.results import PostFilterResult


@dataclass(slots=True)
class PreemptionResult(PostFilterResult):
    """A successful preemption: the nominated node, the victims, and what else the service does."""

    #: pods nominated to the node with a lower priority: their nominatedNodeName must be cleared
    lower_priority_nominated: list[PodInfo] = field(default_factory=list)
    num_pdb_violations: int = 0
