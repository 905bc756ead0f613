"""VolumeBinding's cycle state, and its serialized form for the binder process.

Within a scheduling cycle the plugin keeps :class:`VolumeBindingState` in the CycleState (shared,
not copied, by ``clone`` as upstream does: Filter adds the per-node decisions to it).

PreBind runs in the binder process, which never saw that CycleState. After Reserve, the scheduler
calls ``VolumeBinding.export_state(state) -> bytes`` and ships the bytes in
``Placement.plugin_state["VolumeBinding"]``; the binder calls
``VolumeBinding.import_state(state, data)`` on a fresh CycleState before running PreBind, and the
deciding replica does the same for an ``UnreserveRequest``. The bytes are the msgpack encoding of
:class:`ExportedState` (versioned by its tag): whether every claim was already bound, the node
chosen, and the PodVolumes assumed for it (the PVs as pre-bound to their claims, the PVCs with
the selected-node annotation) — exactly what upstream's PreBind and Unreserve read.
See docs/plugin-state-handover.md for the callers' side of the contract.
"""

from __future__ import annotations

import msgspec

from ksched.api.base import DECODE_ERRORS
from ksched.plugins.volumebinding.binder import PodVolumeClaims, PodVolumes

STATE_KEY = "VolumeBinding"


class VolumeBindingState:
    """Upstream ``stateData``: written in PreFilter, filled by Filter, read until PreBind."""

    __slots__ = ("all_bound", "claims", "has_static_bindings", "pod_volumes_by_node", "reserved_node", "skip")

    def __init__(
        self,
        *,
        skip: bool = False,
        claims: PodVolumeClaims | None = None,
        all_bound: bool = False,
        pod_volumes_by_node: dict[str, PodVolumes] | None = None,
        reserved_node: str = "",
    ) -> None:
        #: the pod has no PVC (PreFilter returned Skip)
        self.skip = skip
        self.claims = claims
        self.all_bound = all_bound
        self.pod_volumes_by_node: dict[str, PodVolumes] = pod_volumes_by_node or {}
        self.has_static_bindings = False
        #: the node Reserve ran for ("" before Reserve)
        self.reserved_node = reserved_node

    def clone(self) -> VolumeBindingState:
        return self  # shared on purpose, as upstream (Filter writes per-node results into it)


class ExportedState(msgspec.Struct, kw_only=True, tag="VolumeBinding/v1"):
    """What PreBind and Unreserve need in another process."""

    all_bound: bool
    node_name: str = ""
    pod_volumes: PodVolumes | None = None


_encoder = msgspec.msgpack.Encoder()
_decoder = msgspec.msgpack.Decoder(ExportedState)


class StateExportError(ValueError):
    """Export before Reserve, or bytes that are not a VolumeBinding state."""


def export_state(state: VolumeBindingState) -> bytes:
    if state.skip:
        return _encoder.encode(ExportedState(all_bound=True))
    if not state.reserved_node:
        raise StateExportError("VolumeBinding state can only be exported after Reserve")
    return _encoder.encode(
        ExportedState(
            all_bound=state.all_bound,
            node_name=state.reserved_node,
            pod_volumes=state.pod_volumes_by_node.get(state.reserved_node),
        )
    )


def import_state(data: bytes) -> VolumeBindingState:
    try:
        exported = _decoder.decode(data)
    except DECODE_ERRORS as exc:  # ValidationError is a DecodeError
        raise StateExportError(f"not a VolumeBinding state: {exc}") from None
    by_node = {exported.node_name: exported.pod_volumes} if exported.pod_volumes is not None else {}
    return VolumeBindingState(
        skip=not exported.node_name and exported.all_bound,
        all_bound=exported.all_bound,
        pod_volumes_by_node=by_node,
        reserved_node=exported.node_name,
    )
