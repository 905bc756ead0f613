"""``--tracing-config-file``: Kubernetes' TracingConfiguration, read as kube-apiserver reads its
``--tracing-config-file`` (``apiserver.config.k8s.io/v1``, or ``apiserver.k8s.io/v1beta1`` /
``v1alpha1``, kind ``TracingConfiguration``; YAML or JSON; unknown fields ignored) with
component-base's defaults (``endpoint: localhost:4317``, ``samplingRatePerMillion: 0``) and
validation messages. Imports nothing of OpenTelemetry."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml

KIND = "TracingConfiguration"
API_VERSIONS = ("apiserver.config.k8s.io/v1", "apiserver.k8s.io/v1beta1", "apiserver.k8s.io/v1alpha1")
DEFAULT_ENDPOINT = "localhost:4317"
MAX_PER_MILLION = 1_000_000


class TracingConfigError(ValueError):
    """A tracing configuration file that cannot be used; the message names the file and field."""


@dataclass(frozen=True)
class TracingConfig:
    endpoint: str = DEFAULT_ENDPOINT
    """The OTLP/gRPC collector: ``host:port`` (plain text, as kube-apiserver exports), or a
    ``unix://`` socket."""
    sampling_rate_per_million: int = 0
    """Attempts sampled per million (0: only those whose parent is sampled)."""


def load_tracing_config(path: str) -> TracingConfig:
    """The TracingConfiguration of ``path`` (:class:`TracingConfigError` naming what is wrong)."""
    try:
        text = Path(path).read_text()
    except OSError as exc:
        raise TracingConfigError(
            f"unable to read tracing configuration from {path!r}: {exc.strerror}"
        ) from None
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise TracingConfigError(f"{path}: unable to decode tracing configuration data: {exc}") from None
    return parse_tracing_config(doc, path)


def parse_tracing_config(doc: Any, where: str) -> TracingConfig:
    if not isinstance(doc, dict):
        raise TracingConfigError(f"{where}: unable to decode tracing configuration data: not an object")
    version, kind = doc.get("apiVersion"), doc.get("kind")
    if kind != KIND or version not in API_VERSIONS:
        raise TracingConfigError(
            f"{where}: unable to decode tracing configuration data: no kind {kind!r} is registered for "
            f"version {version!r} (want kind {KIND} of {', '.join(API_VERSIONS)})"
        )
    endpoint = doc.get("endpoint", DEFAULT_ENDPOINT)
    rate = doc.get("samplingRatePerMillion", 0)
    if not isinstance(endpoint, str):
        raise TracingConfigError(f"{where}: endpoint: Invalid value: {endpoint!r}: must be a string")
    if isinstance(rate, bool) or not isinstance(rate, int):
        raise TracingConfigError(
            f"{where}: samplingRatePerMillion: Invalid value: {rate!r}: must be an integer"
        )
    errors = _validate(endpoint, rate)
    if errors:
        raise TracingConfigError(f"{where}: " + "; ".join(errors))
    return TracingConfig(endpoint, rate)


def _validate(endpoint: str, rate: int) -> list[str]:
    """component-base's ValidateTracingConfiguration (field paths from the file's root)."""
    errors = []
    if rate < 0:
        errors.append(f"samplingRatePerMillion: Invalid value: {rate}: sampling rate must be positive")
    if rate > MAX_PER_MILLION:
        errors.append(
            f"samplingRatePerMillion: Invalid value: {rate}: "
            "sampling rate per million must be less than or equal to one million"
        )
    url = endpoint if "//" in endpoint else "dns://" + endpoint
    scheme = urlsplit(url).scheme
    if scheme not in ("dns", "unix", "unix-abstract"):
        errors.append(
            f'endpoint: Invalid value: "{url}": unsupported scheme: {scheme}.  Options are none, dns, unix, '
            "or unix-abstract.  See https://github.com/grpc/grpc/blob/master/doc/naming.md"
        )
    return errors
