"""Subject layout and token escaping: dotted pod names and namespaces stay one token each."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st
from nats.aio.msg import Msg

from ksched.bus.connect import Bus
from ksched.bus.endpoints import TRACE, Wildcard
from ksched.bus.messages import TraceBatch, TraceEvent
from ksched.bus.subjects import SubjectError, SubjectKind, Subjects
from ksched.bus.tokens import TokenError, decode_token, encode_token
from tests.bus.samples import sample

TOKEN_RE = re.compile(r"(?:[A-Za-z0-9_-]|=[0-9A-F]{2})+|=")


@pytest.mark.parametrize(
    ("value", "token"),
    [
        ("web-1", "web-1"),
        ("web.1", "web=2E1"),
        ("storage.k8s.io/CSINode", "storage=2Ek8s=2Eio=2FCSINode"),
        ("a*b>c", "a=2Ab=3Ec"),
        ("has space", "has=20space"),
        ("p=q", "p=3Dq"),
        ("", "="),
        ("pöd", "p=C3=B6d"),
    ],
)
def test_encode_token_examples(value: str, token: str) -> None:
    assert encode_token(value) == token
    assert decode_token(token) == value


@given(st.text())
def test_token_round_trip_and_shape(value: str) -> None:
    token = encode_token(value)
    assert TOKEN_RE.fullmatch(token), token
    assert decode_token(token) == value


@pytest.mark.parametrize("bad", ["a.b", "=2e", "=41", "=ZZ", "=", "web=2", "*", ">", "=FF"])
def test_decode_token_rejects_what_encode_never_produces(bad: str) -> None:
    if bad == "=":  # the empty string's token
        assert decode_token(bad) == ""
        return
    with pytest.raises(TokenError):
        decode_token(bad)


def test_subject_layout_with_dotted_names() -> None:
    s = Subjects()
    assert s.trace("team.a", "web.1") == "ksched.trace.team=2Ea.web=2E1"
    assert s.trace("team", "a.web.1") == "ksched.trace.team.a=2Eweb=2E1"
    assert s.pending_pods("my.scheduler") == "ksched.feed.pending.my=2Escheduler"
    assert s.cluster_events("storage.k8s.io/CSINode") == "ksched.feed.event.storage=2Ek8s=2Eio=2FCSINode"
    assert s.unreserve("sched.1") == "ksched.scheduler.sched=2E1.unreserve"
    assert s.permit("uid-1") == "ksched.binder.permit.uid-1"
    assert s.health("queue", "host.a") == "ksched.health.queue.host=2Ea"


def test_prefix_and_jetstream_names() -> None:
    s = Subjects("prod.ksched")
    assert s.queue_pop == "prod.ksched.queue.pop"
    assert s.stream_names == (
        "prod_ksched_snapshot",
        "prod_ksched_feed",
        "prod_ksched_placements",
        "prod_ksched_trace",
    )
    assert s.kv_bucket("leases") == "prod_ksched_leases"
    for bad in ("", "a..b", "a.*", "a b", ".a", "a>"):
        with pytest.raises(SubjectError, match="subject prefix"):
            Subjects(bad)
    with pytest.raises(SubjectError):
        s.kv_bucket("a.b")


async def test_dotted_names_route_to_exactly_their_subscribers(bus: Bus) -> None:
    """Pods ``team/a.web.1``, ``team.a/web.1`` and ``team.a/web`` must never see each other's traces."""
    pods = [("team", "a.web.1"), ("team.a", "web.1"), ("team.a", "web")]
    got: dict[str, list[tuple[str, str]]] = {}
    done = asyncio.Event()

    def recorder(label: str) -> Callable[[TraceEvent | TraceBatch, Msg], Awaitable[None]]:
        async def handle(msg: TraceEvent | TraceBatch, raw: Msg) -> None:
            assert isinstance(msg, TraceEvent)
            got.setdefault(label, []).append((msg.namespace, msg.name))
            if sum(map(len, got.values())) == 5:
                done.set()

        return handle

    for ns, name in pods:
        await bus.subscribe(TRACE.to(ns, name), recorder(f"{ns}/{name}"))
    namespace = Wildcard(
        TRACE.types, lambda s: s.trace_namespace("team.a"), SubjectKind.TRACE, "trace_namespace"
    )
    await bus.subscribe(namespace, recorder("ns:team.a"))
    for ns, name in pods:
        event = msgspec.structs.replace(sample(TraceEvent), namespace=ns, name=name)
        await bus.publish(TRACE.to(ns, name), event)
    await asyncio.wait_for(done.wait(), 5)
    assert got == {
        "team/a.web.1": [("team", "a.web.1")],
        "team.a/web.1": [("team.a", "web.1")],
        "team.a/web": [("team.a", "web")],
        "ns:team.a": [("team.a", "web.1"), ("team.a", "web")],
    }
