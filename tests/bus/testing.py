"""Endpoints of the bus tests alone (no service serves them)."""

from __future__ import annotations

from typing import Any

from ksched.bus import endpoints
from ksched.bus.endpoints import PublishEndpoint, PublishFamily, RequestEndpoint, RequestFamily, Wildcard
from ksched.bus.messages import Ack

PING = RequestEndpoint(Ack, Ack, lambda s: f"{s.prefix}.test.ping", "test", "test.ping")
"""Ack -> Ack, for tests of the connection rather than of a message."""

NOTE = PublishEndpoint((Ack,), lambda s: f"{s.prefix}.test.note", "test", "test.note")
"""Ack, published, for tests of the connection rather than of a message."""


AnyEndpoint = (
    RequestEndpoint[Any, Any] | PublishEndpoint[Any] | RequestFamily[Any, Any, Any] | PublishFamily[Any, Any]
)


def declared_endpoints() -> dict[str, AnyEndpoint]:
    """The endpoints ``ksched.bus.endpoints`` declares, by ``Subjects`` member (wildcards left out)."""
    kinds = (RequestEndpoint, PublishEndpoint, RequestFamily, PublishFamily)
    return {e.name: e for e in vars(endpoints).values() if isinstance(e, kinds)}


def declared_wildcards() -> list[Wildcard[Any]]:
    return [e for e in vars(endpoints).values() if isinstance(e, Wildcard)]
