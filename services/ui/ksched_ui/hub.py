"""Fan-out of live updates to the page's server-sent-event streams.

A *state* topic (``cluster``, ``queue``) keeps only its latest JSON: a slow browser gets the newest
view, never a backlog. A *keys* topic (``trace``: pods with new trace events) accumulates keys per
subscriber until sent, so no pod's update is lost to coalescing. A new subscriber first gets every
state topic's latest value.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterable

KEYS_TOPIC = "trace"


class Subscriber:
    """One event stream: what is due to it, and an event set when something is."""

    def __init__(self) -> None:
        self.states: dict[str, str] = {}
        self.keys: set[str] = set()
        self.ready = asyncio.Event()
        self.closed = False

    def take(self) -> list[tuple[str, str]]:
        """The messages due, as ``(event name, JSON data)``, and nothing due afterwards."""
        out = list(self.states.items())
        if self.keys:
            out.append((KEYS_TOPIC, json.dumps(sorted(self.keys))))
        self.states, self.keys = {}, set()
        self.ready.clear()
        return out


class Hub:
    def __init__(self) -> None:
        self.latest: dict[str, str] = {}
        self.subscribers: set[Subscriber] = set()
        self.watched = asyncio.Event()
        """Set while a page is open: the views are built and the queue asked only then."""

    def subscribe(self) -> Subscriber:
        sub = Subscriber()
        sub.states.update(self.latest)
        if sub.states:
            sub.ready.set()
        self.subscribers.add(sub)
        self.watched.set()
        return sub

    def unsubscribe(self, sub: Subscriber) -> None:
        self.subscribers.discard(sub)
        if not self.subscribers:
            self.watched.clear()

    def publish(self, topic: str, data: str) -> None:
        """The new value of a state topic (JSON text)."""
        self.latest[topic] = data
        for sub in self.subscribers:
            sub.states[topic] = data
            sub.ready.set()

    def notify(self, keys: Iterable[str]) -> None:
        """Pods whose trace has new events."""
        new = set(keys)
        if not new:
            return
        for sub in self.subscribers:
            sub.keys |= new
            sub.ready.set()

    def close(self) -> None:
        """End every stream (the service stops)."""
        for sub in self.subscribers:
            sub.closed = True
            sub.ready.set()
        self.subscribers.clear()
        self.watched.clear()
