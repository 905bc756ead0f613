"""Trace events as a timeline: grouped by attempt (trace id), ordered by time, with the duration of
each phase, rendered as text for people or JSON lines for tools.

A phase's duration is what the service measured (``TraceEvent.duration``: the scheduling algorithm,
the assume round trip, the Permit wait, PreBind, the Bind call), else the time until the attempt's
next event (time spent queued, popped before the cycle started, ...). The last event of an attempt
has no next event: it shows only a measured duration.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import msgspec

from ksched.bus.messages import TraceEvent
from ksched.tracing import scores
from ksched.tracing.phases import OUTCOMES, Phase


@dataclass(slots=True)
class Step:
    """One event of an attempt: when (``offset`` from the attempt's first event) and for how long."""

    event: TraceEvent
    offset: float
    took: float | None
    measured: bool
    """``took`` was reported by the service (else it is the gap to the next event)."""


@dataclass(slots=True)
class Attempt:
    trace_id: str
    steps: list[Step] = field(default_factory=list)

    @property
    def start(self) -> float:
        return self.steps[0].event.ts

    @property
    def end(self) -> float:
        return max(s.event.ts + (s.took if s.measured and s.took else 0.0) for s in self.steps)

    @property
    def total(self) -> float:
        return self.end - self.start

    @property
    def outcome(self) -> str:
        """The phase that ended the attempt (``in progress`` when none did yet)."""
        for step in reversed(self.steps):
            if step.event.phase in OUTCOMES:
                return step.event.phase
        return "in progress"

    @property
    def node(self) -> str:
        for step in reversed(self.steps):
            node = step.event.details.get("node")
            if isinstance(node, str) and node:
                return node
        return ""


def attempts(events: Iterable[TraceEvent]) -> list[Attempt]:
    """Group by trace id; order each attempt by time (ties keep the input order) and the attempts
    by their first event."""
    groups: dict[str, list[TraceEvent]] = {}
    for event in events:
        groups.setdefault(event.trace_id, []).append(event)
    out: list[Attempt] = []
    for trace_id, group in groups.items():
        group.sort(key=lambda e: e.ts)
        attempt = Attempt(trace_id)
        start = group[0].ts
        for i, event in enumerate(group):
            if event.duration is not None:
                took: float | None = event.duration
                measured = True
            else:
                took = group[i + 1].ts - event.ts if i + 1 < len(group) else None
                measured = False
            attempt.steps.append(Step(event, event.ts - start, took, measured))
        out.append(attempt)
    out.sort(key=lambda a: a.start)
    return out


# --- formatting -------------------------------------------------------------------------------------------


def fmt_duration(seconds: float | None) -> str:
    """``0.42 ms``, ``12.3 ms``, ``1.234 s``, ``2m03s``; empty for None."""
    if seconds is None:
        return ""
    if seconds < 0:
        return "-" + fmt_duration(-seconds)
    ms = seconds * 1000
    if ms < 0.995:
        return f"{ms:.2f} ms"
    if ms < 999.95:
        return f"{ms:.1f} ms"
    if seconds < 59.9995:
        return f"{seconds:.3f} s"
    minutes, rest = divmod(seconds, 60)
    return f"{int(minutes)}m{rest:04.1f}s"


def fmt_time(ts: float) -> str:
    """UTC wall time with milliseconds."""
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(ts)) + f".{int(ts % 1 * 1000):03d}Z"


_LONG_KEYS = ("message", "reason")
UI_KEYS = ("rejections", *scores.KEYS)
"""Per-node details for ``ksched ui`` (rejected nodes by plugin and reason, per-plugin scores): the
text timeline leaves them out (``rejected`` and ``top`` summarise them); ``--json`` has them."""


def _value(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, list | tuple):
        return ",".join(_value(v) for v in value) or "-"
    return str(value)


def _counts(values: Mapping[str, Any]) -> str:
    ordered = sorted(values.items(), key=lambda kv: (-kv[1], kv[0]) if isinstance(kv[1], int) else (0, kv[0]))
    return ", ".join(f"{k} {_value(v)}" for k, v in ordered)


def _scores(top: Any) -> str:
    parts = []
    for item in top if isinstance(top, list) else []:
        if isinstance(item, list | tuple) and len(item) == 2:
            parts.append(f"{item[0]}={_value(item[1])}")
        else:
            parts.append(_value(item))
    return ", ".join(parts)


def describe(details: Mapping[str, Any]) -> tuple[str, list[str]]:
    """The details as one ``key=value`` line plus extra lines for long texts (messages, reasons)."""
    words: list[str] = []
    extra: list[str] = []
    for key, value in details.items():
        if value is None or value in ("", [], {}) or key in UI_KEYS:
            continue
        if key in _LONG_KEYS and isinstance(value, str):
            extra.append(f"{key}: {value}")
        elif key == "rejected" and isinstance(value, Mapping):
            words.append(f"rejected by: {_counts(value)};")
        elif key == "top":
            words.append(f"top scores: {_scores(value)};")
        elif isinstance(value, Mapping):
            words.append(f"{key}: {_counts(value)};")
        else:
            words.append(f"{key}={_value(value)}")
    line = " ".join(words)
    return line.rstrip(";"), extra


_HEAD = f"  {'offset':>11}  {'service':<10} {'phase':<16} {'took':>10}  details"


def _step_lines(step: Step, indent: str = "  ") -> list[str]:
    event = step.event
    took = fmt_duration(step.took)
    if took and not step.measured:
        took = f"({took})"
    line, extra = describe(event.details)
    offset = "+" + fmt_duration(step.offset)
    lines = [f"{indent}{offset:>11}  {event.service:<10} {event.phase:<16} {took:>10}  {line}"]
    pad = indent + " " * 53
    lines += [pad + text for text in extra]
    return [ln.rstrip() for ln in lines]


def attempt_header(attempt: Attempt, index: int, count: int) -> str:
    outcome = attempt.outcome
    node = attempt.node if outcome == Phase.BOUND else ""
    result = f"{outcome} on {node}" if node else outcome
    return (
        f"attempt {index} of {count}  trace {attempt.trace_id}  {fmt_time(attempt.start)}  "
        f"{result} after {fmt_duration(attempt.total)}"
    )


def render(namespace: str, name: str, events: Sequence[TraceEvent]) -> str:
    """The whole timeline of one pod as text."""
    groups = attempts(events)
    if not groups:
        return f"no trace events for pod {namespace}/{name}"
    uids = list(dict.fromkeys(e.pod_uid for e in events))
    uid_text = (
        f"uid {uids[0]}" if len(uids) == 1 else f"{len(uids)} pods of that name (uids {', '.join(uids)})"
    )
    lines = [
        f"pod {namespace}/{name}  {uid_text}  {len(groups)} attempt{'s' if len(groups) != 1 else ''}, "
        f"{len(events)} events",
        "(took: measured by the service, or in parentheses the time until the attempt's next event)",
    ]
    for i, attempt in enumerate(groups, 1):
        lines += ["", attempt_header(attempt, i, len(groups)), _HEAD]
        for step in attempt.steps:
            lines += _step_lines(step)
    return "\n".join(lines)


def to_json(event: TraceEvent, stream_seq: int | None = None) -> str:
    """One event as a JSON object (the message's fields, ``key`` = namespace/name, ``seq``)."""
    doc: dict[str, Any] = {"key": f"{event.namespace}/{event.name}"}
    doc.update({k: v for k, v in msgspec.structs.asdict(event).items() if k not in ("t", "v")})
    if stream_seq is not None:
        doc["seq"] = stream_seq
    return msgspec.json.encode(doc).decode()


class LiveRenderer:
    """Lines for events as they stream in (``--follow``): an attempt header at a pod's new trace id,
    then one line per event with its offset from the attempt's first event and its measured
    duration. ``with_pod`` prefixes every line with namespace/name (``--all``)."""

    def __init__(self, *, with_pod: bool = False) -> None:
        self.with_pod = with_pod
        self._starts: dict[str, float] = {}
        self._width = 16

    def lines(self, event: TraceEvent) -> list[str]:
        out: list[str] = []
        start = self._starts.get(event.trace_id)
        if start is None:
            start = self._starts[event.trace_id] = event.ts
            who = f" {event.namespace}/{event.name}" if self.with_pod else ""
            out.append(f"--{who} attempt trace {event.trace_id} at {fmt_time(event.ts)} --")
            if len(self._starts) > 100_000:  # --all for a long time: forget the oldest attempts
                for key in list(self._starts)[:50_000]:
                    del self._starts[key]
        step = Step(event, event.ts - start, event.duration, event.duration is not None)
        prefix = ""
        if self.with_pod:
            key = f"{event.namespace}/{event.name}"
            self._width = max(self._width, len(key))  # columns line up once the longest name was seen
            prefix = f"{key:<{self._width}}  "
        out += [prefix + line for line in _step_lines(step)]
        return out
