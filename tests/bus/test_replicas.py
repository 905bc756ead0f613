"""The replica count of streams and KV buckets (``--jetstream-replicas``) on a single real nats-server:
every creation carries the bus' setting, and a count one server cannot hold fails with an error that
names the setting. (Scaling in a real 3-server cluster: test_cluster_replicas.py.)"""

from __future__ import annotations

import argparse

import pytest

from ksched.bus.connect import Bus, connect
from ksched.bus.embedded import EmbeddedNats
from ksched.bus.jetstream import JetStreamReplicasError, TypedKV, ensure_stream, ensure_streams
from ksched.bus.messages import Heartbeat
from ksched.bus.streams import all_streams, trace_stream
from ksched.bus.subjects import Subjects
from ksched.service.options import add_common_arguments, common_options
from tests.fixtures.nats import BusFactory


async def test_streams_and_buckets_are_created_with_the_bus_replicas(bus: Bus) -> None:
    assert bus.jetstream_replicas == 1
    infos = await ensure_streams(bus)
    assert {i.config.name: i.config.num_replicas for i in infos} == dict.fromkeys(
        bus.subjects.stream_names, 1
    )
    kv = await TypedKV.open(bus, "health", Heartbeat)
    info = await bus.js.stream_info(f"KV_{kv.bucket}")
    assert info.config.num_replicas == 1


def test_builders_leave_the_count_to_the_bus_unless_given() -> None:
    subjects = Subjects("x")
    assert {c.num_replicas for c in all_streams(subjects)} == {None}
    assert {c.num_replicas for c in all_streams(subjects, replicas=3)} == {3}
    assert trace_stream(subjects, replicas=2).num_replicas == 2


async def test_more_replicas_than_servers_is_refused_naming_the_setting(
    nats_server: EmbeddedNats, bus_prefix: str, bus_factory: BusFactory
) -> None:
    await bus_factory()  # the fixture deletes this prefix's streams afterwards
    three = await connect(nats_server.url, name="r3", subjects=Subjects(bus_prefix), jetstream_replicas=3)
    try:
        assert three.jetstream_replicas == 3
        with pytest.raises(JetStreamReplicasError) as stream_err:
            await ensure_stream(three, trace_stream(three.subjects))
        message = str(stream_err.value)
        assert f"stream {three.subjects.trace_stream}" in message
        assert "refused 3 replica(s)" in message
        assert "KSCHED_JETSTREAM_REPLICAS" in message and "--jetstream-replicas" in message
        assert "non-clustered" in message  # the server's own reason
        with pytest.raises(
            JetStreamReplicasError, match=rf"KV_{bus_prefix}_health.*KSCHED_JETSTREAM_REPLICAS"
        ):
            await TypedKV.open(three, "health", Heartbeat)
        # an explicit count in the config wins over the bus' setting
        info = await ensure_stream(three, trace_stream(three.subjects, replicas=1))
        assert info.config.num_replicas == 1
        # and an existing stream cannot be scaled beyond one server either
        with pytest.raises(JetStreamReplicasError, match="KSCHED_JETSTREAM_REPLICAS"):
            await ensure_stream(three, trace_stream(three.subjects))
    finally:
        await three.close()


async def test_connect_refuses_an_impossible_count(nats_server: EmbeddedNats) -> None:
    for bad in (0, 6, -1):
        with pytest.raises(ValueError, match=r"KSCHED_JETSTREAM_REPLICAS.*1 to 5"):
            await connect(nats_server.url, name="bad", jetstream_replicas=bad)


def _parse(argv: list[str], env: dict[str, str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="ksched test")
    add_common_arguments(parser, 10000, env)
    return parser.parse_args(argv)


def test_option_flag_beats_environment_beats_default(capsys: pytest.CaptureFixture[str]) -> None:
    assert common_options(_parse([], {}), "binder").jetstream_replicas == 1
    assert common_options(_parse([], {"KSCHED_JETSTREAM_REPLICAS": "3"}), "binder").jetstream_replicas == 3
    flagged = _parse(["--jetstream-replicas", "5"], {"KSCHED_JETSTREAM_REPLICAS": "3"})
    assert common_options(flagged, "binder").jetstream_replicas == 5
    for bad_env in ("0", "three", "7"):
        with pytest.raises(SystemExit):
            _parse([], {"KSCHED_JETSTREAM_REPLICAS": bad_env})
        assert "KSCHED_JETSTREAM_REPLICAS" in capsys.readouterr().err
