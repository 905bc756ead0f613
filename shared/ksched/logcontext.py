"""Which pod a log line is about: set where a pod is handled, copied onto every log record.

One context variable holds the pod (``namespace/name``), node, profile and trace id of the pod the
current task is handling; :class:`ksched.service.logs.ContextFilter` puts them on each record, so a
log call needs no ``extra=``. Binding and unbinding cost well under a microsecond (one plain tuple,
one ``ContextVar.set`` and ``reset``), cheap enough for the scheduling cycle.

asyncio tasks copy the context when they are created: bind it inside the per-pod task or handler,
and always undo it (``with pod_logging(...)``, or :func:`bind` / :func:`unbind` in ``try/finally``)
so it never leaks to the next pod the same task handles. A task spawned while a pod is bound keeps
that pod's fields, which is what a per-pod background task (assume, preemption) wants.

No ksched imports: every layer may use it.
"""

from __future__ import annotations

from contextvars import ContextVar, Token
from types import TracebackType
from typing import NamedTuple

_Fields = tuple[str, str, str, str]
"""(pod, node, profile, trace_id): a plain tuple, the cheapest thing to build in the hot path."""


class LogFields(NamedTuple):
    """The fields of the pod being handled; ``""`` is unknown (left out of the log line)."""

    pod: str
    node: str = ""
    profile: str = ""
    trace_id: str = ""


FIELD_NAMES: tuple[str, ...] = LogFields._fields
"""Record attribute names, in log-line order (the order of :func:`current_values`)."""

_current: ContextVar[_Fields | None] = ContextVar("ksched_log_fields", default=None)


def current_values() -> _Fields | None:
    """The bound (pod, node, profile, trace_id), in :data:`FIELD_NAMES` order, or None."""
    return _current.get()


def current() -> LogFields | None:
    """The fields bound in this context, or None outside any pod's handling."""
    values = _current.get()
    return None if values is None else LogFields(*values)


def bind(pod: str, node: str = "", profile: str = "", trace_id: str = "") -> Token[_Fields | None]:
    """Make ``pod`` (``namespace/name``) the pod of this context, replacing any outer one; undo with
    :func:`unbind` and the returned token."""
    return _current.set((pod, node, profile, trace_id))


def unbind(token: Token[_Fields | None]) -> None:
    """Restore what was bound before :func:`bind` returned ``token`` (also undoes :func:`set_node`)."""
    _current.reset(token)


def set_node(node: str) -> None:
    """The node the current pod is about once it is known (chosen, nominated); no-op outside a pod.
    Undone by the enclosing :func:`unbind` / ``with``."""
    values = _current.get()
    if values is not None and values[1] != node:
        pod, _, profile, trace_id = values
        _current.set((pod, node, profile, trace_id))


class _Scoped:
    """Restores, on leaving the block, what was bound on entering it."""

    __slots__ = ("_token",)

    def __init__(self) -> None:
        self._token: Token[_Fields | None] | None = None

    def __exit__(
        self,
        _exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._token is not None:
            _current.reset(self._token)
            self._token = None


class pod_logging(_Scoped):
    """``with pod_logging("ns/name", profile=..., trace_id=...):`` binds the pod for the block."""

    __slots__ = ("_values",)

    def __init__(self, pod: str, node: str = "", profile: str = "", trace_id: str = "") -> None:
        super().__init__()
        self._values: _Fields = (pod, node, profile, trace_id)

    def __enter__(self) -> None:
        self._token = _current.set(self._values)


class node_logging(_Scoped):
    """``with node_logging(node):`` the bound pod's node for the block (a nominated node, say);
    no-op outside a pod. Tasks created in the block keep it."""

    __slots__ = ("_node",)

    def __init__(self, node: str) -> None:
        super().__init__()
        self._node = node

    def __enter__(self) -> None:
        values = _current.get()
        if values is not None:
            pod, _, profile, trace_id = values
            self._token = _current.set((pod, self._node, profile, trace_id))
