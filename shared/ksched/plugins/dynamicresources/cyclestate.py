"""The DynamicResources plugin's cycle state: what PreFilter learned, Filter found per node and Reserve
chose (upstream ``stateData``); read by the plugin, its PreBind (``binding``) and the handover of the
state to the binder (``state``)."""

from __future__ import annotations

from dataclasses import dataclass, field

from ksched.api.resource import AllocationResult
from ksched.apimachinery.nodeselector import NodeSelector as NodeSelectorMatcher
from ksched.plugins.dynamicresources.allocator import Allocator
from ksched.plugins.dynamicresources.claims import ClaimStore


@dataclass
class ClaimInfo:
    """Per claim: where an allocated claim is available, and the allocation Reserve chose."""

    available_on_nodes: NodeSelectorMatcher | None = None
    allocation: AllocationResult | None = None


@dataclass
class DRAState:
    """What PreFilter learned, Filter found per node, and Reserve chose (upstream ``stateData``)."""

    claims: ClaimStore = field(default_factory=ClaimStore)
    infos: list[ClaimInfo] = field(default_factory=list)
    allocator: Allocator | None = None
    #: allocations per node name, in the order of the claims to allocate
    node_allocations: dict[str, list[AllocationResult]] = field(default_factory=dict)
    #: indices of allocated claims that were not available on some node (for PostFilter)
    unavailable_claims: set[int] = field(default_factory=set)
    #: the node Reserve ran for
    node_name: str = ""

    @property
    def has_claims(self) -> bool:
        return not self.claims.empty()

    def clone(self) -> DRAState:
        return self
