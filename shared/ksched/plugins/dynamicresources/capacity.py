"""Consumable capacity of devices shared between claims (upstream ``consumable_capacity.go``,
DRAConsumableCapacity)."""

from __future__ import annotations

from collections.abc import Mapping

from ksched.api.resource import (
    CapacityRequestPolicy,
    CapacityRequestPolicyRange,
    CapacityRequirements,
    DeviceCapacity,
)
from ksched.apimachinery.quantity import Format, Quantity, new_quantity, parse_quantity
from ksched.plugins.dynamicresources.devices import ConsumedCapacity


class CapacityError(ValueError):
    """A request names a capacity the device does not have."""


def _q(text: str) -> Quantity:
    return parse_quantity(text)


def request_over_capacity(
    current: ConsumedCapacity,
    requested: CapacityRequirements | None,
    capacity: Mapping[str, DeviceCapacity],
    allocating: ConsumedCapacity | None,
) -> bool:
    """Upstream ``CmpRequestOverCapacity``: True when the request fits beside what is consumed and
    being allocated, within each capacity's request policy."""
    requests = requested.requests if requested is not None else {}
    if any(name not in capacity for name in requests):
        raise CapacityError("some requested capacity has not been defined")
    total = dict(current)
    for name, cap in capacity.items():
        wanted = requests.get(name)
        consumed = consumed_capacity(_q(wanted) if wanted is not None else None, cap)
        if violates_policy(consumed, cap.request_policy):
            return False
        total[name] = total[name] + consumed if name in total else consumed
        if allocating is not None and name in allocating:
            total[name] = total[name] + allocating[name]
        if total[name].cmp(_q(cap.value)) > 0:
            return False
    return True


def consumed_capacity(requested: Quantity | None, cap: DeviceCapacity) -> Quantity:
    """Upstream ``calculateConsumedCapacity``: what a request takes from one capacity."""
    policy = cap.request_policy
    if requested is None:
        if policy is not None and policy.default is not None:
            return _q(policy.default)
        return _q(cap.value)
    if policy is None:
        return requested
    if policy.valid_range is not None and policy.valid_range.min is not None:
        return _round_up_range(requested, policy.valid_range)
    if policy.valid_values:
        for valid in policy.valid_values:
            if requested.cmp(_q(valid)) <= 0:
                return _q(valid)
    return requested


def _round_up_range(requested: Quantity, valid: CapacityRequestPolicyRange) -> Quantity:
    assert valid.min is not None
    low = _q(valid.min)
    if requested.cmp(low) < 0:
        return low
    if valid.step is None:
        return requested
    step, start = _q(valid.step).value(), low.value()
    n, mod = divmod(requested.value() - start, step)
    if mod:
        n += 1
    return new_quantity(start + step * n, Format.BINARY_SI)


def violates_policy(requested: Quantity, policy: CapacityRequestPolicy | None) -> bool:
    """Upstream ``violatesPolicy``."""
    if policy is None:
        return False
    if policy.default is not None and requested == _q(policy.default):
        return False
    if policy.valid_range is not None:
        valid = policy.valid_range
        if valid.max is not None and requested.cmp(_q(valid.max)) > 0:
            return True
        if valid.step is not None:
            start = _q(valid.min).value() if valid.min is not None else 0
            if (requested.value() - start) % _q(valid.step).value():
                return True
        return False
    if policy.valid_values:
        return all(requested.cmp(_q(v)) != 0 for v in policy.valid_values)
    return False


def consumed_from_request(
    requested: CapacityRequirements | None, capacity: Mapping[str, DeviceCapacity]
) -> ConsumedCapacity:
    """Upstream ``GetConsumedCapacityFromRequest``: what a request consumes of every capacity."""
    requests = requested.requests if requested is not None else {}
    return {
        name: consumed_capacity(_q(requests[name]) if name in requests else None, cap)
        for name, cap in capacity.items()
    }
