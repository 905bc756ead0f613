"""Decoding the objects of a ClusterEventMsg (API JSON) into the ``ksched.api`` structs hint
functions expect, by the event's resource."""

from __future__ import annotations

import logging
from typing import Any

import msgspec

from ksched.api.base import DECODE_ERRORS, K8s
from ksched.api.core import Pod
from ksched.api.kinds import KINDS
from ksched.framework.events import EventResource

log = logging.getLogger(__name__)

RESOURCE_TYPES: dict[str, type[K8s]] = {
    EventResource.ASSIGNED_POD: Pod,
    EventResource.UNSCHEDULED_POD: Pod,
    **{k.event_resource: k.struct for k in KINDS if k.event_resource and k.struct is not None},
}
"""Resources whose objects decode to a struct (the registry's kinds by event resource, pods
assigned or not); others (VolumeAttachments) stay plain dicts."""

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
