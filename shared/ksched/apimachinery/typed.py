"""The scheduler's ``util.As``: the typed (old, new) pair a queueing-hint function works on."""

from __future__ import annotations

from typing import TypeVar

T = TypeVar("T")


def as_typed(old: object, new: object, kind: type[T]) -> tuple[T | None, T | None]:
    """``(old, new)`` checked to be ``kind`` or None; TypeError otherwise (the queue then requeues).

    ``new`` is checked first, as upstream does, so its error wins when both are wrong.
    """
    for obj in (new, old):
        if obj is not None and not isinstance(obj, kind):
            raise TypeError(f"expected {kind.__name__}, but got {type(obj).__name__}")
    return old, new  # type: ignore[return-value]
