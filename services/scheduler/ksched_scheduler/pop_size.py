"""How many pods to ask the queue for: enough to share each bus message among many pods, few
enough that the last pod of a pop starts its cycle within a bounded time.

Pods popped together are leased to this replica until it reaches them; a pod that enters the queue
meanwhile, however high its priority, waits behind them (kube-scheduler pops one pod per cycle). So
the size follows the time this replica has recently spent per pod: ``window`` seconds of work,
at most ``largest`` pods, at least one.
"""

from __future__ import annotations

SMOOTHING = 0.3
"""Weight of the newest pop in the running estimate of the time per pod."""


class PopSize:
    """The ``max_pods`` of the next pop, from the wall time the replica spent on the previous ones."""

    def __init__(self, largest: int, window: float, first: int = 16) -> None:
        if largest < 1:
            raise ValueError(f"largest pop must be at least 1, got {largest}")
        if window <= 0:
            raise ValueError(f"pop window must be positive, got {window}")
        self.largest = largest
        self.window = window
        self.per_pod = window / max(1, min(first, largest))
        """Running estimate of the seconds spent per popped pod."""

    def next(self) -> int:
        """Pods to ask for now."""
        return max(1, min(self.largest, int(self.window / self.per_pod)))

    def spent(self, seconds: float, pods: int) -> None:
        """The replica spent ``seconds`` (wall) from receiving ``pods`` pods to being ready for more."""
        if pods <= 0 or seconds < 0:
            return
        self.per_pod += SMOOTHING * (seconds / pods - self.per_pod)
        self.per_pod = max(self.per_pod, self.window / self.largest / 2)  # a run of instant pods
