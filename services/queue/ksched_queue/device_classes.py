"""The queue's DeviceClasses (DRAExtendedResource; docs/dra.md): NodeResourcesFit's hints read them
from the profiles' snapshot to tell which extended resources DRA backs, as upstream's hints read the
DRA manager's extended-resource cache. Filled from the pending-pods bootstrap (the informer's classes
at the bootstrap's stream position), then kept by the feed's DeviceClass events."""

from __future__ import annotations

import logging
from collections.abc import Sequence

import msgspec

from ksched.api.base import DECODE_ERRORS
from ksched.api.resource import DeviceClass
from ksched.framework.objects import ClusterObjects

log = logging.getLogger(__name__)

_device_class = msgspec.json.Decoder(DeviceClass)


class QueueDeviceClasses:
    """Keeps ``objects.device_classes`` (by name) as the informer's cache has them."""

    def __init__(self, objects: ClusterObjects) -> None:
        self.objects = objects

    def replace_all(self, raw: Sequence[bytes]) -> int:
        """The classes of a bootstrap (API JSON each) replace those known; returns how many were bad
        (skipped, logged)."""
        classes: dict[str, DeviceClass] = {}
        bad = 0
        for item in raw:
            try:
                dc = _device_class.decode(item)
            except DECODE_ERRORS as exc:
                bad += 1
                log.warning("bootstrap: skipped a DeviceClass with bad JSON: %s", exc)
                continue
            classes[dc.metadata.name] = dc
        self.objects.device_classes.clear()
        self.objects.device_classes.update(classes)
        return bad

    def changed(self, old: object, new: object) -> None:
        """A DeviceClass event (objects decoded by ``objects.decode_object``), before the hints run."""
        if isinstance(new, DeviceClass):
            self.objects.device_classes[new.metadata.name] = new
        elif isinstance(old, DeviceClass):
            self.objects.device_classes.pop(old.metadata.name, None)
