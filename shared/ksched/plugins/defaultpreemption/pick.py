"""Choosing the node to preempt on among the candidates (upstream ``pickOneNodeForPreemption``).

Criteria, each applied only to the nodes tied on the previous ones:
1. the fewest PodDisruptionBudget violations;
2. the lowest priority of the most important victim;
3. the smallest sum of victim priorities (each shifted by 2^31 so negative priorities count);
4. the fewest victims;
5. the latest start time among the highest-priority victims (earliest of those on each node);
6. the node that comes first in the snapshot. Upstream's last tie-break is effectively random (the
   candidates come from a map, and pods without a start time read the clock as they are
   compared); ksched makes it reproducible.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ksched.plugins.defaultpreemption.candidates import Candidate
from ksched.plugins.defaultpreemption.ordering import start_time

ScoreFn = Callable[[Candidate], float]
_PRIORITY_SHIFT = 2**31


def fewest_pdb_violations(c: Candidate) -> float:
    return -c.num_pdb_violations


def lowest_highest_priority(c: Candidate) -> float:
    return -c.victims[0].priority


def smallest_priority_sum(c: Candidate) -> float:
    return -sum(v.priority + _PRIORITY_SHIFT for v in c.victims)


def fewest_victims(c: Candidate) -> float:
    return -len(c.victims)


def earliest_start_of_highest_priority(c: Candidate) -> float:
    """Upstream ``GetEarliestPodStartTime``: among the victims of the highest priority."""
    top = max(v.priority for v in c.victims)
    return min(start_time(v) for v in c.victims if v.priority == top)


def latest_start_time(c: Candidate) -> float:
    return earliest_start_of_highest_priority(c)


DEFAULT_SCORE_FUNCS: tuple[ScoreFn, ...] = (
    fewest_pdb_violations,
    lowest_highest_priority,
    smallest_priority_sum,
    fewest_victims,
    latest_start_time,
)


def pick_one_node_for_preemption(
    candidates: Sequence[Candidate], score_funcs: Sequence[ScoreFn] = DEFAULT_SCORE_FUNCS
) -> Candidate | None:
    """The best candidate by ``score_funcs`` (higher is better), ties going to the next function."""
    remaining = list(candidates)
    if not remaining:
        return None
    for score in score_funcs:
        if len(remaining) == 1:
            break
        scores = [score(c) for c in remaining]
        best = max(scores)
        remaining = [c for c, s in zip(remaining, scores, strict=True) if s == best]
    return min(remaining, key=lambda c: c.order)
