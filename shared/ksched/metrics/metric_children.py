"""A metric's labelled children, kept: ``labels()`` validates and looks up its key on every call,
which costs more than the observation itself on a per-pod path."""

from __future__ import annotations

from typing import Generic, TypeVar

from prometheus_client.metrics import MetricWrapperBase

M = TypeVar("M", bound=MetricWrapperBase)


class Children(Generic[M]):
    """``children(*label_values)`` is ``metric.labels(*label_values)``, looked up once per values."""

    def __init__(self, metric: M) -> None:
        self.metric = metric
        self._children: dict[tuple[str, ...], M] = {}

    def __call__(self, *values: str) -> M:
        child = self._children.get(values)
        if child is None:
            child = self._children[values] = self.metric.labels(*values)
        return child
