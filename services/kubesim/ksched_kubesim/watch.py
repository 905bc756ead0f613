"""Watch streams: per-watcher filtering of changes, bookmarks and buffered writes.

A change is encoded once per (event type, API view) and the same bytes are appended to every
interested watcher's buffer; the watcher's writer coroutine sends whatever accumulated in writes of
at most ``WRITE_SIZE`` bytes, as the API server's watch handler does: it flushes after an event when
no other is queued, and a backlog leaves through net/http's 4 KiB connection buffer, so a client
reads the stream in pieces of one event or a few KiB, not in one block per burst.
Filtering follows the watch cache: an object that starts matching yields ADDED, one that stops
matching yields DELETED carrying its previous state stamped with the new resourceVersion.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from .jsonio import JSON, encode
from .resources import ResourceType
from .selectors import FieldSelector, Selector
from .store import Change, Entry, Store, Table, View, with_kind
from .strategies import NODE_INFO_ORDER

#: what Go's zero value of each kind serialises to, besides metadata (bookmark objects)
_ZERO_FIELDS: dict[str, JSON] = {
    "Pod": {"spec": {"containers": None}, "status": {}},
    "Node": {
        "spec": {},
        "status": {
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 0}},
            "nodeInfo": dict.fromkeys(NODE_INFO_ORDER[:10], ""),
        },
    },
    "Namespace": {"spec": {}, "status": {}},
    "Service": {"spec": {}, "status": {"loadBalancer": {}}},
    "Lease": {"spec": {}},
    "PodDisruptionBudget": {
        "spec": {},
        "status": {"disruptionsAllowed": 0, "currentHealthy": 0, "desiredHealthy": 0, "expectedPods": 0},
    },
    "ReplicaSet": {
        "spec": {"replicas": 0, "selector": None, "template": {"metadata": {}, "spec": {"containers": None}}},
        "status": {"replicas": 0},
    },
    "Deployment": {
        "spec": {
            "replicas": 0,
            "selector": None,
            "template": {"metadata": {}, "spec": {"containers": None}},
            "strategy": {},
        },
        "status": {},
    },
    "StatefulSet": {
        "spec": {
            "replicas": 0,
            "selector": None,
            "template": {"metadata": {}, "spec": {"containers": None}},
            "serviceName": "",
            "updateStrategy": {},
        },
        "status": {"replicas": 0, "availableReplicas": 0},
    },
    "Job": {"spec": {"template": {"metadata": {}, "spec": {"containers": None}}}, "status": {}},
    "ControllerRevision": {"data": None, "revision": 0},
    "PersistentVolume": {"spec": {}, "status": {}},
    "PersistentVolumeClaim": {"spec": {}, "status": {}},
}
_CORE_EVENT_ZERO: JSON = {
    "involvedObject": {},
    "source": {},
    "firstTimestamp": None,
    "lastTimestamp": None,
    "eventTime": None,
    "reportingComponent": "",
    "reportingInstance": "",
}
_EVENTS_API_ZERO: JSON = {
    "eventTime": None,
    "regarding": {},
    "deprecatedSource": {},
    "deprecatedFirstTimestamp": None,
    "deprecatedLastTimestamp": None,
}


def bookmark_line(rt: ResourceType, rv: int, initial_events_end: bool = False) -> bytes:
    """A BOOKMARK event: the kind's zero value carrying only ``metadata.resourceVersion``."""
    meta: JSON = {"resourceVersion": str(rv)}
    if initial_events_end:
        meta["annotations"] = {"k8s.io/initial-events-end": "true"}
    body: JSON = {"metadata": meta}
    if rt.kind == "Event":
        body.update(_EVENTS_API_ZERO if rt.group else _CORE_EVENT_ZERO)
    else:
        body.update(_ZERO_FIELDS.get(rt.kind, {}))
    return b'{"type":"BOOKMARK","object":%s}\n' % with_kind(rt.prefix, encode(body))


def error_line(status: JSON) -> bytes:
    return b'{"type":"ERROR","object":%s}\n' % encode(status)


WRITE_SIZE = 4096
"""Bytes per write of a watch stream (Go net/http's connection buffer)."""


class Watcher:
    """One open watch: its filter, its pending output and its writer state."""

    def __init__(
        self,
        store: Store,
        table: Table,
        rt: ResourceType,
        view: View | None,
        namespace: str | None,
        labels: Selector | None,
        fields: FieldSelector | None,
        bookmarks: bool,
        max_pending_bytes: int,
    ) -> None:
        self.store = store
        self.table = table
        self.rt = rt
        self.view = view
        self.namespace = namespace
        self.labels = labels
        self.fields = fields
        self.bookmarks = bookmarks
        self.max_pending_bytes = max_pending_bytes
        self.buf: list[bytes] = []
        self.pending = 0
        self.closed = False
        self.overflowed = False
        self.wakeup = asyncio.Event()
        self._timers: list[asyncio.TimerHandle] = []
        self.start_rv = 0
        """Where the watch started: the resourceVersion asked for, that of the last change replayed or
        of the initial events. A bookmark no newer is not sent (the watch cache's rule)."""

    # --- filtering ----------------------------------------------------------------------------

    def matches(self, entry: Entry) -> bool:
        if self.namespace is not None and entry.namespace != self.namespace:
            return False
        if self.labels is not None and not self.labels.matches(entry.labels):
            return False
        return self.fields is None or self.fields.matches(entry.fields)

    def offer(self, change: Change) -> None:
        """Queue what this watcher sees of ``change`` (ADDED, MODIFIED, DELETED or nothing)."""
        if self.closed:
            return
        current = change.new is not None and self.matches(change.new)
        previous = change.old is not None and self.matches(change.old)
        if current:
            event_type = "MODIFIED" if previous else "ADDED"
        elif previous:
            event_type = "DELETED"
        else:
            return
        self.push(change.line(event_type, self.rt if self.view is None else self.view.rt, self.view))

    def initial(self, entries: list[Entry]) -> None:
        """Synthetic ADDED events for the objects that exist when the watch starts."""
        prefix = self.rt.prefix
        for entry in entries:
            if self.matches(entry):
                body = entry.body if self.view is None else self.view.body(entry)
                self.push(b'{"type":"ADDED","object":%s}\n' % with_kind(prefix, body))

    # --- output -------------------------------------------------------------------------------

    def push(self, line: bytes) -> None:
        if self.closed:
            return
        self.buf.append(line)
        self.pending += len(line)
        if self.pending > self.max_pending_bytes:
            # a watcher this far behind is dropped, as the watch cache terminates blocked watchers
            self.overflowed = True
            self.close()
            return
        self.wakeup.set()

    def bookmark(self, initial_events_end: bool = False) -> None:
        """A bookmark at the current resourceVersion: the one closing the initial events, else only if
        something was written since the watch started."""
        if not self.bookmarks or self.closed:
            return
        if initial_events_end or self.store.rv > self.start_rv:
            self.push(bookmark_line(self.rt, self.store.rv, initial_events_end))

    def close(self) -> None:
        self.closed = True
        self.wakeup.set()

    def schedule(self, delay: float, callback: Callable[[], Any]) -> None:
        self._timers.append(asyncio.get_running_loop().call_later(max(0.0, delay), callback))

    def cancel_timers(self) -> None:
        for timer in self._timers:
            timer.cancel()
        self._timers.clear()

    async def run(self, write: Callable[[bytes], Awaitable[None]]) -> None:
        """Send buffered lines until the watch is closed (timeout, overflow, shutdown)."""
        while True:
            if self.buf and not self.overflowed:
                data = b"".join(self.buf)
                self.buf.clear()
                self.pending = 0
                for start in range(0, len(data), WRITE_SIZE):
                    await write(data[start : start + WRITE_SIZE])
                continue
            if self.closed:
                return
            self.wakeup.clear()
            await self.wakeup.wait()
