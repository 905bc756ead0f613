"""Both keyed heaps against a sorted list, under random adds, updates, deletes, pops and peeks:
``KeyedHeap`` (ordered by ``less``) and ``SortKeyHeap`` (by a sort key, stale slots left behind)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from ksched_queue.heap import KeyedHeap, SortKeyHeap


@dataclass(frozen=True)
class Item:
    uid: str
    priority: int
    timestamp: int
    seq: int


def sort_key(item: Item) -> tuple[int, int, int]:
    return (-item.priority, item.timestamp, item.seq)


def less(a: Item, b: Item) -> bool:
    return sort_key(a) < sort_key(b)


def uid(item: Item) -> str:
    return item.uid


OPS = st.lists(
    st.tuples(
        st.sampled_from(["add", "add", "add", "delete", "pop", "peek"]),
        st.integers(0, 30),  # which uid
        st.integers(0, 3),  # priority
        st.integers(0, 5),  # timestamp (ties are common)
    ),
    max_size=400,
)


@settings(max_examples=150, deadline=None)
@given(OPS)
def test_both_heaps_pop_what_a_sorted_list_pops(ops: list[tuple[str, int, int, int]]) -> None:
    heaps: list[Any] = [KeyedHeap(uid, less), SortKeyHeap(uid, sort_key)]
    model: dict[str, Item] = {}
    for seq, (op, n, priority, timestamp) in enumerate(ops):
        key = f"pod-{n}"
        head = min(model.values(), key=sort_key) if model else None
        if op == "add":
            item = Item(key, priority, timestamp, seq)
            model[key] = item
            for heap in heaps:
                heap.add_or_update(item)
        elif op == "delete":
            expected = model.pop(key, None)
            assert [heap.delete(key) for heap in heaps] == [expected, expected]
        elif op == "pop":
            if head is not None:
                del model[head.uid]
            assert [heap.pop() for heap in heaps] == [head, head]
        else:
            assert [heap.peek() for heap in heaps] == [head, head]
        for heap in heaps:
            assert len(heap) == len(model)
            assert (key in heap) == (key in model)
            assert heap.get(key) == model.get(key)
    for heap in heaps:
        assert sorted(heap, key=sort_key) == sorted(model.values(), key=sort_key)


def test_stale_slots_are_dropped_once_they_outnumber_the_live_ones() -> None:
    heap: SortKeyHeap[Item] = SortKeyHeap(uid, sort_key)
    for round_ in range(50):
        for n in range(10):
            heap.add_or_update(Item(f"pod-{n}", 0, round_, round_ * 10 + n))  # every one updated
    assert len(heap) == 10
    assert len(heap._heap) <= 10 + 64 + 10  # rebuilt, not 500 slots
    assert [heap.pop() for _ in range(10)] == [Item(f"pod-{n}", 0, 49, 490 + n) for n in range(10)]
    assert heap.pop() is None and heap.peek() is None
