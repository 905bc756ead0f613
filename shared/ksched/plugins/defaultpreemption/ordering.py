"""Which victim is more important (upstream ``util.MoreImportantPod``) and the pod start times
node picking compares.

Pods are ordered by descending priority, then by ascending start time (the older pod is more
important). A pod without ``status.startTime`` counts as started "now", later than every recorded
start time. Upstream reads the clock at each such lookup, so when both pods of a comparison have
no start time the first one looks older: :func:`more_important` reproduces that (it is what
upstream's victim order depends on, see :mod:`.gosort`), and node picking compares "now" as
:data:`NOW`, one fixed instant later than any start time.
"""

from __future__ import annotations

import math
from datetime import datetime

from ksched.framework.podinfo import PodInfo
from ksched.plugins.defaultpreemption.gosort import go_sort_slice

NOW = math.inf
"""The start time of a pod that has not started (later than any real start time)."""

_START_KEY = "defaultpreemption/start-time"
_INSERTION_SORT_MAX = 12
"""Go's ``sort.Slice`` sorts up to this many elements by insertion."""


def parse_time(value: str) -> float:
    """Seconds since the epoch of an RFC 3339 timestamp (``2024-05-01T10:00:00Z``)."""
    return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()


def start_time(pod: PodInfo) -> float:
    """The pod's ``status.startTime`` in epoch seconds, :data:`NOW` when unset; memoized."""
    cached = pod.cache.get(_START_KEY)
    if isinstance(cached, float):
        return cached
    raw = pod.pod.status.start_time
    try:
        value = parse_time(raw) if raw else NOW
    except ValueError:
        value = NOW
    pod.cache[_START_KEY] = value
    return value


def more_important(a: PodInfo, b: PodInfo) -> bool:
    """Upstream ``MoreImportantPod``: higher priority, or equal priority and started earlier; of two
    pods without a start time, ``a`` (whose clock reading comes first) is the older."""
    if a.priority != b.priority:
        return a.priority > b.priority
    ta, tb = start_time(a), start_time(b)
    if ta == NOW:
        return tb == NOW
    return ta < tb


def sort_by_importance(pods: list[PodInfo]) -> None:
    """Most important first, in the order upstream's ``sort.Slice`` leaves them.

    Up to 12 pods Go's ``sort.Slice`` is an insertion sort, which only ever asks whether the pod
    being inserted is more important than one placed before it. Under :func:`more_important` that
    is a total order: priority descending, then start time ascending, pods with equal start times
    keeping their order and pods without a start time coming last in reverse order. A key sort
    gives the same result much faster; longer lists replay Go's algorithm.
    """
    if len(pods) > _INSERTION_SORT_MAX:
        go_sort_slice(pods, more_important)
        return
    keyed = []
    for i, p in enumerate(pods):
        t = start_time(p)
        keyed.append((-p.priority, t, -i if t == NOW else i, p))
    keyed.sort(key=_first_three)
    pods[:] = [k[3] for k in keyed]


def _first_three(k: tuple[int, float, int, PodInfo]) -> tuple[int, float, int]:
    return k[0], k[1], k[2]
