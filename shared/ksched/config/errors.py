"""``ConfigError`` and the apimachinery ``field.Error`` renderings the configuration checks use.

Messages read like kube-scheduler's: ``<path>: Invalid value: <value>: <detail>``, values in Go
syntax (numbers bare, strings quoted, other values as Go's ``json.Marshal`` prints them).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import msgspec

from ksched.plugins.fielderrors import child, go_quote, index

__all__ = [
    "ConfigError",
    "child",
    "duplicate",
    "forbidden",
    "go_value",
    "index",
    "invalid",
    "required",
]


class ConfigError(ValueError):
    """An unusable configuration; ``messages`` lists every problem found (one line each)."""

    def __init__(self, messages: Iterable[str]) -> None:
        self.messages: list[str] = list(messages)
        super().__init__("\n".join(self.messages))


def go_value(value: Any) -> str:
    """A bad value as ``field.Error`` prints it: ints/bools bare, strings ``%q``, others as JSON."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, str):
        return go_quote(value)
    if value is None:
        return "null"
    return msgspec.json.encode(value).decode()


def invalid(path: str, value: Any, detail: str) -> str:
    body = f"{path}: Invalid value: {go_value(value)}"
    return f"{body}: {detail}" if detail else body


def required(path: str, detail: str = "") -> str:
    return f"{path}: Required value: {detail}" if detail else f"{path}: Required value"


def duplicate(path: str, value: Any) -> str:
    return f"{path}: Duplicate value: {go_value(value)}"


def forbidden(path: str, detail: str) -> str:
    return f"{path}: Forbidden: {detail}" if detail else f"{path}: Forbidden"


def not_supported(path: str, value: str, supported: Sequence[str]) -> str:
    quoted = ", ".join(go_quote(v) for v in supported)
    return f"{path}: Unsupported value: {go_quote(value)}: supported values: {quoted}"
