"""What the cache answered each scheduler replica lately, for the assume check.

A replica (one process: a *session*) numbers its assumes in the order it decides them (``seq``)
and tells, with each, the first of its assumes that had no answer when the decision's cycle began
(``basis_from``): those placements were in the state the decision saw. The cache answers one
session's assumes in order, so when it checks assume ``seq`` it has answered ``basis_from`` ..
``seq - 1``; the ones it refused were in the decision's state but are not in the cache. Bounded:
the oldest answers and sessions are dropped, and a question about them gets no answer.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field

from ksched.framework.podinfo import PodInfo

KEEP = 4096
"""Refusals and unreceived assumes kept per session (a replica has at most a few hundred
assumes under way)."""
SESSIONS = 64
"""Sessions kept (replicas, and their restarts)."""


@dataclass(slots=True)
class _Session:
    last: int = 0
    """The highest seq answered."""
    floor: int = 1
    """Answers to seqs below this are not known (dropped, or from before the session was seen)."""
    missing: set[int] = field(default_factory=set)
    """Seqs below ``last`` that never arrived."""
    refused: dict[int, PodInfo | None] = field(default_factory=dict)
    """seq -> the pod refused (None: which pod, or which version, is not known)."""


class AnswerLog:
    def __init__(self, keep: int = KEEP, sessions: int = SESSIONS) -> None:
        self._keep = keep
        self._max_sessions = sessions
        self._sessions: OrderedDict[str, _Session] = OrderedDict()

    def answered(self, session: str, seq: int, *, accepted: bool, pod: PodInfo | None = None) -> None:
        """The cache answered assume ``seq`` of ``session``; a refusal names the pod if it knows
        the version the replica decided on."""
        if not session:
            return
        s = self._sessions.get(session)
        if s is None:
            s = self._sessions[session] = _Session(last=seq - 1, floor=seq)
            while len(self._sessions) > self._max_sessions:
                self._sessions.popitem(last=False)
        else:
            self._sessions.move_to_end(session)
        if seq > s.last + 1:
            if seq - s.last > self._keep:
                s.floor = seq  # a gap too long to list
            else:
                s.missing.update(range(max(s.last + 1, s.floor), seq))
        s.last = max(s.last, seq)
        s.missing.discard(seq)
        if not accepted:
            s.refused[seq] = pod
        while len(s.refused) + len(s.missing) > self._keep:
            # refusals are recorded in seq order: the first is the oldest
            dropped = min(next(iter(s.refused), s.last), min(s.missing, default=s.last))
            s.floor = max(s.floor, dropped + 1)
            s.refused.pop(dropped, None)
            s.missing.discard(dropped)

    def retract(self, session: str, seqs: range) -> None:
        """Assumes ``seqs`` of ``session`` refused after all, which pods not known: a group commit
        rolled back (members answered as accepted, or never checked)."""
        for seq in seqs:
            self.answered(session, seq, accepted=False)
        s = self._sessions.get(session)
        if s is not None:
            s.refused = dict(sorted(s.refused.items()))  # kept in seq order

    def refused_between(self, session: str, first: int, seq: int) -> list[PodInfo] | None:
        """The pods refused among ``session``'s assumes ``first`` .. ``seq - 1``; None when not all
        of them were answered here (not received, refused without a known pod, or forgotten)."""
        if first >= seq:
            return []
        s = self._sessions.get(session)
        if s is None or first < s.floor or s.last < seq - 1:
            return None
        if any(first <= m < seq for m in s.missing):
            return None
        if seq - first < len(s.refused):
            found = [(k, s.refused[k]) for k in range(first, seq) if k in s.refused]
        else:
            found = [(k, pod) for k, pod in s.refused.items() if first <= k < seq]
        out: list[PodInfo] = []
        for _, pod in found:
            if pod is None:
                return None
            out.append(pod)
        return out
