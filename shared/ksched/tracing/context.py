"""W3C Trace Context for the OpenTelemetry export: the trace of an attempt and the span of each of its
phases, derived from the attempt's trace id, and the ``traceparent`` header that carries a span to
the next service (OpenTelemetry's messaging conventions). Imports nothing of OpenTelemetry.

An attempt's OpenTelemetry trace id is its 16-hex-digit ksched trace id left-padded with zeros to
32 digits; each phase is one span, its id the first 8 bytes of BLAKE2b over ``trace id/phase`` (a
phase happens at most once per attempt), so a service can name the span it is in before the span
ends, and put it in the ``traceparent`` of the message it sends meanwhile.
"""

from __future__ import annotations

import hashlib

TRACEPARENT = "traceparent"
"""The W3C header (lower case, as the specification writes it)."""

_VERSION = "00"
_MAX_PER_MILLION = 1_000_000


def otel_trace_id(trace_id: str) -> str:
    """The 32-hex-digit trace id of an attempt's ksched ``trace_id``."""
    return trace_id.lower().rjust(32, "0")[-32:]


def span_id(trace_id: str, phase: str) -> str:
    """The 16-hex-digit span id of ``phase`` in the attempt ``trace_id``."""
    return hashlib.blake2b(f"{trace_id}/{phase}".encode(), digest_size=8).hexdigest()


def traceparent(trace_id: str, phase: str, sampled: bool) -> str:
    """``00-<trace id>-<span id of phase>-<01 sampled | 00>``."""
    return f"{_VERSION}-{otel_trace_id(trace_id)}-{span_id(trace_id, phase)}-{'01' if sampled else '00'}"


def parse_traceparent(header: str) -> tuple[str, str, bool] | None:
    """(trace id, span id, sampled) of a ``traceparent`` header; None when it is not one."""
    parts = header.strip().split("-")
    if len(parts) < 4 or len(parts[0]) != 2 or parts[0] == "ff":
        return None
    trace, span, flags = parts[1].lower(), parts[2].lower(), parts[3]
    if len(trace) != 32 or len(span) != 16 or len(flags) != 2:
        return None
    try:
        if int(trace, 16) == 0 or int(span, 16) == 0:
            return None
        sampled = bool(int(flags, 16) & 1)
    except ValueError:
        return None
    return trace, span, sampled


def ratio_sampled(trace_id: str, per_million: int) -> bool:
    """OpenTelemetry's TraceIdRatioBased decision for ``per_million`` / 1e6 on the attempt's trace id
    (its low 64 bits under the bound), so every service decides alike without asking."""
    if per_million <= 0:
        return False
    if per_million >= _MAX_PER_MILLION:
        return True
    bound = round(per_million / _MAX_PER_MILLION * (1 << 64))
    return int(otel_trace_id(trace_id)[16:], 16) < bound
