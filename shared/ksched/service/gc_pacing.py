"""Full garbage collections on a clock instead of on allocations. CPython runs a full (generation 2)
collection whenever the long-lived objects grew by a quarter, and each walks every object of the
process: in the informer and a scheduler replica, whose caches hold every node and pod, that was
13-20 % of their CPU while pods arrived (docs/benchmarks-history.md). The young generations are collected
as before, the youngest less often (:data:`YOUNG_THRESHOLD`); automatic full collections are off
and one runs every ``KSCHED_FULL_GC_INTERVAL`` seconds (default 60; 0 keeps CPython's behaviour).
Unlike ``gc.freeze()``, nothing escapes collection: cyclic garbage among old objects lives at most
one interval."""

from __future__ import annotations

import asyncio
import gc
import logging
import os
import time

INTERVAL_ENV = "KSCHED_FULL_GC_INTERVAL"
DEFAULT_INTERVAL = 60.0
NEVER = 1_000_000_000
"""A generation-2 threshold no count reaches: no automatic full collection."""
YOUNG_THRESHOLD = 20_000
"""Allocations (net of deallocations) between two collections of the youngest generation while
the full ones are paced (CPython's default: 700). A service's objects that live a few
milliseconds (a feed batch, a cycle's state) then mostly die before a collection walks them: in
alternated ``bench e2e`` runs all but kubesim spent 0-14 % less in each of five pairs
(docs/benchmarks-history.md)."""

log = logging.getLogger(__name__)


def interval() -> float:
    """The configured interval in seconds (0: CPython's automatic full collections)."""
    raw = os.environ.get(INTERVAL_ENV, "")
    if not raw:
        return DEFAULT_INTERVAL
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"{INTERVAL_ENV}: {raw!r} is not a number of seconds") from None
    if value < 0:
        raise ValueError(f"{INTERVAL_ENV}: {raw!r} is negative")
    return value


async def full_collections(every: float) -> None:
    """Run a full collection every ``every`` seconds, with automatic ones off and the youngest
    generation collected every :data:`YOUNG_THRESHOLD` allocations, until cancelled (then CPython's
    thresholds are back). A service runs it as a named task."""
    young, middle, old = gc.get_threshold()
    gc.set_threshold(max(young, YOUNG_THRESHOLD), middle, NEVER)
    try:
        while True:
            await asyncio.sleep(every)
            started = time.process_time()
            found = gc.collect()
            log.debug("full collection: %d unreachable, %.3f s", found, time.process_time() - started)
    finally:
        gc.set_threshold(young, middle, old)
