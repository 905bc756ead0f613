"""Mutating a JSON-like tree (dicts, lists, scalars): the building block of every fuzzer here.

``mutated(tree)`` draws one change at one place of a deep copy: a value replaced (by an arbitrary
value, a string from ``texts`` or a huge one), a key removed, an unknown key added, a list item
repeated. It returns the new tree and the path of the change, so a check can ask that an error
names the field.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Sequence
from typing import Any

from hypothesis import strategies as st

Path = tuple[Any, ...]

INDEX = st.integers(0, 2**20)

json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.sampled_from([0, -1, 1, 2**31, 2**63, -(2**63) - 1, 10**30]) | st.integers(-(2**70), 2**70),
    st.sampled_from([0.5, -0.0, 1e308, float("inf"), float("-inf"), float("nan")]) | st.floats(),
    st.sampled_from(["", " ", "*", "-", "a/b", "1e400", "10Gi", "1m30s", "\x00", "é", "a" * 300])
    | st.text(max_size=16),
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=10,
)


def slots(tree: Any, path: Path = ()) -> Iterator[Path]:
    """Paths to every value below ``tree`` (dict keys and list indexes)."""
    items = tree.items() if isinstance(tree, dict) else enumerate(tree) if isinstance(tree, list) else ()
    for key, value in items:
        yield (*path, key)
        yield from slots(value, (*path, key))


def at(tree: Any, path: Path) -> Any:
    for key in path:
        tree = tree[key]
    return tree


def pick(draw: st.DrawFn, items: Sequence[Any]) -> Any:
    """One of ``items``, drawn as a number independent of ``len(items)``: the tree differs a little
    between examples (names, resource versions), and hypothesis wants the same draws to mean the
    same choices when it replays or shrinks an example."""
    return items[draw(INDEX) % len(items)]


@st.composite
def mutated(
    draw: st.DrawFn,
    tree: Any,
    values: st.SearchStrategy[Any] = json_values,
    texts: Sequence[str] = (),
    under: Path = (),
) -> tuple[Any, Path]:
    """A deep copy of ``tree`` changed at one place (at or below ``under``), and that place."""
    tree = copy.deepcopy(tree)
    paths = [p for p in slots(tree) if p[: len(under)] == under]
    containers = [p for p in [under, *paths] if isinstance(at(tree, p), dict | list)]
    action = draw(st.sampled_from(["replace", "replace", "delete", "add", "repeat", "huge", "text"]))
    if action == "text" and not texts:
        action = "replace"
    if action in ("add", "repeat") or not paths:
        container_path = pick(draw, containers)
        container = at(tree, container_path)
        if isinstance(container, dict):
            key = draw(st.text(min_size=1, max_size=12))
            container[key] = draw(values)
            return tree, (*container_path, key)
        if container:
            container.append(copy.deepcopy(pick(draw, container)))
        else:
            container.append(draw(values))
        return tree, (*container_path, len(container) - 1)
    path = pick(draw, paths)
    parent = at(tree, path[:-1])
    if action == "delete" and isinstance(parent, dict):
        del parent[path[-1]]
    elif action == "huge":
        parent[path[-1]] = "x" * draw(st.integers(10_000, 300_000))
    elif action == "text":
        parent[path[-1]] = pick(draw, texts)
    else:
        parent[path[-1]] = draw(values)
    return tree, path
