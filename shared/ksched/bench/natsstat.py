"""NATS messages per pod, by client: from nats-server's ``/connz`` monitoring endpoint. A client is
named as the benchmark names its process (a connection ``binder:binder-0`` counts as ``binder-0``).

From the server's side: ``in`` is what a client published (requests, replies, stream writes, acks),
``out`` what the server delivered to it. A client's counts are summed over its connections (a
reconnect starts a new one; the old one's counts are lost, which a benchmark without faults does
not see).
"""

from __future__ import annotations

from collections.abc import Mapping

import aiohttp

Counts = dict[str, tuple[int, int, int, int]]
"""Connection name -> (messages in, messages out, bytes in, bytes out)."""


async def connection_counts(monitor_url: str) -> Counts:
    """What each named client has sent and received so far ({} when the endpoint cannot be read)."""
    try:
        async with (
            aiohttp.ClientSession() as session,
            session.get(f"{monitor_url}/connz", params={"limit": "4096"}) as resp,
        ):
            body = await resp.json(content_type=None)
    except (aiohttp.ClientError, ValueError):
        return {}
    out: Counts = {}
    for conn in body.get("connections") or []:
        name = (conn.get("name") or "(unnamed)").rpartition(":")[2]  # "binder:binder-0" -> "binder-0"
        counts = (conn["in_msgs"], conn["out_msgs"], conn["in_bytes"], conn["out_bytes"])
        before = out.get(name, (0, 0, 0, 0))
        out[name] = (
            before[0] + counts[0],
            before[1] + counts[1],
            before[2] + counts[2],
            before[3] + counts[3],
        )
    return out


def per_pod(
    before: Mapping[str, tuple[int, int, int, int]], after: Counts, pods: int
) -> dict[str, dict[str, float]]:
    """Per client, messages and KiB in and out per bound pod between two readings (with a total)."""
    if not pods:
        return {}
    out: dict[str, dict[str, float]] = {}
    total = [0, 0, 0, 0]
    for name, now in sorted(after.items()):
        was = before.get(name, (0, 0, 0, 0))
        delta = [max(0, n - w) for n, w in zip(now, was, strict=True)]
        total = [t + d for t, d in zip(total, delta, strict=True)]
        out[name] = _row(delta, pods)
    out["total"] = _row(total, pods)
    return out


def _row(delta: list[int], pods: int) -> dict[str, float]:
    return {
        "msgs_in": round(delta[0] / pods, 2),
        "msgs_out": round(delta[1] / pods, 2),
        "kib_in": round(delta[2] / pods / 1024, 2),
        "kib_out": round(delta[3] / pods / 1024, 2),
    }
