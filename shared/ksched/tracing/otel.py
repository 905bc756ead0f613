"""The OpenTelemetry export of the trace events (``--tracing-config-file``): each event a service's
:class:`~ksched.tracing.tracer.Tracer` publishes becomes one span of its attempt's trace, exported
over OTLP/gRPC by the SDK's batch processor (its own thread). Imported only when a tracing
configuration is given: the ``otel`` extra (``pip install ksched[otel]``) is needed then only.

Span: the phase as its name; ``ts`` and ``duration`` as start and end (an event without a measured
duration is an instant); the event's details as ``ksched.*`` attributes with the pod's
``k8s.*``; its id and its trace's from :mod:`ksched.tracing.context`; its parent the span the
service was handed in a ``traceparent`` (or, within a service, the phase it follows). Resource:
``service.name`` ``ksched-<service>``, ``service.instance.id`` the instance. Sampling as
kube-apiserver's: parent-based, else ``samplingRatePerMillion`` on the trace id.
"""

from __future__ import annotations

import json
from typing import Any

from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import SpanContext, SpanKind, Status, StatusCode, TraceFlags

from ksched.bus.messages import TraceEvent
from ksched.service.tracing_config import TracingConfig
from ksched.tracing.context import otel_trace_id, parse_traceparent, ratio_sampled, span_id, traceparent
from ksched.tracing.phases import Phase

SCOPE = InstrumentationScope("ksched.tracing")
FAILED = frozenset({Phase.BIND_FAILED, Phase.ERROR, Phase.ASSUME_CONFLICT})
KINDS: dict[str, SpanKind] = {
    Phase.ASSUMED: SpanKind.CLIENT,  # the assume request
    Phase.ASSUME_CHECK: SpanKind.SERVER,  # the informer answering it
    Phase.POPPED: SpanKind.PRODUCER,  # the pod handed to a scheduler in the lease
}


class OtelSink:
    """Turns trace events into spans for one service instance."""

    def __init__(
        self, config: TracingConfig, service: str, instance: str, exporter: SpanExporter | None = None
    ) -> None:
        self.config = config
        self.resource = Resource.create(
            {"service.name": f"ksched-{service}", "service.instance.id": instance}
        )
        endpoint = config.endpoint
        self.processor = BatchSpanProcessor(
            exporter or OTLPSpanExporter(endpoint=endpoint, insecure=True), schedule_delay_millis=500
        )

    def sampled(self, trace_id: str, parent: str = "") -> bool:
        """Parent-based: a parent's sampled flag decides, else the ratio on the trace id."""
        parsed = parse_traceparent(parent) if parent else None
        if parsed is not None:
            return parsed[2]
        return ratio_sampled(trace_id, self.config.sampling_rate_per_million)

    def traceparent(self, trace_id: str, phase: str) -> str:
        """The header naming ``phase``'s span of the attempt (for the next service)."""
        return traceparent(trace_id, phase, ratio_sampled(trace_id, self.config.sampling_rate_per_million))

    def add(self, event: TraceEvent, parent: str) -> None:
        """Export ``event`` as a span (if its trace is sampled)."""
        if not self.sampled(event.trace_id, parent):
            return
        trace = int(otel_trace_id(event.trace_id), 16)
        flags = TraceFlags(TraceFlags.SAMPLED)
        context = SpanContext(trace, int(span_id(event.trace_id, event.phase), 16), False, flags)
        parsed = parse_traceparent(parent) if parent else None
        parent_context = SpanContext(trace, int(parsed[1], 16), True, flags) if parsed is not None else None
        start = int(event.ts * 1e9)
        end = start + int((event.duration or 0.0) * 1e9)
        status = Status(StatusCode.UNSET)
        if event.phase in FAILED:
            status = Status(
                StatusCode.ERROR, str(event.details.get("reason") or event.details.get("message") or "")
            )
        span = ReadableSpan(
            name=event.phase,
            context=context,
            parent=parent_context,
            resource=self.resource,
            attributes=_attributes(event),
            kind=KINDS.get(event.phase, SpanKind.INTERNAL),
            status=status,
            start_time=start,
            end_time=end,
            instrumentation_scope=SCOPE,
        )
        self.processor.on_end(span)

    def shutdown(self) -> None:
        """Export what is left and stop the processor's thread (blocks: call it off the loop)."""
        self.processor.shutdown()  # type: ignore[no-untyped-call]


def _attributes(event: TraceEvent) -> dict[str, Any]:
    out: dict[str, Any] = {
        "k8s.namespace.name": event.namespace,
        "k8s.pod.name": event.name,
        "k8s.pod.uid": event.pod_uid,
        "ksched.trace_id": event.trace_id,
        "ksched.phase": event.phase,
        "ksched.instance": event.instance,
    }
    for key, value in event.details.items():
        out[f"ksched.{key}"] = _value(value)
    return out


def _value(value: Any) -> Any:
    """An attribute value: scalars as they are, lists of scalars of one type as lists, the rest JSON."""
    if isinstance(value, str | bool | int | float):
        return value
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        return value
    return json.dumps(value, separators=(",", ":"), default=str)
