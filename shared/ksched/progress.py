"""A progress bar for long runs (``simulate`` of many pods, ``bench``, the demo's workload), drawn on
standard error only when it is a terminal: piped or redirected output stays free of it."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

Advance = Callable[[int], None]


def _nothing(_: int) -> None:
    return None


@contextlib.contextmanager
def progress_bar(total: int, description: str, *, minimum: int = 50) -> Iterator[Advance]:
    """Yields ``advance(n)``; a bar is shown for ``total >= minimum`` steps on a terminal."""
    if total < minimum or not sys.stderr.isatty():
        yield _nothing
        return
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task(description, total=total)
        yield lambda n: bar.advance(task, n)
