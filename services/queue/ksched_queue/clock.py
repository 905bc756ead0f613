"""The queue's clock: Unix seconds, injectable so tests step time instead of sleeping
(``tests.queue.testing.FakeClock``)."""

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
