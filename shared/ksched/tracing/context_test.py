"""W3C trace context of an attempt: the header round-trips, ids are the specification's sizes, and
the ratio sampler keeps about the configured share, the same for every service."""

from __future__ import annotations

import hashlib

from ksched.tracing.context import otel_trace_id, parse_traceparent, ratio_sampled, span_id, traceparent


def test_traceparent_round_trips_with_the_phase_span() -> None:
    header = traceparent("8c9a3753a9b018bc", "popped", sampled=True)
    assert header == f"00-00000000000000008c9a3753a9b018bc-{span_id('8c9a3753a9b018bc', 'popped')}-01"
    assert parse_traceparent(header) == (
        otel_trace_id("8c9a3753a9b018bc"),
        span_id("8c9a3753a9b018bc", "popped"),
        True,
    )
    assert span_id("8c9a3753a9b018bc", "popped") != span_id("8c9a3753a9b018bc", "queued")


def test_invalid_headers_are_no_context() -> None:
    zero = "0" * 32
    for bad in ("", "00-abc-def-01", f"00-{zero}-{'1' * 16}-01", f"ff-{'1' * 32}-{'1' * 16}-01", "00-x-y-z"):
        assert parse_traceparent(bad) is None, bad


def test_ratio_sampling() -> None:
    ids = [hashlib.sha256(str(i).encode()).hexdigest()[:16] for i in range(20000)]
    share = sum(ratio_sampled(t, 250_000) for t in ids) / len(ids)
    assert 0.2 < share < 0.3
    assert not any(ratio_sampled(t, 0) for t in ids[:100]) and all(
        ratio_sampled(t, 1_000_000) for t in ids[:100]
    )
