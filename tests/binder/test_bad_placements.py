"""A placement the binder cannot read fails like a rejected binding (forget, unreserve, requeue:
the pod is scheduled again) instead of escaping as an unexpected error the pod never recovers from."""

from __future__ import annotations

import msgspec
import pytest

from ksched.bus.messages import Placement
from ksched.framework.cycle_state import CycleState
from ksched.framework.runtime import PluginsByPoint
from tests.binder.test_metrics import Binds, binder, placement


class Stateful(Binds):
    """A Bind plugin with exported state (as VolumeBinding has); any bytes fail to import."""

    name = "Stateful"

    def import_state(self, state: CycleState, data: bytes) -> None:
        raise ValueError(f"not a Stateful state: {data!r}")


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"pod": b"{broken"}, "the placement's pod does not decode: JSON is malformed"),
        ({"pod": b'{"metadata": {"name": "\xff"}}'}, "the placement's pod does not decode: 'utf-8' codec"),
        (
            {"plugin_state": {"Stateful": b"\x00"}},
            "the placement's state of plugin 'Stateful' does not import",
        ),
    ],
    ids=["json", "utf8", "plugin-state"],
)
async def test_an_unreadable_placement_fails_the_binding(change: dict[str, object], reason: str) -> None:
    """Found by tests/fuzz/test_binder_bus.py: the decode error escaped ``bind``, was logged with a
    traceback as unexpected, and the placement was acknowledged without forgetting the assumption."""
    service = binder()
    service.frameworks["default-scheduler"].set_plugins(PluginsByPoint(bind=[Stateful()]))
    failures: list[str] = []

    async def fail(p: Placement, why: str, plugins: list[str] | None = None) -> None:
        failures.append(why)

    service._fail = fail  # type: ignore[method-assign,assignment]
    bad = msgspec.structs.replace(placement("p", flushed=False), **change)
    assert await service.bind(bad) == "failed"
    assert len(failures) == 1 and failures[0].startswith(reason), failures
