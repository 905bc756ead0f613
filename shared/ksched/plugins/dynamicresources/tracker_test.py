"""ClaimTracker: the devices taken follow the snapshot's claims (added, replaced, removed, in any
order) and each change moves the version of the pools it touches."""

from __future__ import annotations

import random

from ksched.api.resource import ResourceClaim
from ksched.plugins.dynamicresources.testing import allocation, claim, request
from ksched.plugins.dynamicresources.tracker import ClaimTracker

DRIVER = "driver-a"


def _claim(name: str, device: str | None) -> ResourceClaim:
    status = None if device is None else {"allocation": allocation("node", ("req", DRIVER, "pool", device))}
    return claim(name, request("req", "class"), status=status)


def test_the_devices_taken_follow_every_change_of_the_claims() -> None:
    rng = random.Random(7)
    claims: dict[str, ResourceClaim] = {}
    tracker = ClaimTracker(lambda: claims)
    for step in range(300):
        name = f"c{rng.randrange(12)}"
        action = rng.random()
        if action < 0.2:
            claims.pop(name, None)
        elif action < 0.3 and name in claims:  # removed and added again: now at the table's end
            claims[name] = claims.pop(name)
        else:
            claims[name] = _claim(name, rng.choice([None, "d0", "d1", "d2", f"own-{name}"]))
        fresh = ClaimTracker(lambda: claims).allocated_state()
        assert tracker.allocated_state().allocated_devices == fresh.allocated_devices, step


def test_a_change_moves_the_version_of_its_pool_only() -> None:
    claims: dict[str, ResourceClaim] = {"a": _claim("a", None)}
    tracker = ClaimTracker(lambda: claims)
    before = tracker.allocated_state().versions
    assert before is not None and before.get((DRIVER, "pool"), 0) == 0
    claims["a"] = _claim("a", "d0")
    after = tracker.allocated_state().versions
    assert after is not None and after[(DRIVER, "pool")] > 0
    assert tracker.allocated_state().versions == after  # nothing changed since
    claims["b"] = _claim("b", None)  # a claim without devices touches no pool
    assert tracker.allocated_state().versions == after
