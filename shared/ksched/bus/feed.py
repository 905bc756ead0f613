"""The consumer side of the informer's ordered streams (``P_feed`` and ``P_snapshot``).

Contract (docs/bus.md, "Bootstrap and stream order"): a bootstrap reply's ``stream_seq`` is the
stream sequence the bootstrap was taken at. Every message at or below it is reflected in the
bootstrap; every message above it is not, and is delivered by an ordered consumer started at
``stream_seq + 1``. Whether a message is "already in the bootstrap" is decided by its stream
sequence alone, never by the cache generation it carries: many feed messages (a pod created, a
pending pod updated) change no snapshot generation.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class FeedVerdict(Enum):
    APPLY = "apply"
    SKIP = "skip"
    """A redelivery: the cursor is past this stream sequence already."""
    RESYNC = "resync"
    """A message was lost (a gap in the stream sequence) or the informer restarted (a new epoch):
    take a new bootstrap."""


@dataclass(slots=True)
class FeedCursor:
    """Position in an informer stream: the informer's epoch and the last stream sequence applied
    (starting at the bootstrap's ``stream_seq``)."""

    epoch: str = ""
    stream_seq: int = 0
    filtered: bool = False
    """The consumer reads one subject of the stream (the replicas' ``P.feed.nominated``): the
    sequences between its messages are the other subjects', so only a new epoch means a resync."""

    def check(self, epoch: str, stream_seq: int) -> FeedVerdict:
        """Judge the next message of the ordered consumer, which delivers every message of the
        stream (of its subject, ``filtered``) in stream order; APPLY advances the cursor."""
        if stream_seq <= self.stream_seq:
            return FeedVerdict.SKIP
        if epoch != self.epoch or (stream_seq != self.stream_seq + 1 and not self.filtered):
            return FeedVerdict.RESYNC
        self.stream_seq = stream_seq
        return FeedVerdict.APPLY
