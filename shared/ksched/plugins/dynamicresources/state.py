"""DynamicResources' plugin state across processes (docs/plugin-state-handover.md).

The scheduler exports, after Reserve, the pod's claims as the cycle saw them and the allocation
Reserve chose for each (None for a claim that was already allocated); the binder imports it for
PreBind, a replica for Unreserve. The informer can read the devices a placement takes with
:func:`placement_devices` (to refuse a placement whose devices another one took).
"""

from __future__ import annotations

import msgspec

from ksched.api.resource import AllocationResult, ResourceClaim
from ksched.plugins.dynamicresources.claims import ClaimStore
from ksched.plugins.dynamicresources.cyclestate import ClaimInfo, DRAState
from ksched.plugins.dynamicresources.devices import DeviceID, allocated_devices_of
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


def placement_devices(data: bytes) -> list[tuple[str, str, list[DeviceID]]]:
    """(claim key, claim uid, devices) for each claim a placement allocates: what it takes that no
    other placement may take."""
    exported = decode(data)
    out = []
    for claim, allocation in zip(exported.claims, exported.allocations, strict=True):
        if allocation is None:
            continue
        allocated = msgspec.structs.replace(
            claim, status=msgspec.structs.replace(claim.status, allocation=allocation)
        )
        devices = [device for device, _, _ in allocated_devices_of(allocated)]
        out.append((claim.key, claim.metadata.uid, devices))
    return out
