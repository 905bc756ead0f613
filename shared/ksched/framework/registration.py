"""How a plugin is built (upstream ``framework/runtime/registry.go``'s ``PluginFactory``): a factory
``(typed args or None, handle) -> plugin`` and, when the plugin takes args, their type.

In-tree and out-of-tree plugins alike are registered this way; the registry that maps names to
registrations is :mod:`ksched.plugins.registry`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import msgspec

from ksched.framework.handle import Handle

PluginFactory = Callable[[Any, Handle], object]
"""(typed args or None, handle) -> plugin instance."""


class Args(msgspec.Struct, rename="camel", kw_only=True, forbid_unknown_fields=True, omit_defaults=True):
    """Base of plugin args: strict decoding (an unknown field is an error), as kube-scheduler."""

    api_version: str | None = None
    kind: str | None = None


@dataclass(frozen=True, slots=True)
class Registration:
    """How to build a plugin: its factory and, when it takes args, the args Struct type."""

    factory: PluginFactory
    args_type: type[msgspec.Struct] | None = None

    def default_args(self) -> object | None:
        return self.args_type() if self.args_type is not None else None
