"""Reading kube-scheduler's log (klog's text format) for the decisions it made.

kube-scheduler writes one line per entry::

    I1206 04:55:40.236616   17750 schedule_one.go:982] "Plugin scored node for pod" pod="default/p1" \
        plugin="TaintToleration" node="n1" score=300

(here folded; the message and string values Go-quoted, other values bare; a multi-line value is written as
``key=<`` and continued on tab-indented lines, which are skipped here). With ``--v=3
--vmodule=schedule_one=10`` the log has what a decision needs and little else: the informer events
(``Add event for node`` …), each attempt (``Attempting to schedule pod``), every plugin's weighted
score and every node's total, the outcome (``Successfully bound pod to node`` or ``Unable to schedule
pod; no fit; waiting`` with the FailedScheduling text), the nomination, and the victims of an
asynchronous preemption.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

_HEADER = re.compile(r"([IWEF])\d{4} [\d:.]+\s+\d+ (\S+):\d+\] ")
_QUOTED = r'"((?:[^"\\]|\\.)*)"'
_PAIR = re.compile(r"\s([A-Za-z][\w.]*)=(?:" + _QUOTED + r"|(\{[^ ]*\}|\[[^ ]*\]|[^\s\"]+))")


@dataclass(frozen=True)
class Entry:
    """One log entry: its source file (``schedule_one.go``), message and key/value pairs (strings
    unquoted; bare values as written)."""

    source: str
    msg: str
    values: dict[str, str] = field(default_factory=dict)

    def get(self, key: str) -> str | None:
        return self.values.get(key)


def unquote(text: str) -> str:
    """A Go-quoted string's content (``strconv.Quote``'s escapes)."""
    try:
        value = json.loads(f'"{text}"')
    except ValueError:
        return text.encode("utf-8").decode("unicode_escape", errors="replace")
    return str(value)


def parse_line(line: str) -> Entry | None:
    """An entry of one line, None for anything else (a continuation line, a line of another format)."""
    header = _HEADER.search(line)
    if header is None:
        return None
    rest = line[header.end() :]
    if not rest.startswith('"'):
        return Entry(header.group(2), rest.strip())
    message = re.match(_QUOTED, rest)
    if message is None:
        return None
    values: dict[str, str] = {}
    for pair in _PAIR.finditer(rest, message.end()):
        quoted, bare = pair.group(2), pair.group(3)
        values[pair.group(1)] = unquote(quoted) if quoted is not None else bare
    return Entry(header.group(2), unquote(message.group(1)), values)


class LogReader:
    """Follows a log file being written: :meth:`read` returns the entries added since the last call
    (a partial last line is kept for the next)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offset = 0
        self._partial = b""

    def skip_to_end(self) -> None:
        """Forget everything written so far."""
        self.offset = self.path.stat().st_size if self.path.exists() else 0
        self._partial = b""

    def read(self) -> list[Entry]:
        try:
            with self.path.open("rb") as f:
                f.seek(self.offset)
                data = f.read()
        except FileNotFoundError:
            return []
        self.offset += len(data)
        data = self._partial + data
        complete, _, self._partial = data.rpartition(b"\n")
        return list(_entries(complete.decode("utf-8", "replace")))


def _entries(text: str) -> Iterator[Entry]:
    for line in text.splitlines():
        entry = parse_line(line)
        if entry is not None:
            yield entry
