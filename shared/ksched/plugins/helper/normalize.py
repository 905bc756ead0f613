"""Score normalization shared by score plugins (upstream ``helper.DefaultNormalizeScore``)."""

from __future__ import annotations

import numpy as np

from ksched.framework.interfaces import Int64Array


def default_normalize_score(max_priority: int, reverse: bool, scores: Int64Array) -> None:
    """Scale ``scores`` in place from ``[0, max(scores)]`` to ``[0, max_priority]``, then optionally
    reverse them (``max_priority - score``). All zeros stay 0, or become ``max_priority`` when reversed."""
    if len(scores) == 0:
        return
    max_count = max(int(scores.max()), 0)
    if max_count == 0:
        if reverse:
            scores[:] = max_priority
        return
    scaled = scores * max_priority
    # Go integer division truncates toward zero (scores are non-negative in practice).
    quotient = np.where(scaled >= 0, scaled // max_count, -((-scaled) // max_count))
    if reverse:
        quotient = max_priority - quotient
    scores[:] = quotient
