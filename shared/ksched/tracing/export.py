"""The span sink of a service: the OpenTelemetry export when a tracing configuration is given,
else None (and nothing of OpenTelemetry imported)."""

from __future__ import annotations

from ksched.service.options import CommonOptions
from ksched.service.tracing_config import TracingConfig
from ksched.tracing.tracer import SpanSink, Tracer


class OtelMissing(RuntimeError):
    """A tracing configuration was given but the ``otel`` extra is not installed."""


def span_sink(config: TracingConfig | None, service: str, instance: str) -> SpanSink | None:
    """:class:`~ksched.tracing.otel.OtelSink` for ``config``; None without one."""
    if config is None:
        return None
    try:
        from ksched.tracing.otel import OtelSink
    except ImportError as exc:
        raise OtelMissing(
            f"--tracing-config-file needs the OpenTelemetry packages: pip install 'ksched[otel]' ({exc})"
        ) from None
    return OtelSink(config, service, instance)


def service_tracer(service: str, common: CommonOptions) -> Tracer:
    """The tracer of a ``service`` instance (``--id``), its spans exported per ``--tracing-config-file``,
    tracing the ``--trace-sample`` fraction of the pods."""
    return Tracer(
        service,
        common.identity,
        spans=span_sink(common.tracing, service, common.identity),
        sample=common.trace_sample,
    )
