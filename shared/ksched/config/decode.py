"""Decoding a KubeSchedulerConfiguration document: YAML (or JSON) -> typed, strictly.

As kube-scheduler's ``loadConfig``: only ``kubescheduler.config.k8s.io/v1`` /
``KubeSchedulerConfiguration``; duplicate keys, unknown fields (each named by its path) and
wrongly typed values are errors; plugin args are decoded into their plugin's args type.
Decoding does not default or validate (see :mod:`ksched.config.defaults` and ``validation``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec
import yaml

from ksched.api.kinds import drop_nulls
from ksched.apimachinery.duration import DurationError, parse_duration
from ksched.apimachinery.strconv import go_quote
from ksched.config.errors import ConfigError
from ksched.config.plugin_args import args_type_for, decode_args, msgspec_error_text
from ksched.config.strict import unknown_fields
from ksched.config.types import API_VERSION, KIND, KubeSchedulerConfiguration
from ksched.framework.registration import Registration


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that rejects a key repeated in one mapping (as ``yaml.YAMLToJSONStrict``)."""


def _construct_mapping(loader: _StrictLoader, node: yaml.MappingNode) -> dict[Any, Any]:
    loader.flatten_mapping(node)
    seen: set[Any] = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=True)
        if key in seen:
            line = key_node.start_mark.line + 1
            raise ConfigError(
                [
                    "error converting YAML to JSON: yaml: unmarshal errors: "
                    f"line {line}: key {go_quote(str(key))} already set in map"
                ]
            )
        seen.add(key)
    return loader.construct_mapping(node, deep=True)


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def parse_yaml(text: str | bytes) -> Any:
    """The single YAML (or JSON) document in ``text`` as plain data."""
    try:
        docs = [d for d in yaml.load_all(text, Loader=_StrictLoader) if d is not None]
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = f"line {mark.line + 1}: " if mark is not None else ""
        raise ConfigError(
            [f"error converting YAML to JSON: yaml: {line}{exc.problem or exc.context}"]
        ) from exc
    except yaml.YAMLError as exc:
        raise ConfigError([f"error converting YAML to JSON: yaml: {exc}"]) from exc
    if len(docs) > 1:
        raise ConfigError([f"expected one KubeSchedulerConfiguration document, found {len(docs)}"])
    return docs[0] if docs else None


def _check_type_meta(data: Any) -> dict[str, Any]:
    expected = f"(expected apiVersion: {API_VERSION}, kind: {KIND})"
    if not isinstance(data, dict):
        got = "an empty document" if data is None else f"a {type(data).__name__}"
        raise ConfigError([f"Object 'Kind' is missing: the configuration is {got}, not an object {expected}"])
    kind, api_version = data.get("kind"), data.get("apiVersion")
    if not kind:
        raise ConfigError([f"Object 'Kind' is missing in the configuration {expected}"])
    if not api_version:
        raise ConfigError([f"Object 'apiVersion' is missing in the configuration {expected}"])
    if api_version != API_VERSION or kind != KIND:
        raise ConfigError(
            [
                f"no kind {go_quote(str(kind))} is registered for version {go_quote(str(api_version))}: "
                f"ksched reads kind {KIND} of apiVersion {API_VERSION} only"
            ]
        )
    return data


def decode_config(
    text: str | bytes, registry: Mapping[str, Registration] | None = None
) -> KubeSchedulerConfiguration:
    """Decode (not default, not validate) a configuration document; raises :class:`ConfigError`."""
    data = _check_type_meta(parse_yaml(text))
    unknown = unknown_fields(data, KubeSchedulerConfiguration)
    if unknown:
        raise ConfigError([f"strict decoding error: unknown field {go_quote(p)}" for p in unknown])
    try:
        config = msgspec.convert(drop_nulls(data), KubeSchedulerConfiguration)
    except msgspec.ValidationError as exc:
        raise ConfigError([f"decoding KubeSchedulerConfiguration: {msgspec_error_text(exc)}"]) from exc
    duration_errors = _duration_errors(config)
    if duration_errors:
        raise ConfigError(duration_errors)
    _decode_plugin_args(config, registry)
    return config


def _duration_errors(config: KubeSchedulerConfiguration) -> list[str]:
    """``metav1.Duration`` fields must hold Go duration strings (``time.ParseDuration``)."""
    le = config.leader_election
    fields = [
        ("leaderElection.leaseDuration", le.lease_duration),
        ("leaderElection.renewDeadline", le.renew_deadline),
        ("leaderElection.retryPeriod", le.retry_period),
    ]
    fields += [(f"extenders[{i}].httpTimeout", ext.http_timeout) for i, ext in enumerate(config.extenders)]
    errors: list[str] = []
    for path, value in fields:
        try:
            parse_duration(value)
        except DurationError as exc:
            errors.append(f"decoding KubeSchedulerConfiguration: {path}: {exc}")
    return errors


def _decode_plugin_args(
    config: KubeSchedulerConfiguration, registry: Mapping[str, Registration] | None
) -> None:
    errors: list[str] = []
    for i, profile in enumerate(config.profiles):
        for j, item in enumerate(profile.plugin_config):
            where = f".profiles[{i}].pluginConfig[{j}]"
            try:
                item.args = decode_args(item.name, item.args, args_type_for(item.name, registry), where)
            except ConfigError as exc:
                errors.extend(exc.messages)
    if errors:
        raise ConfigError(errors)
