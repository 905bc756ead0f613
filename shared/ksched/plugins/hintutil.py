"""Helpers for queueing-hint functions (upstream ``util.As``)."""

from __future__ import annotations

from typing import TypeVar

T = TypeVar("T")


def as_typed(old: object, new: object, kind: type[T]) -> tuple[T | None, T | None]:
    """``(old, new)`` checked to be ``kind`` or None; TypeError otherwise (the queue then requeues)."""
    for obj in (new, old):
        if obj is not None and not isinstance(obj, kind):
            raise TypeError(f"expected {kind.__name__}, but got {type(obj).__name__}")
    return old, new  # type: ignore[return-value]
