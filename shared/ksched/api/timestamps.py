"""The Kubernetes API's two timestamp encodings, written the way the API server accepts them.

``metav1.Time`` (conditions, ``creationTimestamp``...): RFC 3339 in UTC, whole seconds
(``2026-01-01T00:00:00Z``). ``metav1.MicroTime`` (Lease ``acquireTime``/``renewTime``, Event
``eventTime`` and ``series.lastObservedTime``): UTC with exactly six fractional digits
(``2026-01-01T00:00:00.000000Z``); the API server answers 400 to any other form, including the
``2026-01-01T00:00:00+00:00`` that ``datetime.isoformat()`` (and so kubernetes_asyncio's typed
models) writes.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime

Moment = float | datetime | None
"""Seconds since the epoch, a datetime (naive ones are taken as UTC), or None for now."""


def _utc(moment: Moment) -> datetime:
    if isinstance(moment, datetime):
        return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)
    return datetime.fromtimestamp(time.time() if moment is None else moment, tz=UTC)


_this_second: list[tuple[int, str]] = [(-1, "")]
"""The current second and its text (kubesim stamps many objects a second)."""


def rfc3339(moment: Moment = None) -> str:
    """``metav1.Time`` text: UTC, whole seconds (the fraction is dropped, as the API server does)."""
    if moment is None:
        second = int(time.time())
        cached, text = _this_second[0]
        if second != cached:
            text = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(second))
            _this_second[0] = (second, text)
        return text
    return _utc(moment).replace(tzinfo=None).isoformat(timespec="seconds") + "Z"


def micro_time(moment: Moment = None) -> str:
    """``metav1.MicroTime`` text: UTC with six fractional digits."""
    return _utc(moment).replace(tzinfo=None).isoformat(timespec="microseconds") + "Z"
