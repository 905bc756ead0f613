"""Decoding the objects of a ClusterEventMsg (API JSON) into the ``ksched.api`` structs hint
functions expect, by the event's resource."""

from __future__ import annotations

import logging
from typing import Any

import msgspec

from ksched.api.base import DECODE_ERRORS, K8s
from ksched.api.core import Node, PersistentVolume, PersistentVolumeClaim, Pod
from ksched.api.resource import DeviceClass, ResourceClaim, ResourceSlice
from ksched.api.scheduling import PodGroup
from ksched.api.storage import CSIDriver, CSINode, CSIStorageCapacity, StorageClass
from ksched.framework.events import EventResource

log = logging.getLogger(__name__)

RESOURCE_TYPES: dict[str, type[K8s]] = {
    EventResource.POD: Pod,
    EventResource.ASSIGNED_POD: Pod,
    EventResource.UNSCHEDULED_POD: Pod,
    EventResource.NODE: Node,
    EventResource.PERSISTENT_VOLUME: PersistentVolume,
    EventResource.PERSISTENT_VOLUME_CLAIM: PersistentVolumeClaim,
    EventResource.CSI_NODE: CSINode,
    EventResource.CSI_DRIVER: CSIDriver,
    EventResource.CSI_STORAGE_CAPACITY: CSIStorageCapacity,
    EventResource.STORAGE_CLASS: StorageClass,
    EventResource.RESOURCE_CLAIM: ResourceClaim,
    EventResource.RESOURCE_SLICE: ResourceSlice,
    EventResource.DEVICE_CLASS: DeviceClass,
    EventResource.POD_GROUP: PodGroup,
}
"""Resources whose objects decode to a struct; others (newer ones) stay plain dicts."""

_decoders: dict[type[K8s], msgspec.json.Decoder[Any]] = {}
_plain = msgspec.json.Decoder()


class ObjectDecodeError(ValueError):
    """An event object that is not valid JSON for its resource (the message names both)."""


def decode_object(resource: str, raw: bytes | None, *, key: str = "") -> object:
    """The object of ``resource`` in ``raw`` (None stays None). Unknown resources give a dict."""
    if raw is None:
        return None
    kind = RESOURCE_TYPES.get(resource)
    try:
        if kind is None:
            return _plain.decode(raw)
        decoder = _decoders.get(kind)
        if decoder is None:
            decoder = _decoders[kind] = msgspec.json.Decoder(kind)
        return decoder.decode(raw)
    except DECODE_ERRORS as exc:
        raise ObjectDecodeError(f"{resource} {key or '?'}: bad object JSON: {exc}") from None
