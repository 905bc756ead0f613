"""Taints and tolerations (upstream ``Toleration.ToleratesTaint`` and helpers)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence

from ksched.api.core import Taint, Toleration

TAINT_NODE_UNSCHEDULABLE = "node.kubernetes.io/unschedulable"
NO_SCHEDULE = "NoSchedule"
PREFER_NO_SCHEDULE = "PreferNoSchedule"
NO_EXECUTE = "NoExecute"

_DECIMAL_INTEGER = re.compile(r"^(0|-?[1-9][0-9]*)$")

#: Gt/Lt toleration operators are behind upstream's alpha gate TaintTolerationComparisonOperators (off).
COMPARISON_OPERATORS_ENABLED = False


def tolerates(
    toleration: Toleration, taint: Taint, comparison_operators: bool = COMPARISON_OPERATORS_ENABLED
) -> bool:
    if toleration.effect and toleration.effect != taint.effect:
        return False
    if toleration.key and toleration.key != taint.key:
        return False
    op = toleration.operator
    if op in ("", "Equal"):
        return toleration.value == taint.value
    if op == "Exists":
        return True
    if op in ("Lt", "Gt") and comparison_operators:
        if not (_DECIMAL_INTEGER.match(toleration.value) and _DECIMAL_INTEGER.match(taint.value)):
            return False
        tol, tnt = int(toleration.value), int(taint.value)
        return tnt < tol if op == "Lt" else tnt > tol
    return False


def tolerations_tolerate(tolerations: Iterable[Toleration], taint: Taint) -> bool:
    return any(tolerates(t, taint) for t in tolerations)


def find_untolerated_taint(
    taints: Sequence[Taint], tolerations: Sequence[Toleration], include: Callable[[Taint], bool] | None = None
) -> Taint | None:
    """The first taint (among those ``include`` accepts) that no toleration tolerates."""
    for taint in taints:
        if include is not None and not include(taint):
            continue
        if not tolerations_tolerate(tolerations, taint):
            return taint
    return None


def is_schedule_effect(taint: Taint) -> bool:
    """NoSchedule and NoExecute taints are the ones Filter considers."""
    return taint.effect in (NO_SCHEDULE, NO_EXECUTE)
