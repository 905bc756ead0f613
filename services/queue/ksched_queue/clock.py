"""The queue's clock: Unix seconds, injectable so tests step time instead of sleeping."""

from __future__ import annotations

import time
from typing import Protocol


class Clock(Protocol):
    def now(self) -> float:
        """Unix seconds (the time base of backoffs, timestamps and lease deadlines)."""
        ...


class SystemClock:
    """``time.time()``."""

    def now(self) -> float:
        return time.time()


class FakeClock:
    """A clock that moves only when told to (tests)."""

    def __init__(self, start: float = 1_700_000_000.0) -> None:
        self.t = start

    def now(self) -> float:
        return self.t

    def advance(self, seconds: float) -> float:
        self.t += seconds
        return self.t

    def set(self, t: float) -> None:
        self.t = t
