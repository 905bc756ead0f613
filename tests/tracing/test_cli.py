"""``ksched trace`` as a subprocess against a real nats-server: the timeline, --json, nothing
found, no stream, NATS unreachable, --follow and --all streaming live events."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from pathlib import Path

import pytest

from ksched.bus.auth import OBSERVER, SERVICES, authorization_block
from ksched.bus.connect import Bus, connect
from ksched.bus.credentials import NatsCredentials
from ksched.bus.embedded import EmbeddedNats
from ksched.bus.endpoints import TRACE
from ksched.bus.messages import TraceEvent
from ksched.bus.subjects import Subjects
from ksched.tracing import Phase, Tracer
from ksched.tracing.cli import parse_duration, parse_pod
from ksched.tracing.reader import pod_history
from tests.fixtures.nats import BusFactory


async def ksched_trace(
    *args: str, timeout: float = 30.0, env: dict[str, str] | None = None
) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "ksched.cli",
        "trace",
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={**os.environ, **(env or {})},
    )
    out, err = await asyncio.wait_for(proc.communicate(), timeout)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


async def publish_attempt(
    bus: Bus, name: str = "web-1", now: float | None = None, reader: Bus | None = None
) -> None:
    """Five events of one attempt, published through a Tracer on ``bus``; waits until ``reader``
    (default ``bus``) sees them stored."""
    now = time.time() if now is None else now
    tracer = Tracer("scheduler", "s-0")
    tracer.start(bus)
    key = ("t-abc", f"uid-{name}", "team-a", name)
    tracer.emit(Phase.QUEUED, *key, ts=now, details={"queue": "active", "event": "PodAdd"})
    tracer.emit(Phase.POPPED, *key, ts=now + 0.010, details={"scheduler": "s-0"})
    tracer.emit(Phase.FILTER, *key, ts=now + 0.011, duration=0.002, details={"nodes": 3, "feasible": 2})
    tracer.emit(Phase.ASSUMED, *key, ts=now + 0.013, duration=0.001, details={"node": "n2"})
    tracer.emit(Phase.BOUND, *key, ts=now + 0.020, duration=0.003, details={"node": "n2"})
    await tracer.close()
    for _ in range(100):  # core publishes are stored asynchronously
        if len(await pod_history(reader or bus, "team-a", name)) == 5:
            return
        await asyncio.sleep(0.02)
    raise AssertionError("events not stored")


def common(bus: Bus, url: str) -> list[str]:
    return ["--nats", url, "--subject-prefix", bus.subjects.prefix]


async def test_prints_the_timeline(bus_factory: BusFactory, nats_url: str) -> None:
    bus = await bus_factory("cli")
    await publish_attempt(bus)
    code, out, err = await ksched_trace("team-a/web-1", *common(bus, nats_url))
    assert code == 0, err
    assert out.startswith("pod team-a/web-1  uid uid-web-1  1 attempt, 5 events")
    assert "attempt 1 of 1  trace t-abc" in out and "bound on n2 after 23.0 ms" in out
    steps = [line for line in out.splitlines() if line.startswith("  ")]
    queued = next(line for line in steps if " queued " in line)
    assert "+0.00 ms" in queued and "(10.0 ms)" in queued and "queue=active event=PodAdd" in queued
    bound = next(line for line in steps if " bound " in line)
    assert "+20.0 ms" in bound and "3.0 ms" in bound and "node=n2" in bound


async def test_json_is_one_object_per_event_in_time_order(bus_factory: BusFactory, nats_url: str) -> None:
    bus = await bus_factory("cli")
    await publish_attempt(bus)
    code, out, err = await ksched_trace("team-a/web-1", "--json", *common(bus, nats_url))
    assert code == 0, err
    docs = [json.loads(line) for line in out.splitlines()]
    assert [d["phase"] for d in docs] == ["queued", "popped", "filter", "assumed", "bound"]
    assert all(d["trace_id"] == "t-abc" and d["key"] == "team-a/web-1" for d in docs)
    assert docs[2]["duration"] == 0.002 and docs[2]["details"] == {"nodes": 3, "feasible": 2}


async def test_since_leaves_out_older_events(bus_factory: BusFactory, nats_url: str) -> None:
    bus = await bus_factory("cli")
    await publish_attempt(bus, now=time.time() - 3600 * 2)
    code, _, err = await ksched_trace("team-a/web-1", "--since", "1h", *common(bus, nats_url))
    assert code == 1 and "no trace events for pod team-a/web-1 in that time" in err


async def test_unknown_pod_says_so_and_names_traced_pods(bus_factory: BusFactory, nats_url: str) -> None:
    bus = await bus_factory("cli")
    await publish_attempt(bus)
    code, out, err = await ksched_trace("team-a/nope", *common(bus, nats_url))
    assert code == 1 and out == ""
    assert "no trace events for pod team-a/nope" in err
    assert "pods of namespace team-a with traces: web-1" in err


async def test_no_trace_stream_is_explained(bus: Bus, nats_url: str) -> None:
    code, _, err = await ksched_trace("default/x", *common(bus, nats_url))
    assert code == 1 and f"no trace stream {bus.subjects.trace_stream}" in err


async def test_unreachable_nats_is_a_clear_error() -> None:
    code, _, err = await ksched_trace("default/x", "--nats", "nats://127.0.0.1:1", timeout=60)
    assert code == 2 and "cannot reach NATS at nats://127.0.0.1:1" in err


async def test_bad_arguments_are_refused() -> None:
    code, _, err = await ksched_trace("--since", "soon", "default/x")
    assert code == 2 and "--since" in err and "not a duration" in err
    code, _, err = await ksched_trace("--all", "default/x")
    assert code == 2 and "not both" in err


@pytest.mark.parametrize("all_pods", [False, True])
async def test_follow_streams_events_as_they_happen(
    bus_factory: BusFactory, nats_url: str, all_pods: bool
) -> None:
    bus = await bus_factory("cli")
    await publish_attempt(bus, name="old")  # history: shown by --follow of that pod, not by --all
    target = ["--all"] if all_pods else ["team-a/live", "--follow"]
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "ksched.cli",
        "trace",
        *target,
        *common(bus, nats_url),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    assert proc.stdout is not None
    try:
        for _ in range(300):  # until its consumer exists (a positive signal, not a guess at its start-up)
            if (await bus.js.stream_info(bus.subjects.trace_stream)).state.consumer_count:
                break
            await asyncio.sleep(0.1)
        await publish_attempt(bus, name="live")
        lines: list[str] = []
        while not any(" bound " in line for line in lines):
            raw = await asyncio.wait_for(proc.stdout.readline(), 20)
            assert raw, "ksched trace ended early"
            lines.append(raw.decode())
    finally:
        proc.terminate()
        await proc.wait()
    assert lines[0].startswith("-- team-a/live attempt trace t-abc" if all_pods else "-- attempt trace t-abc")
    phases = [line.split()[4 if all_pods else 3] for line in lines[1:]]
    assert phases == ["queued", "popped", "filter", "assumed", "bound"]
    assert not any("old" in line for line in lines)


async def test_the_read_only_observer_user_can_trace(tmp_path: Path) -> None:
    """With the generated NATS users: the scheduler's user publishes (and creates P_trace), the
    observer's reads the timeline through ``ksched trace`` (KSCHED_NATS_USER / _PASSWORD)."""
    subjects = Subjects("secured")
    passwords = {user: f"{user}-pw" for user in (*SERVICES, OBSERVER)}
    conf = tmp_path / "auth.conf"
    conf.write_text(authorization_block(subjects, passwords))
    async with EmbeddedNats(config_file=str(conf)) as server:

        async def login(user: str) -> Bus:
            creds = NatsCredentials(user=user, password=passwords[user])
            return await connect(
                server.url, name=user, subjects=subjects, initial_timeout=5, **creds.connect_kwargs()
            )

        scheduler, reader = await login("scheduler"), await login(OBSERVER)
        try:
            await publish_attempt(scheduler, reader=reader)
        finally:
            await scheduler.close()
            await reader.close()
        observer = {"KSCHED_NATS_USER": OBSERVER, "KSCHED_NATS_PASSWORD": passwords[OBSERVER]}
        args = ("--nats", server.url, "--subject-prefix", "secured")
        code, out, err = await ksched_trace("team-a/web-1", *args, env=observer)
        assert code == 0, err
        assert "bound on n2" in out
        code, _, err = await ksched_trace("team-a/other", *args, env=observer)
        assert code == 1 and "pods of namespace team-a with traces: web-1" in err
        code, _, err = await ksched_trace("team-a/web-1", *args, env={"KSCHED_NATS_USER": "nobody"})
        assert code == 2 and "cannot reach NATS" in err


@pytest.mark.parametrize(
    ("text", "seconds"), [("90", 90.0), ("30s", 30.0), ("5m", 300.0), ("1h30m", 5400.0), ("500ms", 0.5)]
)
def test_parse_duration(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "soon", "5x", "m5", "-3"])
def test_parse_duration_refuses(text: str) -> None:
    with pytest.raises(ValueError, match="not a duration"):
        parse_duration(text)


def test_parse_pod() -> None:
    assert parse_pod("team-a/web-1") == ("team-a", "web-1")
    assert parse_pod("web-1") == ("default", "web-1")
    for bad in ("/x", "ns/", "a/b/c"):
        with pytest.raises(ValueError, match="NAMESPACE/NAME"):
            parse_pod(bad)


def old_release_event(name: str, phase: str, ts: float) -> TraceEvent:
    """An event as a service of the release before trace shards wrote it (on the pod's own subject)."""
    return TraceEvent(
        trace_id="t-abc", pod_uid=f"uid-{name}", namespace="team-a", name=name, service="binder",
        instance="b-0", phase=phase, ts=ts, details={"node": "n2"},
    )  # fmt: skip


async def test_a_rolling_upgrade_shows_the_events_of_both_releases(
    bus_factory: BusFactory, nats_url: str
) -> None:
    """History and --follow of a pod read its trace shard and its own subject (older services)."""
    bus = await bus_factory("cli")
    now = time.time()
    await publish_attempt(bus, name="mixed", now=now)  # creates the stream, on the shard
    await bus.publish(TRACE.to("team-a", "mixed"), old_release_event("mixed", Phase.PREBIND, now + 0.015))
    for _ in range(100):
        if len(await pod_history(bus, "team-a", "mixed")) == 6:
            break
        await asyncio.sleep(0.02)
    code, out, err = await ksched_trace("team-a/mixed", "--json", *common(bus, nats_url))
    assert code == 0, err
    phases = [json.loads(line)["phase"] for line in out.splitlines()]
    assert phases == ["queued", "popped", "filter", "assumed", "prebind", "bound"]

    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "ksched.cli", "trace", "team-a/live", "--follow", "--json",
        *common(bus, nats_url), stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    assert proc.stdout is not None
    try:
        for _ in range(300):  # both its consumers exist (the shard's and the pod's own subject's)
            if (await bus.js.stream_info(bus.subjects.trace_stream)).state.consumer_count >= 2:
                break
            await asyncio.sleep(0.1)
        await publish_attempt(bus, name="live")
        await bus.publish(TRACE.to("team-a", "live"), old_release_event("live", Phase.BOUND, time.time()))
        seen: list[str] = []
        while len(seen) < 6:
            raw = await asyncio.wait_for(proc.stdout.readline(), 20)
            assert raw, "ksched trace ended early"
            seen.append(json.loads(raw)["phase"])
    finally:
        proc.terminate()
        await proc.wait()
    assert sorted(seen) == sorted(["bound", "queued", "popped", "filter", "assumed", "bound"])
