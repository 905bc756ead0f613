"""DynamicResources' plugin state across processes (docs/plugin-state-handover.md).

The scheduler exports, after Reserve, the pod's claims as the cycle saw them and the allocation
Reserve chose for each (None for a claim that was already allocated); the binder imports it for
PreBind, a replica for Unreserve. The informer can read the devices a placement takes with
:func:`allocated_claims` (to refuse a placement whose devices another one took).
"""

from __future__ import annotations

import msgspec

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


_ENCODER = msgspec.msgpack.Encoder()
_DECODER = msgspec.msgpack.Decoder(ExportedState)


def export_state(st: DRAState) -> bytes:
    if st.has_claims and not st.node_name:
        raise StateExportError("DynamicResources: export_state before Reserve")
    return _ENCODER.encode(
        ExportedState(
            node_name=st.node_name,
            claims=list(st.claims.claims),
            allocations=[info.allocation for info in st.infos],
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
    return DRAState(
        claims=ClaimStore(list(exported.claims)),
        infos=[ClaimInfo(allocation=a) for a in exported.allocations],
        node_name=exported.node_name,
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
