"""Plugin result codes and the Status a plugin returns (``None`` means Success)."""

from __future__ import annotations

from enum import IntEnum


class Code(IntEnum):
    """Upstream's status codes, in upstream's order."""

    SUCCESS = 0
    ERROR = 1
    UNSCHEDULABLE = 2
    UNSCHEDULABLE_AND_UNRESOLVABLE = 3
    WAIT = 4
    SKIP = 5
    PENDING = 6

    @property
    def label(self) -> str:
        """The name upstream uses in metrics labels and logs (``UnschedulableAndUnresolvable``)."""
        return _LABELS[self]


_LABELS = {
    Code.SUCCESS: "Success",
    Code.ERROR: "Error",
    Code.UNSCHEDULABLE: "Unschedulable",
    Code.UNSCHEDULABLE_AND_UNRESOLVABLE: "UnschedulableAndUnresolvable",
    Code.WAIT: "Wait",
    Code.SKIP: "Skip",
    Code.PENDING: "Pending",
}

_REJECTED = frozenset({Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE, Code.PENDING})


class Status:
    """The outcome of running a plugin. Plugins return ``None`` for Success."""

    __slots__ = ("code", "error", "plugin", "reasons")

    def __init__(
        self, code: Code, *reasons: str, plugin: str = "", error: BaseException | None = None
    ) -> None:
        self.code = code
        self.reasons: tuple[str, ...] = reasons
        self.plugin = plugin
        self.error = error

    # constructors for the common cases -----------------------------------------------------------
    @classmethod
    def unschedulable(cls, *reasons: str) -> Status:
        return cls(Code.UNSCHEDULABLE, *reasons)

    @classmethod
    def unresolvable(cls, *reasons: str) -> Status:
        """UnschedulableAndUnresolvable: preemption cannot help on this node."""
        return cls(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, *reasons)

    @classmethod
    def as_error(cls, error: BaseException | str) -> Status:
        exc = error if isinstance(error, BaseException) else RuntimeError(error)
        return cls(Code.ERROR, error=exc)

    @classmethod
    def skip(cls) -> Status:
        return cls(Code.SKIP)

    @classmethod
    def wait(cls, *reasons: str) -> Status:
        return cls(Code.WAIT, *reasons)

    # queries -------------------------------------------------------------------------------------
    def all_reasons(self) -> tuple[str, ...]:
        """Reasons with the error text first, as upstream's ``Reasons()``."""
        if self.error is not None:
            return (str(self.error), *self.reasons)
        return self.reasons

    @property
    def message(self) -> str:
        return ", ".join(self.all_reasons())

    def is_rejected(self) -> bool:
        return self.code in _REJECTED

    def with_plugin(self, plugin: str) -> Status:
        self.plugin = plugin
        return self

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Status):
            return NotImplemented
        return (
            self.code == other.code
            and self.all_reasons() == other.all_reasons()
            and self.plugin == other.plugin
        )

    def __hash__(self) -> int:
        return hash((self.code, self.all_reasons(), self.plugin))

    def __repr__(self) -> str:
        plugin = f", plugin={self.plugin!r}" if self.plugin else ""
        return f"Status({self.code.label}, {list(self.all_reasons())!r}{plugin})"


def code_of(status: Status | None) -> Code:
    """The code of a possibly-None status (None is Success)."""
    return Code.SUCCESS if status is None else status.code


def is_skip(status: Status | None) -> bool:
    return status is not None and status.code == Code.SKIP
