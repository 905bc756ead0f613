"""The informer's reflector against kubesim over HTTP: list, watch, resume and relist on 410."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from ksched_informer.reflector import DELETED, Reflector
from ksched_kubesim import KubeSim

from ksched.aio import cancel_and_wait
from ksched.api.collections import Collection
from ksched.api.core import Pod
from ksched.api.kinds import lookup
from ksched.client.rest import Client, watch_lines
from tests.fixtures.kubesim import client_for, fast_config
from tests.polling import until

PODS = Collection(lookup("", "Pod"))


def pod(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"containers": [{"name": "c", "image": "pause"}]},
    }


@pytest.fixture
async def small_sim(tmp_path: Path) -> AsyncIterator[tuple[KubeSim, Client]]:
    sim = KubeSim(fast_config(history_size=5))
    await sim.start()
    kubeconfig = sim.write_kubeconfig(tmp_path / "kubeconfig")
    api = await client_for(kubeconfig)
    try:
        yield sim, api
    finally:
        await api.close()
        await sim.stop()


class Mirror:
    """What a consumer of the reflector holds: name -> pod."""

    def __init__(self) -> None:
        self.pods: dict[str, Pod] = {}
        self.lists = 0
        self.changed = asyncio.Event()

    async def on_list(self, items: list[Pod]) -> None:
        self.lists += 1
        self.pods = {p.metadata.name: p for p in items}
        self.changed.set()

    async def on_event(self, kind: str, obj: Pod) -> None:
        if kind == DELETED:
            self.pods.pop(obj.metadata.name, None)
        else:
            self.pods[obj.metadata.name] = obj
        self.changed.set()


async def test_list_then_watch_sees_every_change(small_sim: tuple[KubeSim, Client]) -> None:
    sim, api = small_sim
    for i in range(3):
        sim.create(pod(f"before-{i}"))
    mirror = Mirror()
    reflector = Reflector(api, PODS, mirror.on_list, mirror.on_event, page_size=2)
    task = asyncio.create_task(reflector.run())
    try:
        await asyncio.wait_for(reflector.synced.wait(), 5)
        assert sorted(mirror.pods) == ["before-0", "before-1", "before-2"]
        sim.create(pod("after"))
        sim.delete("Pod", "before-0", "default", grace_period=0)
        await until(lambda: "after" in mirror.pods and "before-0" not in mirror.pods)
    finally:
        task.cancel()


async def test_relists_when_resource_version_is_too_old(small_sim: tuple[KubeSim, Client]) -> None:
    sim, api = small_sim
    mirror = Mirror()
    reflector = Reflector(api, PODS, mirror.on_list, mirror.on_event)
    task = asyncio.create_task(reflector.run())
    await asyncio.wait_for(reflector.synced.wait(), 5)
    with contextlib.suppress(Exception):
        await cancel_and_wait(task)
    for i in range(10):  # more changes than kubesim's history keeps
        sim.create(pod(f"burst-{i}"))
    task = asyncio.create_task(reflector.run())
    try:
        await until(lambda: len(mirror.pods) == 10)
        assert mirror.lists == 2
    finally:
        task.cancel()


@pytest.mark.parametrize("cut", [1, 3, 7, 64, 10_000])
async def test_watch_lines_are_whole_however_the_stream_is_cut(cut: int) -> None:
    events = [b'{"type":"ADDED","object":{"n":%d}}' % i for i in range(20)]
    stream = b"\n".join(events[:10]) + b"\n\n" + b"\n".join(events[10:]) + b"\n"

    async def chunks() -> AsyncIterator[bytes]:
        for start in range(0, len(stream), cut):
            yield stream[start : start + cut]

    assert [line async for line in watch_lines(chunks())] == events


async def test_each_kind_of_watch_line_is_handled_as_its_type_says() -> None:
    """Object events decode in one pass; bookmarks move the resourceVersion only; an ERROR's Status
    is read (410: relist); an object that does not decode is an error, not an empty pod."""
    from ksched_informer.reflector import Gone

    from ksched.api.base import DECODE_ERRORS
    from ksched.api.collections import PODS

    seen: list[tuple[str, Any]] = []

    async def on_event(kind: str, obj: Any) -> None:
        seen.append((kind, obj))

    async def on_list(items: list[Any]) -> None:
        pass

    r = Reflector(None, PODS, on_list, on_event)  # type: ignore[arg-type]
    await r._handle(
        b'{"type":"ADDED","object":{"kind":"Pod","metadata":{"name":"p","namespace":"d","uid":"u",'
        b'"resourceVersion":"7","managedFields":[{"manager":"m"}]},"spec":{"containers":[{"name":"c"}]}}}'
    )
    assert [(k, o.metadata.name, o.metadata.uid) for k, o in seen] == [("ADDED", "p", "u")]
    assert isinstance(seen[0][1], Pod) and r.resource_version == "7"
    await r._handle(b'{"type":"BOOKMARK","object":{"kind":"Pod","metadata":{"resourceVersion":"9"}}}')
    assert len(seen) == 1 and r.resource_version == "9"
    with pytest.raises(Gone):
        await r._handle(
            b'{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","metadata":{},'
            b'"status":"Failure","message":"too old resource version","reason":"Expired","code":410}}'
        )
    with pytest.raises(RuntimeError, match="500 InternalError: boom"):
        await r._handle(
            b'{"type":"ERROR","object":{"kind":"Status","status":"Failure","message":"boom",'
            b'"reason":"InternalError","code":500}}'
        )
    with pytest.raises(DECODE_ERRORS):
        await r._handle(b'{"type":"MODIFIED","object":{"metadata":{"name":7}}}')
    assert len(seen) == 1 and r.resource_version == "9"


async def test_an_optional_resource_refused_or_not_served_is_empty_said_once(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A 403 (a grant kube-scheduler's role lacks) or 404 (an API not served) of an optional resource
    syncs as empty with one line each time the answer changes; once listed, its items arrive."""
    from ksched_informer import reflector
    from ksched_informer.reflector import NotServed

    from ksched.client.pager import ListError

    optional = Collection(lookup("", "Pod"), optional=True)
    answers: list[int] = [403, 403, 404, 200]
    listed: list[list[Any]] = []

    async def list_all(api: Any, collection: Collection, struct: Any, page: int) -> tuple[list[Any], str]:
        status = answers.pop(0)
        if status != 200:
            raise ListError(collection, status, b"{}")
        return ["p"], "5"

    async def on_list(items: list[Any]) -> None:
        listed.append(items)

    monkeypatch.setattr(reflector, "list_all", list_all)
    r = Reflector(None, optional, on_list, on_list)  # type: ignore[arg-type]
    caplog.set_level("INFO", logger=reflector.__name__)
    for _ in range(3):
        with pytest.raises(NotServed):
            await r._list()
        assert r.synced.is_set()
    await r._list()
    assert listed == [[], [], [], ["p"]] and r.resource_version == "5"
    lines = [(rec.levelname, rec.getMessage()) for rec in caplog.records]
    assert [level for level, _ in lines] == ["WARNING", "INFO", "INFO"], lines
    assert "forbidden" in lines[0][1] and "/api/v1/pods" in lines[0][1]
    assert "not served" in lines[1][1] and "listed now" in lines[2][1]


async def test_a_required_resource_refused_is_an_error_not_an_empty_list(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from ksched_informer import reflector

    from ksched.client.pager import ListError

    async def list_all(api: Any, collection: Collection, struct: Any, page: int) -> tuple[list[Any], str]:
        raise ListError(collection, 403, b"{}")

    async def on_list(items: list[Any]) -> None:
        raise AssertionError("listed")

    monkeypatch.setattr(reflector, "list_all", list_all)
    r = Reflector(None, PODS, on_list, on_list)  # type: ignore[arg-type]
    with pytest.raises(ListError):
        await r._list()
    assert not r.synced.is_set()


async def test_nulls_the_real_api_server_writes_for_empty_lists_decode(
    kube136_client: Client, kube136: Any
) -> None:
    """The real API server writes ``null`` for an empty list without ``omitempty`` (``drivers`` of a
    CSINode without CSI drivers, every kubelet's node without one; ``topologyKeys`` of a driver): the
    list and the watch take it as absent (found by ``ksched differential --pipeline``)."""
    from ksched.api.collections import OBJECTS

    csi_nodes = next(c for c in OBJECTS if c.kind == "CSINode")

    names: dict[str, list[Any]] = {
        "reflector-null-a": [],
        "reflector-null-b": [{"name": "csi.example.com", "nodeID": "b"}],
    }

    async def create(name: str) -> None:
        body = {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "CSINode",
            "metadata": {"name": name},
            "spec": {"drivers": names[name]},
        }
        status, answer = await kube136_client.request("POST", "/apis/storage.k8s.io/v1/csinodes", body)
        assert status == 201, answer

    seen: dict[str, Any] = {}

    async def on_list(items: list[Any]) -> None:
        seen.update({o.metadata.name: o for o in items})

    async def on_event(kind: str, obj: Any) -> None:
        seen[obj.metadata.name] = obj

    await create("reflector-null-a")
    reflector = Reflector(kube136_client, csi_nodes, on_list, on_event)
    task = asyncio.create_task(reflector.run())
    try:
        await asyncio.wait_for(reflector.synced.wait(), 10)
        assert seen["reflector-null-a"].spec.drivers == []
        await create("reflector-null-b")
        await until(lambda: "reflector-null-b" in seen)
        assert seen["reflector-null-b"].spec.drivers[0].topology_keys == []
    finally:
        task.cancel()
        for name in names:
            await kube136_client.request("DELETE", f"/apis/storage.k8s.io/v1/csinodes/{name}")
