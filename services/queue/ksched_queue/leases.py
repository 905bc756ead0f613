"""Leases on popped pods: one holder per pod, a deadline on the queue's clock, renewable."""

from __future__ import annotations

import secrets
from dataclasses import dataclass

from .clock import Clock

DEFAULT_LEASE_SECONDS = 30.0


@dataclass(slots=True)
class Lease:
    lease_id: str
    uid: str
    scheduler_id: str
    deadline: float
    trace_id: str


class LeaseTable:
    """Leases by id and by pod uid. Granting a lease on a pod that already has one is a bug and raises."""

    def __init__(self, clock: Clock, lease_seconds: float = DEFAULT_LEASE_SECONDS) -> None:
        if lease_seconds <= 0:
            raise ValueError(f"lease_seconds must be positive, got {lease_seconds}")
        self.clock = clock
        self.lease_seconds = lease_seconds
        self._by_id: dict[str, Lease] = {}
        self._by_pod: dict[str, str] = {}

    def __len__(self) -> int:
        return len(self._by_id)

    def all(self) -> list[Lease]:
        return list(self._by_id.values())

    def grant(self, uid: str, scheduler_id: str, trace_id: str = "") -> Lease:
        if uid in self._by_pod:
            raise RuntimeError(f"pod uid {uid} is already leased ({self._by_pod[uid]})")
        now = self.clock.now()
        lease = Lease(
            lease_id=secrets.token_hex(12),
            uid=uid,
            scheduler_id=scheduler_id,
            deadline=now + self.lease_seconds,
            trace_id=trace_id or secrets.token_hex(8),
        )
        self._by_id[lease.lease_id] = lease
        self._by_pod[uid] = lease.lease_id
        return lease

    def get(self, lease_id: str) -> Lease | None:
        return self._by_id.get(lease_id)

    def renew(self, lease_id: str, scheduler_id: str) -> Lease | None:
        """Push the deadline out by ``lease_seconds``; None if the lease is gone or held by another."""
        lease = self._by_id.get(lease_id)
        if lease is None or lease.scheduler_id != scheduler_id:
            return None
        lease.deadline = self.clock.now() + self.lease_seconds
        return lease

    def release(self, lease_id: str) -> Lease | None:
        lease = self._by_id.pop(lease_id, None)
        if lease is not None:
            del self._by_pod[lease.uid]
        return lease

    def release_pod(self, uid: str) -> Lease | None:
        lease_id = self._by_pod.get(uid)
        return None if lease_id is None else self.release(lease_id)

    def take_expired(self) -> list[Lease]:
        """Remove and return every lease past its deadline."""
        now = self.clock.now()
        expired = [lease for lease in self._by_id.values() if lease.deadline <= now]
        for lease in expired:
            self.release(lease.lease_id)
        return expired

    def pods(self) -> set[str]:
        return set(self._by_pod)
