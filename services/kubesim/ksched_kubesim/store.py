"""Object storage: one global resourceVersion, per-resource tables and bounded change histories.

Each stored object is kept as its encoded JSON body (without ``kind``/``apiVersion``, which list items
omit) plus the labels and selectable fields needed for filtering. A write decodes the body into a
fresh dict (the copy-on-write step), changes it and encodes it once; every reader and every watcher
then reuses those bytes. Every write is one ``Change`` appended to its resource's history, which
watches replay from and which lists at an older resourceVersion undo.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from . import errors
from .jsonio import JSON, decode, encode
from .resources import ResourceType

log = logging.getLogger("ksched_kubesim")

Key = tuple[str, str]

_META_ORDER = (
    "name",
    "generateName",
    "namespace",
    "selfLink",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "labels",
    "annotations",
    "ownerReferences",
    "finalizers",
    "managedFields",
)


def canonical_metadata(meta: JSON) -> JSON:
    """ObjectMeta in Go field order with label and annotation keys sorted (as Go maps serialise)."""
    out: JSON = {}
    for key in _META_ORDER:
        if key in meta:
            value = meta[key]
            if key in ("labels", "annotations") and isinstance(value, dict):
                value = dict(sorted(value.items()))
            out[key] = value
    for key, value in meta.items():
        if key not in out:
            out[key] = value
    return out


def encode_body(obj: JSON) -> bytes:
    """Encode an object without kind/apiVersion, metadata first."""
    body: JSON = {"metadata": canonical_metadata(obj.get("metadata") or {})}
    for key, value in obj.items():
        if key not in ("kind", "apiVersion", "metadata"):
            body[key] = value
    return encode(body)


def restamp(body: bytes, old_rv: int, new_rv: int) -> bytes:
    """The same body with ``metadata.resourceVersion`` replaced (metadata is encoded first)."""
    return body.replace(b'"resourceVersion":"%d"' % old_rv, b'"resourceVersion":"%d"' % new_rv, 1)


def with_kind(prefix: bytes, body: bytes) -> bytes:
    """A full single-object JSON document: ``{"kind":..,"apiVersion":..,`` + the body's fields."""
    return prefix + body[1:]


class Entry:
    """One stored version of one object."""

    __slots__ = (
        "body",
        "deleting",
        "fields",
        "labels",
        "name",
        "namespace",
        "rv",
        "skey",
        "uid",
        "view_body",
    )

    def __init__(
        self,
        namespace: str,
        name: str,
        rv: int,
        body: bytes,
        labels: dict[str, str],
        fields: dict[str, str],
        uid: str,
        deleting: bool,
    ) -> None:
        self.namespace = namespace
        self.name = name
        self.skey = f"{namespace}/{name}" if namespace else name
        self.rv = rv
        self.body = body
        self.labels = labels
        self.fields = fields
        self.uid = uid
        self.deleting = deleting
        self.view_body: bytes | None = None

    @property
    def key(self) -> Key:
        return (self.namespace, self.name)

    def obj(self) -> JSON:
        """A fresh mutable dict of this object (without kind/apiVersion)."""
        result: JSON = decode(self.body)
        return result


@dataclass(frozen=True, slots=True)
class View:
    """A second API version over the same storage (events.k8s.io/v1 over core/v1 events)."""

    rt: ResourceType
    to_view: Callable[[JSON], JSON]
    from_view: Callable[[JSON], JSON]

    def body(self, entry: Entry) -> bytes:
        if entry.view_body is None:
            entry.view_body = encode_body(self.to_view(entry.obj()))
        return entry.view_body


class Change:
    """One write: ``new`` is None for a deletion, ``old`` is None for a creation."""

    __slots__ = ("_lines", "new", "old", "rv")

    def __init__(self, rv: int, new: Entry | None, old: Entry | None) -> None:
        self.rv = rv
        self.new = new
        self.old = old
        self._lines: dict[tuple[str, str], bytes] = {}

    @property
    def key(self) -> Key:
        entry = self.new or self.old
        assert entry is not None
        return entry.key

    def line(self, event_type: str, rt: ResourceType, view: View | None) -> bytes:
        """The encoded watch line for this change as ``event_type``, built once per (type, view)."""
        cache_key = (event_type, view.rt.key if view else "")
        line = self._lines.get(cache_key)
        if line is None:
            if event_type == "DELETED":
                assert self.old is not None
                source = Entry(
                    self.old.namespace,
                    self.old.name,
                    self.rv,
                    restamp(self.old.body, self.old.rv, self.rv),
                    self.old.labels,
                    self.old.fields,
                    self.old.uid,
                    self.old.deleting,
                )
            else:
                assert self.new is not None
                source = self.new
            if view is None:
                obj = with_kind(rt.prefix, source.body)
            else:
                obj = with_kind(view.rt.prefix, view.body(source))
            line = b'{"type":"%s","object":%s}\n' % (event_type.encode(), obj)
            self._lines[cache_key] = line
        return line


class Table:
    """All objects of one resource (its storage), its change history and its watchers."""

    def __init__(self, rt: ResourceType, history_size: int, start_rv: int) -> None:
        self.rt = rt
        self.objects: dict[Key, Entry] = {}
        self.history: deque[Change] = deque()
        self.history_size = max(1, history_size)
        #: every change with rv > window_start is in ``history``
        self.window_start = start_rv
        self.watchers: list[Any] = []
        self._sorted: list[Key] | None = None

    def sorted_entries(self) -> list[Entry]:
        """Current objects ordered by storage key (``namespace/name``), as etcd lists them."""
        if self._sorted is None:
            self._sorted = [e.key for e in sorted(self.objects.values(), key=lambda e: e.skey)]
        objects = self.objects
        return [objects[k] for k in self._sorted]

    def get(self, namespace: str, name: str) -> Entry | None:
        return self.objects.get((namespace, name))


Listener = Callable[[Table, Change], None]


class Store:
    """The state of the emulated cluster."""

    def __init__(self, resources: Iterable[ResourceType], history_size: int = 10_000) -> None:
        self.rv = 0
        self.history_size = history_size
        self.tables: dict[str, Table] = {}
        for rt in resources:
            if rt.storage_of is None:
                self.tables[rt.key] = Table(rt, history_size, 0)
        self.listeners: list[Listener] = []

    def table(self, rt: ResourceType) -> Table:
        return self.tables[rt.storage_key]

    # --- writes -------------------------------------------------------------------------------

    def put(self, table: Table, obj: JSON, old: Entry | None, fields: dict[str, str]) -> Entry:
        """Store a new version of ``obj`` (creation when ``old`` is None) under the next resourceVersion."""
        self.rv += 1
        meta = obj["metadata"]
        meta["resourceVersion"] = str(self.rv)
        namespace = meta.get("namespace", "") if table.rt.namespaced else ""
        labels = meta.get("labels") or {}
        entry = Entry(
            namespace,
            meta["name"],
            self.rv,
            encode_body(obj),
            labels,
            fields,
            meta.get("uid", ""),
            bool(meta.get("deletionTimestamp")),
        )
        if old is None:
            table._sorted = None
        table.objects[entry.key] = entry
        self._record(table, Change(self.rv, entry, old))
        return entry

    def remove(self, table: Table, old: Entry) -> Entry:
        """Delete an object; returns its final state stamped with the deletion's resourceVersion."""
        self.rv += 1
        del table.objects[old.key]
        table._sorted = None
        final = Entry(
            old.namespace,
            old.name,
            self.rv,
            restamp(old.body, old.rv, self.rv),
            old.labels,
            old.fields,
            old.uid,
            old.deleting,
        )
        self._record(table, Change(self.rv, None, old))
        return final

    def forget_history(self) -> None:
        """Drop every table's change history, as a restarted API server's new watch cache starts at
        the current resourceVersion: older versions are 410 Gone from now on."""
        for table in self.tables.values():
            table.history.clear()
            table.window_start = self.rv

    def _record(self, table: Table, change: Change) -> None:
        history = table.history
        history.append(change)
        if len(history) > table.history_size:
            table.window_start = history.popleft().rv
        for watcher in tuple(table.watchers):
            watcher.offer(change)
        for listener in self.listeners:
            try:
                listener(table, change)
            except Exception:  # a controller's failure must not fail the write that triggered it
                log.exception("listener %r failed on %s %s", listener, table.rt.key, change.key)

    # --- reads at a resourceVersion -----------------------------------------------------------

    def snapshot(self, table: Table, rv: int) -> list[Entry]:
        """Objects as they were at ``rv``, ordered by key; 410 Expired when the history is too short."""
        if rv >= self.rv:
            return table.sorted_entries()
        if rv < table.window_start:
            raise errors.expired("The resourceVersion for the provided list is too old.")
        objects = dict(table.objects)
        for change in reversed(table.history):
            if change.rv <= rv:
                break
            if change.old is None:
                objects.pop(change.key, None)
            else:
                objects[change.key] = change.old
        return sorted(objects.values(), key=lambda e: e.skey)

    def can_replay_from(self, table: Table, rv: int) -> bool:
        return rv >= table.window_start

    def changes_since(self, table: Table, rv: int) -> list[Change]:
        """Changes newer than ``rv`` (the caller checked ``can_replay_from``)."""
        out: list[Change] = []
        for change in reversed(table.history):
            if change.rv <= rv:
                break
            out.append(change)
        out.reverse()
        return out
