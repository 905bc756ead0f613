"""The DynamicResources plugin's cycle state: what PreFilter learned, Filter found per node and Reserve
chose (upstream ``stateData``); read by the plugin, its PreBind (``binding``) and the handover of the
state to the binder (``state``)."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Final

from ksched.api.core import ContainerExtendedResourceRequest
from ksched.api.resource import AllocationResult, ResourceClaim
from ksched.apimachinery.nodeselector import NodeSelector as NodeSelectorMatcher
from ksched.plugins.dynamicresources.allocator import Allocator, Choice
from ksched.plugins.dynamicresources.claims import ClaimStore
from ksched.plugins.dynamicresources.extended import NO_CLASSES, DeviceClassResolver


@dataclass
class ClaimInfo:
    """Per claim: where an allocated claim is available, and the allocation Reserve chose."""

    available_on_nodes: NodeSelectorMatcher | None = None
    allocation: AllocationResult | None = None


class Fresh(enum.Enum):
    """A slot of :class:`NodeAllocation` that the node's search fills."""

    FRESH = "fresh"


FRESH: Final = Fresh.FRESH


@dataclass
class NodeAllocation:
    """What Filter found for one node (upstream ``nodeAllocation``)."""

    #: per claim to allocate, in order: its allocation, ``FRESH`` for one the search found; None for
    #: the extended-resource claim when the node's device plugin serves every extended resource
    slots: list[AllocationResult | Fresh | None] = field(default_factory=list)
    #: the devices the search chose for ``claims`` (built into results only when read)
    choice: Choice | None = None
    claims: list[ResourceClaim] = field(default_factory=list)
    #: the extended-resource claim with this node's requests (None: not needed on this node)
    extended_claim: ResourceClaim | None = None
    #: which of ``extended_claim``'s requests serves which container's extended resource
    mappings: list[ContainerExtendedResourceRequest] = field(default_factory=list)
    _results: list[AllocationResult | None] | None = None

    @property
    def results(self) -> list[AllocationResult | None]:
        """Per claim to allocate, its allocation (the search's built on first use: upstream builds
        them for every node, ksched for the node Reserve takes and, with ``firstAvailable``, Score)."""
        if self._results is None:
            built = iter(self.choice.results(self.claims) if self.choice is not None else ())
            self._results = [next(built) if slot is FRESH else slot for slot in self.slots]
        return self._results


@dataclass
class DRAState:
    """What PreFilter learned, Filter found per node, and Reserve chose (upstream ``stateData``)."""

    claims: ClaimStore = field(default_factory=ClaimStore)
    infos: list[ClaimInfo] = field(default_factory=list)
    allocator: Allocator | None = None
    #: the slots of every node's :class:`NodeAllocation` when all claims are the pod's own and
    #: unallocated (Filter's short way); None otherwise
    fresh_slots: list[AllocationResult | Fresh | None] | None = None
    #: Filter's result per node name
    node_allocations: dict[str, NodeAllocation] = field(default_factory=dict)
    #: the pod's requests of extended resources some DeviceClass backs (DRAExtendedResource)
    extended_requests: dict[str, int] = field(default_factory=dict)
    #: which DeviceClass backs which extended resource, as PreFilter saw the classes
    resolver: DeviceClassResolver = NO_CLASSES
    #: indices of allocated claims that were not available on some node (for PostFilter)
    unavailable_claims: set[int] = field(default_factory=set)
    #: the node Reserve ran for
    node_name: str = ""
    #: the extended-resource claim and mappings Reserve chose (what PreBind creates and records)
    extended_claim: ResourceClaim | None = None
    mappings: list[ContainerExtendedResourceRequest] = field(default_factory=list)

    @property
    def has_claims(self) -> bool:
        return not self.claims.empty()

    def clone(self) -> DRAState:
        return self
