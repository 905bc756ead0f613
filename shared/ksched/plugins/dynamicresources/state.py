"""DynamicResources' plugin state across processes (docs/plugin-state-handover.md).

The scheduler exports, after Reserve, the pod's claims as the cycle saw them and the allocation
Reserve chose for each (None for a claim that was already allocated); the binder imports it for
PreBind, a replica for Unreserve. The informer can read the devices a placement takes with
:func:`allocated_claims` (to refuse a placement whose devices another one took).
"""

from __future__ import annotations

import msgspec

from ksched.api.core import ContainerExtendedResourceRequest
from ksched.api.resource import FINALIZER, AllocationResult, ResourceClaim
from ksched.plugins.dynamicresources.claims import ClaimStore
from ksched.plugins.dynamicresources.cyclestate import ClaimInfo, DRAState
from ksched.plugins.volumebinding.state import StateExportError


class ExportedState(msgspec.Struct, tag="DynamicResources/v1", kw_only=True):
    node_name: str
    claims: list[ResourceClaim]
    """The pod's claims in ``spec.resourceClaims`` order, as the scheduling cycle read them."""
    allocations: list[AllocationResult | None]
    """Per claim, the allocation Reserve chose (None: already allocated, or nothing to do)."""
    num_user_owned: int | None = None
    """How many of ``claims`` are the pod's own; the one after them is its extended-resource claim
    (None: all are the pod's own)."""
    initial_extended_uid: str = ""
    """The extended-resource claim's uid in the deciding replica (its in-flight key)."""
    mappings: list[ContainerExtendedResourceRequest] = []
    """Which request of the extended-resource claim serves which container's extended resource."""


_ENCODER = msgspec.msgpack.Encoder()
_DECODER = msgspec.msgpack.Decoder(ExportedState)


def export_state(st: DRAState) -> bytes:
    if st.has_claims and not st.node_name:
        raise StateExportError("DynamicResources: export_state before Reserve")
    claims = list(st.claims.claims)
    extended_index = st.claims.extended_index
    if extended_index is not None and st.extended_claim is not None:
        claims[extended_index] = st.extended_claim  # with the requests of the chosen node
    return _ENCODER.encode(
        ExportedState(
            node_name=st.node_name,
            claims=claims,
            allocations=[info.allocation for info in st.infos],
            num_user_owned=None if extended_index is None else st.claims.num_user_owned,
            initial_extended_uid=st.claims.initial_extended_uid,
            mappings=list(st.mappings),
        )
    )


def decode(data: bytes) -> ExportedState:
    try:
        return _DECODER.decode(data)
    except msgspec.DecodeError as exc:
        raise StateExportError(f"DynamicResources: not an exported state: {exc}") from None


def import_state(data: bytes) -> DRAState:

    exported = decode(data)
    if len(exported.allocations) != len(exported.claims):
        raise StateExportError("DynamicResources: exported claims and allocations differ in length")
    n = len(exported.claims)
    user_owned = n if exported.num_user_owned is None else exported.num_user_owned
    if not n - 1 <= user_owned <= n:
        raise StateExportError("DynamicResources: exported num_user_owned out of range")
    store = ClaimStore(list(exported.claims), user_owned, exported.initial_extended_uid)
    return DRAState(
        claims=store,
        infos=[ClaimInfo(allocation=a) for a in exported.allocations],
        node_name=exported.node_name,
        extended_claim=store.extended(),
        mappings=list(exported.mappings),
    )


def with_allocation(claim: ResourceClaim, allocation: AllocationResult) -> ResourceClaim:
    """The claim as Reserve assumes it: allocated, with the delete-protection finalizer."""
    meta = claim.metadata
    if FINALIZER not in meta.finalizers:
        meta = msgspec.structs.replace(meta, finalizers=[*meta.finalizers, FINALIZER])
    status = msgspec.structs.replace(claim.status, allocation=allocation)
    return msgspec.structs.replace(claim, metadata=meta, status=status)


def allocated_claims(data: bytes) -> list[ResourceClaim]:
    """The claims a placement allocates, each with the allocation Reserve chose: what it takes that
    no other placement may take (:mod:`ksched.plugins.dynamicresources.assumed` checks it)."""
    exported = decode(data)
    return [
        with_allocation(claim, allocation)
        for claim, allocation in zip(exported.claims, exported.allocations, strict=True)
        if allocation is not None
    ]
