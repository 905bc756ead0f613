"""Each service's NATS user cannot publish or subscribe outside its permissions (issue 21 item 4).

nats-server runs with the generated ``authorization`` block that deploy/ and docker-compose use
(deploy/base/nats/auth.conf, checked against the generator in test_nats_auth.py) plus a test-only
``audit`` user that may subscribe to everything and publish nothing. Every user tries a few
subjects outside its permissions: the server refuses each (a permissions violation naming the
subject) and the audit user sees none of the refused messages, while it does see one the user may
publish, so the audit itself works.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import nats
import pytest
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg

from ksched.bus.auth import OBSERVER, authorization_block
from ksched.bus.embedded import EmbeddedNats
from tests.deploy.test_nats_auth import PASSWORDS, SUBJECTS

S = SUBJECTS
P = S.prefix
AUDIT = '    { user: "audit", password: "audit-secret", permissions: { publish: { deny: [">"] } } }\n'

FORBIDDEN: dict[str, tuple[list[str], list[str]]] = {
    # user: (subjects it may not publish to, subjects it may not subscribe to)
    "informer": (
        [
            S.queue_pop,
            S.unreserve("s1"),
            S.permit("uid"),
            S.forget,
            f"$JS.API.STREAM.DELETE.{S.placement_stream}",
        ],
        [S.queue_pop, S.permit_all, S.placements, S.trace_all, ">"],
    ),
    "queue": (
        [S.placements, S.snapshot_delta, S.pending_pods("default-scheduler"), S.assume, S.queue_done],
        [S.assume, S.snapshot_bootstrap, S.feed_all, S.placements, S.trace_all],
    ),
    "scheduler": (
        [S.placements, S.pending_pods("default-scheduler"), S.snapshot_delta, S.queue_requeue, S.forget],
        [S.queue_pop, S.assume, S.permit_all, S.snapshot_delta, f"{P}.scheduler.>"],
    ),
    "binder": (
        [S.placements, S.assume, S.queue_pop, S.queue_done, S.snapshot_delta, S.permit("uid")],
        [S.forget, S.queue_requeue, f"{P}.scheduler.*.unreserve", S.placements, S.health_all],
    ),
    "ui": (
        [S.placements, S.assume, S.queue_pop, S.queue_done, S.snapshot_delta, S.trace("default", "p")],
        [S.queue_list, S.snapshot_bootstrap, S.assume, S.feed_all, S.trace_all, ">"],
    ),
    OBSERVER: (
        [S.trace("default", "p"), S.health("queue", "q"), S.queue_pop, S.placements, S.assume],
        [S.queue_pop, S.permit_all, S.assume, S.feed_all, ">"],
    ),
}
ALLOWED_PUBLISH = {
    "informer": S.snapshot_delta,
    "queue": S.trace("default", "p"),
    "scheduler": S.queue_done,
    "binder": S.forget,
    "ui": S.queue_list,
}


@pytest.fixture(scope="module")
async def server(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[EmbeddedNats]:
    block = authorization_block(SUBJECTS, PASSWORDS)
    head, _, tail = block.rpartition("  ]\n")
    conf = tmp_path_factory.mktemp("nats") / "auth.conf"
    conf.write_text(f"{head}{AUDIT}  ]\n{tail}")
    async with EmbeddedNats(config_file=conf) as nats_server:
        yield nats_server


async def login(server: EmbeddedNats, user: str, password: str, errors: list[str]) -> NATS:
    async def error(exc: Exception) -> None:
        errors.append(str(exc).lower())

    return await nats.connect(
        server.url,
        user=user,
        password=password,
        error_cb=error,
        allow_reconnect=False,
        inbox_prefix=S.inbox_prefix,
    )


@pytest.mark.parametrize("user", list(FORBIDDEN))
async def test_a_user_cannot_leave_its_permissions(server: EmbeddedNats, user: str) -> None:
    audit_errors: list[str] = []
    audit = await login(server, "audit", "audit-secret", audit_errors)
    seen: list[str] = []

    async def record(msg: Msg) -> None:
        seen.append(msg.subject)

    await audit.subscribe(">", cb=record)
    await audit.flush()
    errors: list[str] = []
    nc = await login(server, user, PASSWORDS[user], errors)
    try:
        publish, subscribe = FORBIDDEN[user]
        for subject in publish:
            await nc.publish(subject, b"forged")
        for subject in subscribe:
            await nc.subscribe(subject)
        allowed = ALLOWED_PUBLISH.get(user)
        if allowed is not None:
            await nc.publish(allowed, b"allowed")
        await nc.flush(timeout=2)
        await audit.flush(timeout=2)
        await asyncio.sleep(0.2)  # the server's -ERR lines arrive after its PONG
        for subject in publish:
            assert any(f'publish to "{subject.lower()}"' in e for e in errors), (subject, errors)
        for subject in subscribe:
            assert any(f'subscription to "{subject.lower()}"' in e for e in errors), (subject, errors)
        assert not set(publish) & set(seen), seen
        if allowed is not None:
            assert allowed in seen, seen
        assert nc.is_connected  # a violation is refused, the connection stays
    finally:
        await nc.close()
        await audit.close()
    assert audit_errors == []
