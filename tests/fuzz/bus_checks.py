"""What a service must do with a hostile bus message (docs/bus.md, "Wire format and versioning").

A malformed one (``BadMessage``: bytes that do not decode, another type, an unreadable version) is
dropped and counted in ``ksched_bus_bad_messages_total{subject_kind}``; a requester gets a 400 error
reply at once. A well-formed one, however odd its values, is handled: the requester gets a decodable
reply, and the handler never raises (``ksched_bus_handler_errors_total`` stays put; a 500 reply
would mean it did).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import nats.errors
import pytest
from prometheus_client import REGISTRY

from ksched.bus.codec import BadMessage, decode
from ksched.bus.connect import Bus
from ksched.bus.endpoints import RequestEndpoint
from ksched.bus.handlers import ERROR_CODE_HEADER, ERROR_HEADER
from tests.fuzz.payloads import is_malformed


def bus_counter(name: str, kind: str) -> float:
    return REGISTRY.get_sample_value(name, {"subject_kind": kind}) or 0.0


@dataclass(frozen=True)
class Counts:
    bad: float
    errors: float

    @classmethod
    def of(cls, kind: str) -> Counts:
        return cls(
            bus_counter("ksched_bus_bad_messages_total", kind),
            bus_counter("ksched_bus_handler_errors_total", kind),
        )


async def check_request(
    bus: Bus, endpoint: RequestEndpoint[Any, Any], payload: bytes, timeout: float = 5.0
) -> None:
    """Send ``payload`` (raw bytes, whatever the endpoint's request type) to ``endpoint`` and check
    the answer as the module docstring says."""
    malformed = is_malformed(payload, endpoint.request)
    before = Counts.of(endpoint.kind)
    subject = endpoint.subject(bus.subjects)
    try:
        answer = await bus.nc.request(subject, payload, timeout=timeout)
    except nats.errors.TimeoutError:
        raise AssertionError(f"{subject}: no answer within {timeout} s") from None
    headers = answer.headers or {}
    after = Counts.of(endpoint.kind)
    if malformed:
        assert headers.get(ERROR_CODE_HEADER) == "400", (headers, answer.data[:200])
        assert after == Counts(before.bad + 1, before.errors)
        return
    assert ERROR_HEADER not in headers, f"the handler failed: {headers.get(ERROR_HEADER)}"
    assert after == before
    try:
        decode(answer.data, endpoint.reply)
    except BadMessage as exc:
        raise AssertionError(f"{subject}: undecodable reply: {exc}") from None


def crashes(caplog: pytest.LogCaptureFixture) -> list[str]:
    """Tracebacks ksched logged (a task or handler that failed). kubesim's HTTP server (aiohttp)
    may log one for a URL too long for it, such as an Event of a fuzzed 300 KB namespace, while it
    answers 400: not ksched's, so not counted."""
    return [r.getMessage() for r in caplog.records if r.name.startswith("ksched") and r.exc_info]
