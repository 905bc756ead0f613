"""A claim's device constraints (upstream ``matchAttributeConstraint`` and ``constraint.go``).

Constraints are monotonic: once a device is refused, adding more devices never helps, so the
allocator backtracks. Each successful :meth:`add` is undone by exactly one :meth:`remove`.
"""

from __future__ import annotations

from typing import Protocol

from ksched.api.resource import Device, DeviceAttribute
from ksched.plugins.dynamicresources.devices import DeviceID

AttributeValue = tuple[str, object]
"""(kind, value): ("string", "a100"), ("int", 3), ("bool", True), ("version", "1.2.3")."""
_UNKNOWN: AttributeValue = ("unknown", None)
"""An attribute with no value of a known type: it never matches another device's."""


class Constraint(Protocol):
    def add(self, request: str, sub_request: str, device: Device, device_id: DeviceID) -> bool: ...

    def remove(self, request: str, sub_request: str, device: Device, device_id: DeviceID) -> None: ...


def lookup_attribute(device: Device, device_id: DeviceID, name: str) -> DeviceAttribute | None:
    """Upstream ``lookupAttribute``: the fully qualified name, or its id when the domain is the driver's."""
    attr = device.attributes.get(name)
    if attr is not None:
        return attr
    domain, sep, ident = name.partition("/")
    if not sep or domain != device_id.driver:
        return None
    return device.attributes.get(ident)


def _value(attr: DeviceAttribute) -> AttributeValue | None:
    if attr.string_value is not None:
        return ("string", attr.string_value)
    if attr.int_value is not None:
        return ("int", attr.int_value)
    if attr.bool_value is not None:
        return ("bool", attr.bool_value)
    if attr.version_value is not None:
        return ("version", attr.version_value)  # minimal semver form: string equality is exact
    return None


class _RequestScoped:
    """A constraint that applies to the listed requests (all of them when none are listed)."""

    def __init__(self, requests: list[str], attribute: str) -> None:
        self.requests = set(requests)
        self.attribute = attribute

    def candidate(
        self, request: str, sub_request: str, device: Device, device_id: DeviceID
    ) -> tuple[bool, AttributeValue | None]:
        """(True, None) when the constraint does not apply; (False, None) when the device lacks the
        attribute; else (False, its value) for the subclass to judge."""
        if not self.applies(request, sub_request):
            return True, None
        attr = lookup_attribute(device, device_id, self.attribute)
        return (False, None) if attr is None else (False, _value(attr) or _UNKNOWN)

    def applies(self, request: str, sub_request: str) -> bool:
        if not self.requests:
            return True
        if not sub_request:
            return request in self.requests
        return request in self.requests or f"{request}/{sub_request}" in self.requests


class MatchAttribute(_RequestScoped):
    """All devices must have the attribute, with one value."""

    def __init__(self, requests: list[str], attribute: str) -> None:
        super().__init__(requests, attribute)
        self.value: AttributeValue = _UNKNOWN
        self.num_devices = 0

    def add(self, request: str, sub_request: str, device: Device, device_id: DeviceID) -> bool:
        unaffected, value = self.candidate(request, sub_request, device, device_id)
        if unaffected or value is None:
            return unaffected
        if self.num_devices == 0:
            self.value, self.num_devices = value, 1
            return True
        if value is _UNKNOWN or value != self.value:
            return False
        self.num_devices += 1
        return True

    def remove(self, request: str, sub_request: str, device: Device, device_id: DeviceID) -> None:
        if self.applies(request, sub_request):
            self.num_devices -= 1


class DistinctAttribute(_RequestScoped):
    """No two devices may share the attribute's value. As upstream, values are remembered per
    request name, so a later device of the same request replaces the earlier one's value."""

    def __init__(self, requests: list[str], attribute: str) -> None:
        super().__init__(requests, attribute)
        self.values: dict[str, AttributeValue] = {}
        self.num_devices = 0

    def add(self, request: str, sub_request: str, device: Device, device_id: DeviceID) -> bool:
        unaffected, value = self.candidate(request, sub_request, device, device_id)
        if unaffected or value is None:
            return unaffected
        if self.num_devices and any(value is _UNKNOWN or v == value for v in self.values.values()):
            return False
        self.values[request] = value
        self.num_devices += 1
        return True

    def remove(self, request: str, sub_request: str, device: Device, device_id: DeviceID) -> None:
        if self.applies(request, sub_request):
            self.values.pop(request, None)
            self.num_devices -= 1
