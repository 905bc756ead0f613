"""CycleState: per-attempt scratch space that plugins share within one scheduling cycle."""

from __future__ import annotations

from typing import Protocol, TypeVar, runtime_checkable

from ksched.framework.record import CycleRecord

T = TypeVar("T")


@runtime_checkable
class StateData(Protocol):
    """Plugin state kept in a CycleState; ``clone`` must copy anything AddPod/RemovePod mutate."""

    def clone(self) -> StateData: ...


class CycleState:
    """Keyed plugin state for one scheduling attempt, plus the framework's skip sets."""

    __slots__ = (
        "_data",
        "pod_group_cycle",
        "record",
        "record_plugin_metrics",
        "skip_filter_plugins",
        "skip_score_plugins",
    )

    def __init__(self) -> None:
        self._data: dict[str, object] = {}
        self.skip_filter_plugins: frozenset[str] = frozenset()
        self.skip_score_plugins: frozenset[str] = frozenset()
        self.record_plugin_metrics = False
        #: a pod group scheduling cycle (upstream ``IsPodGroupSchedulingCycle``): plugins read the
        #: group's state from the snapshot
        self.pod_group_cycle = False
        #: what each plugin returned, recorded only when set (kube-scheduler-simulator's results);
        #: a clone (preemption's dry runs) records nothing
        self.record: CycleRecord | None = None

    def write(self, key: str, value: object) -> None:
        self._data[key] = value

    def read(self, key: str) -> object:
        """The value under ``key``; KeyError names the key when a PreFilter/PreScore did not run."""
        try:
            return self._data[key]
        except KeyError:
            raise KeyError(f"{key!r} not found in cycle state") from None

    def read_as(self, key: str, kind: type[T]) -> T:
        """The value under ``key``; KeyError when absent, TypeError (upstream's text) when not a ``kind``."""
        value = self.read(key)
        if not isinstance(value, kind):
            raise TypeError("unable to convert state into stateData")
        return value

    def get(self, key: str, kind: type[T]) -> T | None:
        """The value under ``key`` if it is a ``kind``, else None."""
        value = self._data.get(key)
        return value if isinstance(value, kind) else None

    def delete(self, key: str) -> None:
        self._data.pop(key, None)

    def clone(self) -> CycleState:
        """A copy whose StateData values are cloned (used for nominated pods and preemption)."""
        out = CycleState()
        out._data = {k: (v.clone() if isinstance(v, StateData) else v) for k, v in self._data.items()}
        out.skip_filter_plugins = self.skip_filter_plugins
        out.skip_score_plugins = self.skip_score_plugins
        out.record_plugin_metrics = self.record_plugin_metrics
        out.pod_group_cycle = self.pod_group_cycle
        return out
