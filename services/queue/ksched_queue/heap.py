"""Binary heaps with lookup, update and removal by key (upstream ``backend/heap``): ordered by a
``less`` function, or by a sort key compared in C (``heapq``)."""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable, Iterator
from typing import Any, Generic, TypeVar

T = TypeVar("T")


class KeyedHeap(Generic[T]):
    """Items ordered by ``less``; each item has a unique ``key``. All operations are O(log n),
    lookups O(1). ``less`` must stay consistent while an item is inside (re-add it after a change)."""

    __slots__ = ("_index", "_items", "_key", "_less")

    def __init__(self, key: Callable[[T], str], less: Callable[[T, T], bool]) -> None:
        self._key = key
        self._less = less
        self._items: list[T] = []
        self._index: dict[str, int] = {}

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key: object) -> bool:
        return key in self._index

    def __iter__(self) -> Iterator[T]:
        """Items in no particular order."""
        return iter(list(self._items))

    def get(self, key: str) -> T | None:
        i = self._index.get(key)
        return None if i is None else self._items[i]

    def peek(self) -> T | None:
        return self._items[0] if self._items else None

    def add_or_update(self, item: T) -> None:
        """Insert ``item``, or replace the item with the same key and restore the order."""
        key = self._key(item)
        i = self._index.get(key)
        if i is None:
            self._items.append(item)
            self._index[key] = len(self._items) - 1
            self._up(len(self._items) - 1)
            return
        self._items[i] = item
        self._fix(i)

    def pop(self) -> T | None:
        if not self._items:
            return None
        return self._remove_at(0)

    def delete(self, key: str) -> T | None:
        """Remove and return the item with ``key`` (None if absent)."""
        i = self._index.get(key)
        if i is None:
            return None
        return self._remove_at(i)

    # --- internals ---------------------------------------------------------------------------------
    def _remove_at(self, i: int) -> T:
        items = self._items
        item = items[i]
        last = items.pop()
        del self._index[self._key(item)]
        if i < len(items):
            items[i] = last
            self._index[self._key(last)] = i
            self._fix(i)
        return item

    def _fix(self, i: int) -> None:
        if not self._down(i):
            self._up(i)

    def _swap(self, i: int, j: int) -> None:
        items = self._items
        items[i], items[j] = items[j], items[i]
        self._index[self._key(items[i])] = i
        self._index[self._key(items[j])] = j

    def _up(self, i: int) -> None:
        items, less = self._items, self._less
        while i > 0:
            parent = (i - 1) // 2
            if not less(items[i], items[parent]):
                break
            self._swap(i, parent)
            i = parent

    def _down(self, i: int) -> bool:
        """Sift down; True if the item moved."""
        items, less, n = self._items, self._less, len(self._items)
        start = i
        while True:
            left = 2 * i + 1
            if left >= n:
                break
            child = left
            right = left + 1
            if right < n and less(items[right], items[left]):
                child = right
            if not less(items[child], items[i]):
                break
            self._swap(i, child)
            i = child
        return i != start


class SortKeyHeap(Generic[T]):
    """:class:`KeyedHeap`'s operations for an order given by ``sort_key`` (``a`` before ``b``
    exactly when ``sort_key(a) < sort_key(b)``; equal keys pop first-in first-out), kept with
    ``heapq``. An updated or deleted item's old slot stays in the heap, marked, until it reaches the
    top or the marked slots outnumber the live ones (then the heap is rebuilt). ``sort_key`` is read
    when the item is added: re-add it after a change."""

    __slots__ = ("_entries", "_heap", "_key", "_order", "_sort_key", "_stale")

    def __init__(self, key: Callable[[T], str], sort_key: Callable[[T], tuple[Any, ...]]) -> None:
        self._key = key
        self._sort_key = sort_key
        self._heap: list[list[Any]] = []  # [sort key, insertion number, item or None when stale]
        self._entries: dict[str, list[Any]] = {}
        self._order = itertools.count()
        self._stale = 0

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: object) -> bool:
        return key in self._entries

    def __iter__(self) -> Iterator[T]:
        """Items in no particular order."""
        return iter([entry[2] for entry in self._entries.values()])

    def get(self, key: str) -> T | None:
        entry = self._entries.get(key)
        return None if entry is None else entry[2]

    def peek(self) -> T | None:
        self._drop_stale_top()
        return self._heap[0][2] if self._heap else None

    def add_or_update(self, item: T) -> None:
        """Insert ``item``, or replace the item with the same key (its order read again)."""
        key = self._key(item)
        self._retire(self._entries.get(key))
        entry = [self._sort_key(item), next(self._order), item]
        self._entries[key] = entry
        heapq.heappush(self._heap, entry)

    def pop(self) -> T | None:
        self._drop_stale_top()
        if not self._heap:
            return None
        item: T = heapq.heappop(self._heap)[2]
        del self._entries[self._key(item)]
        return item

    def delete(self, key: str) -> T | None:
        """Remove and return the item with ``key`` (None if absent)."""
        entry = self._entries.pop(key, None)
        if entry is None:
            return None
        item: T = entry[2]
        self._retire(entry)
        return item

    # --- internals ---------------------------------------------------------------------------------
    def _retire(self, entry: list[Any] | None) -> None:
        if entry is None:
            return
        entry[2] = None
        self._stale += 1
        if self._stale > 64 and self._stale > len(self._entries):
            self._heap = [e for e in self._heap if e[2] is not None]
            heapq.heapify(self._heap)
            self._stale = 0

    def _drop_stale_top(self) -> None:
        heap = self._heap
        while heap and heap[0][2] is None:
            heapq.heappop(heap)
            self._stale -= 1
