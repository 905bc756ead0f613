"""Plugin args in a profile's ``pluginConfig``: which type a plugin's args have, strict decoding
into that type, and upstream's defaulting of args (``SetDefaults_<Plugin>Args``).

In-tree plugins use ``<Name>Args`` of :mod:`ksched.plugins.args.types` (upstream's scheme kinds);
out-of-tree plugins use the ``args_type`` of their :class:`Registration`; plugins without an
args type get the raw mapping, as upstream passes ``runtime.Unknown``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import msgspec

from ksched.api.kinds import drop_nulls
from ksched.apimachinery.strconv import go_quote
from ksched.config.errors import ConfigError
from ksched.config.strict import unknown_fields
from ksched.config.types import API_VERSION, GROUP
from ksched.framework.registration import Registration
from ksched.plugins.args import types as plugin_args
from ksched.plugins.args.types import DynamicResourcesArgs
from ksched.plugins.registry import IN_TREE

#: DynamicResourcesArgs defaults of kube-scheduler 1.36 (DRASchedulerFilterTimeout and
#: DRADeviceBindingConditions + DRAResourceClaimDeviceStatus are on by default)
DRA_FILTER_TIMEOUT_DEFAULT = "10s"
DRA_BINDING_TIMEOUT_DEFAULT = "10m0s"

_MSGSPEC_PATH = re.compile(r"^(.*) - at `\$(.*)`$", re.DOTALL)


def args_type_for(name: str, registry: Mapping[str, Registration] | None) -> type[msgspec.Struct] | None:
    """The args Struct type of plugin ``name``, or None when it takes no typed args."""
    if name in IN_TREE:
        found = getattr(plugin_args, f"{name}Args", None)
        return found if isinstance(found, type) and issubclass(found, msgspec.Struct) else None
    if registry is not None and name in registry:
        try:
            return registry[name].args_type
        except Exception as exc:
            raise ConfigError([f'loading plugin "{name}": {exc}']) from exc
    return None


def apply_defaults(args: Any) -> Any:
    """Upstream args defaulting beyond what the args types' ``__post_init__`` already does."""
    if isinstance(args, DynamicResourcesArgs):
        if args.filter_timeout is None:
            args.filter_timeout = DRA_FILTER_TIMEOUT_DEFAULT
        if args.binding_timeout is None:
            args.binding_timeout = DRA_BINDING_TIMEOUT_DEFAULT
    return args


def default_args(args_type: type[msgspec.Struct]) -> Any:
    """A defaulted args object, as upstream appends for plugins configured without args."""
    return apply_defaults(args_type())


def msgspec_error_text(exc: msgspec.ValidationError) -> str:
    """``Expected `int`, got `str` - at `$.a[0].b``` -> ``a[0].b: Expected `int`, got `str```."""
    text = str(exc)
    found = _MSGSPEC_PATH.match(text)
    if not found:
        return text
    path = found.group(2).lstrip(".")
    return f"{path}: {found.group(1)}" if path else found.group(1)


def decode_args(name: str, raw: Any, args_type: type[msgspec.Struct] | None, where: str) -> Any:
    """Decode the raw ``args`` of plugin ``name`` strictly into ``args_type`` (defaulted).

    ``where`` is the config path of the pluginConfig item (``.profiles[0].pluginConfig[1]``).
    """
    if args_type is None:
        return raw
    prefix = f"decoding {where}: decoding args for plugin {name}"
    data = {} if raw is None else raw
    if not isinstance(data, dict):
        raise ConfigError([f"{prefix}: expected an object, got {type(data).__name__}"])
    kind = f"{name}Args" if name in IN_TREE else args_type.__name__
    errors = _type_meta_errors(name, data, kind, where)
    if errors:
        raise ConfigError(errors)
    errors = [
        f"{prefix}: strict decoding error: unknown field {go_quote(p)}"
        for p in unknown_fields(data, args_type)
    ]
    if errors:
        raise ConfigError(errors)
    try:
        decoded = msgspec.convert(drop_nulls(data), args_type)
    except msgspec.ValidationError as exc:
        raise ConfigError([f"{prefix}: {msgspec_error_text(exc)}"]) from exc
    return apply_defaults(decoded)


def _type_meta_errors(name: str, data: Mapping[str, Any], kind: str, where: str) -> list[str]:
    api_version = data.get("apiVersion")
    given_kind = data.get("kind")
    if api_version not in (None, "", API_VERSION):
        registered = go_quote(str(given_kind or kind))
        return [
            f"decoding {where}: decoding args for plugin {name}: no kind {registered} is registered for "
            f"version {go_quote(str(api_version))}"
        ]
    if given_kind not in (None, "", kind):
        return [
            f"decoding {where}: args for plugin {name} were not of type {kind}.{GROUP}, "
            f"got {given_kind}.{GROUP}"
        ]
    return []
