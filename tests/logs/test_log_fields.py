"""Log lines carry the pod being handled (ksched.logcontext) in both formats, explicit ``extra=``
wins, and nothing leaks from one pod to the next (sequentially, across tasks, after an error)."""

from __future__ import annotations

import asyncio
import io
import json
import logging
import sys

import pytest

from ksched import logcontext
from ksched.logcontext import bind, node_logging, pod_logging, set_node, unbind
from ksched.service.logs import ContextFilter, JsonFormatter, TextFormatter, setup_logging


class Capture:
    """A logger whose handler has the service's filter and a formatter, writing to a buffer."""

    def __init__(self, formatter: logging.Formatter, service: str = "scheduler") -> None:
        self.buffer = io.StringIO()
        handler = logging.StreamHandler(self.buffer)
        handler.setFormatter(formatter)
        handler.addFilter(ContextFilter(service))
        self.logger = logging.getLogger(f"test.logs.{id(self)}")
        self.logger.handlers[:] = [handler]
        self.logger.propagate = False
        self.logger.setLevel(logging.DEBUG)

    def lines(self) -> list[str]:
        return self.buffer.getvalue().splitlines()

    def docs(self) -> list[dict[str, object]]:
        return [json.loads(line) for line in self.lines()]


@pytest.fixture
def json_log() -> Capture:
    return Capture(JsonFormatter())


@pytest.fixture
def text_log() -> Capture:
    return Capture(TextFormatter("%(levelname)s %(name)s: %(message)s"))


def test_json_line_has_the_bound_fields_and_the_service(json_log: Capture) -> None:
    with pod_logging("default/web-1", profile="default-scheduler", trace_id="5f2a9c0e11d04b7a"):
        set_node("node-3")
        json_log.logger.info("bound %s", "web-1")
    [doc] = json_log.docs()
    assert doc["msg"] == "bound web-1"
    assert doc["level"] == "info"
    assert doc["pod"] == "default/web-1"
    assert doc["node"] == "node-3"
    assert doc["profile"] == "default-scheduler"
    assert doc["trace_id"] == "5f2a9c0e11d04b7a"
    assert doc["service"] == "scheduler"


def test_json_line_leaves_unknown_fields_out(json_log: Capture) -> None:
    json_log.logger.warning("no pod here")
    with pod_logging("default/web-1"):
        json_log.logger.warning("no node yet")
    outside, inside = json_log.docs()
    assert {"pod", "node", "profile", "trace_id"}.isdisjoint(outside)
    assert outside["service"] == "scheduler"
    assert inside["pod"] == "default/web-1"
    assert {"node", "profile", "trace_id"}.isdisjoint(inside)


def test_text_line_appends_the_known_fields(text_log: Capture) -> None:
    with pod_logging("kube-system/dns-0", "n1", "default-scheduler", "abc123"):
        text_log.logger.info("binding failed")
    text_log.logger.info("idle")
    bound, idle = text_log.lines()
    assert bound.endswith(
        "binding failed pod=kube-system/dns-0 node=n1 profile=default-scheduler trace_id=abc123"
    )
    assert idle.endswith("idle")
    assert "service=" not in bound  # the text format names the service itself


def test_text_line_quotes_a_value_with_spaces(text_log: Capture) -> None:
    text_log.logger.info("x", extra={"profile": "my profile"})
    assert text_log.lines()[0].endswith('x profile="my profile"')


def test_text_traceback_comes_after_the_fields(text_log: Capture) -> None:
    with pod_logging("default/a"):
        try:
            raise ValueError("boom")
        except ValueError:
            text_log.logger.exception("failed")
    first, *rest = text_log.lines()
    assert first.endswith("failed pod=default/a")
    assert rest[-1] == "ValueError: boom"


def test_json_exception_is_kept(json_log: Capture) -> None:
    with pod_logging("default/a"):
        try:
            raise ValueError("boom")
        except ValueError:
            json_log.logger.exception("failed")
    [doc] = json_log.docs()
    assert doc["pod"] == "default/a"
    assert "ValueError: boom" in str(doc["exc"])


def test_explicit_extra_wins_over_the_context(json_log: Capture) -> None:
    with pod_logging("default/preemptor", node="n1", trace_id="t-1"):
        json_log.logger.info("victim deleted", extra={"pod": "default/victim", "service": "other"})
    [doc] = json_log.docs()
    assert doc["pod"] == "default/victim"
    assert doc["service"] == "other"
    assert doc["node"] == "n1"  # not given explicitly: from the context
    assert doc["trace_id"] == "t-1"


def test_nothing_leaks_from_one_pod_to_the_next(json_log: Capture) -> None:
    for name, node in (("a", "n1"), ("b", "")):
        token = bind(f"default/{name}", profile="p", trace_id=f"t-{name}")
        try:
            if node:
                set_node(node)
            json_log.logger.info("handled")
        finally:
            unbind(token)
    json_log.logger.info("between pods")
    a, b, after = json_log.docs()
    assert (a["pod"], a["node"], a["trace_id"]) == ("default/a", "n1", "t-a")
    assert (b["pod"], b["trace_id"]) == ("default/b", "t-b")
    assert "node" not in b  # a's node was undone with a's binding
    assert "pod" not in after
    assert logcontext.current() is None


def test_an_error_inside_the_block_still_unbinds() -> None:
    with pytest.raises(RuntimeError), pod_logging("default/a", node="n1"):
        raise RuntimeError("cycle failed")
    assert logcontext.current() is None


def test_nested_binding_restores_the_outer_pod() -> None:
    with pod_logging("default/outer", trace_id="t-outer"):
        with pod_logging("default/inner"):
            assert logcontext.current() == ("default/inner", "", "", "")
        assert logcontext.current() == ("default/outer", "", "", "t-outer")


def test_set_node_outside_a_pod_does_nothing() -> None:
    set_node("n1")
    assert logcontext.current() is None


def test_node_logging_names_the_node_for_the_block_only() -> None:
    """The preemption runner names the nominated node for the task it starts."""
    with pod_logging("default/preemptor", profile="p", trace_id="t"):
        with node_logging("n-nominated"):
            assert logcontext.current() == ("default/preemptor", "n-nominated", "p", "t")
        assert logcontext.current() == ("default/preemptor", "", "p", "t")
    with node_logging("n1"):
        assert logcontext.current() is None


async def test_concurrent_workers_each_log_their_own_pod(json_log: Capture) -> None:
    """Like the binder's workers: each handles pods one after another, interleaved with the others."""
    inbox: asyncio.Queue[str] = asyncio.Queue()
    for i in range(6):
        inbox.put_nowait(f"pod-{i}")

    async def worker(index: int) -> None:
        while not inbox.empty():
            name = inbox.get_nowait()
            with pod_logging(f"default/{name}", node=f"node-{name}", trace_id=f"trace-{name}"):
                await asyncio.sleep(0.001 * (index + 1))
                json_log.logger.info("bound %s", name)
            json_log.logger.info("idle")

    await asyncio.gather(*(worker(i) for i in range(3)))
    docs = json_log.docs()
    bound = [d for d in docs if str(d["msg"]).startswith("bound")]
    assert len(bound) == 6
    for doc in bound:
        name = str(doc["msg"]).removeprefix("bound ")
        assert (doc["pod"], doc["node"], doc["trace_id"]) == (
            f"default/{name}",
            f"node-{name}",
            f"trace-{name}",
        )
    assert all("pod" not in d for d in docs if d["msg"] == "idle")


async def test_a_task_spawned_for_the_pod_keeps_its_fields(json_log: Capture) -> None:
    """The scheduler's assume task is created inside the cycle's binding and outlives it."""
    release = asyncio.Event()

    async def assume() -> None:
        await release.wait()
        json_log.logger.info("assume rejected")

    with pod_logging("default/a", node="n1", trace_id="t-a"):
        task = asyncio.create_task(assume())
    with pod_logging("default/b", trace_id="t-b"):
        release.set()
        await task
    [doc] = json_log.docs()
    assert (doc["pod"], doc["node"], doc["trace_id"]) == ("default/a", "n1", "t-a")


@pytest.mark.usefixtures("restore_root_logger")
@pytest.mark.parametrize("fmt", ["json", "text"])
def test_setup_logging_installs_the_filter(fmt: str, capsys: pytest.CaptureFixture[str]) -> None:
    setup_logging("binder", fmt, "debug")
    [handler] = logging.getLogger().handlers
    assert isinstance(handler, logging.StreamHandler) and handler.stream is sys.stderr
    with pod_logging("default/web-1", node="n2", profile="default-scheduler", trace_id="t-9"):
        logging.getLogger("ksched_binder.service").debug("bound")
    line = capsys.readouterr().err.strip()
    if fmt == "json":
        doc = json.loads(line)
        assert doc["service"] == "binder"
        assert (doc["pod"], doc["node"], doc["profile"], doc["trace_id"]) == (
            "default/web-1",
            "n2",
            "default-scheduler",
            "t-9",
        )
    else:
        assert " binder DEBUG ksched_binder.service: bound pod=default/web-1 node=n2 " in line
        assert line.endswith("profile=default-scheduler trace_id=t-9")
