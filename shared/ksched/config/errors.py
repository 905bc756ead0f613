"""``ConfigError``: an unusable configuration, with every problem found.

The problems read like kube-scheduler's (``<path>: Invalid value: <value>: <detail>``); they are
built with :mod:`ksched.apimachinery.field`.
"""

from __future__ import annotations

from collections.abc import Iterable

from ksched.apimachinery.field import FieldError

__all__ = ["ConfigError"]


class ConfigError(ValueError):
    """An unusable configuration; ``messages`` lists every problem found (one line each)."""

    def __init__(self, messages: Iterable[str | FieldError]) -> None:
        self.messages: list[str] = [str(m) for m in messages]
        super().__init__("\n".join(self.messages))
