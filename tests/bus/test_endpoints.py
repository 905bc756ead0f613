"""Each subject is bound to its message types in one place (``ksched.bus.endpoints``), which
docs/bus.md's table of subjects lists row for row, and which the type checker and the bus enforce."""

from __future__ import annotations

import inspect
import re
import textwrap
from pathlib import Path
from typing import Any

import pytest
from mypy import api as mypy_api

from ksched.bus import endpoints
from ksched.bus.connect import Bus
from ksched.bus.endpoints import PublishFamily, RequestEndpoint, RequestFamily
from ksched.bus.messages import ALL_MESSAGE_TYPES, Ack, PopRequest
from ksched.bus.subjects import Subjects
from tests.bus.samples import REQUEST_REPLY_PAIRS, sample
from tests.bus.testing import AnyEndpoint, declared_endpoints, declared_wildcards

ROOT = Path(__file__).resolve().parents[2]
MESSAGE_NAMES = {t.__name__ for t in ALL_MESSAGE_TYPES}

ROWS_WITHOUT_ENDPOINT = {
    "health": "no service publishes heartbeats yet: the subject is reserved (and allowed to every user)",
    "inbox_prefix": "replies and bootstrap chunks go to the inbox a request names (its request endpoint's)",
}
"""Rows of the table that name no endpoint, and why."""


def table_rows(text: str) -> dict[str, tuple[list[str], str]]:
    """``Subjects`` member -> (message type names of the row, in order; its delivery cell), from
    the table of subjects in docs/bus.md."""
    section = text.split("## Subjects", 1)[1].split("\n## ", 1)[0]
    rows: dict[str, tuple[list[str], str]] = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 5 or not cells[0].startswith("`"):
            continue
        member = re.search(r"\(`(\w+)", cells[0])
        assert member, f"docs/bus.md: a subject row names no Subjects member: {line}"
        names = [n for n in re.findall(r"`(\w+)`", cells[3]) if n in MESSAGE_NAMES]
        rows[member.group(1)] = (names, cells[4])
    return rows


def documented(endpoint: AnyEndpoint) -> tuple[list[str], str]:
    """What the table's message column must name for ``endpoint``, and the kind of delivery."""
    if isinstance(endpoint, RequestEndpoint | RequestFamily):
        return [endpoint.request.__name__, endpoint.reply.__name__], "request/reply"
    return [t.__name__ for t in endpoint.types], ""


def mismatches(rows: dict[str, tuple[list[str], str]], declared: dict[str, AnyEndpoint]) -> list[str]:
    problems = []
    for name in sorted(set(rows) - set(declared) - set(ROWS_WITHOUT_ENDPOINT)):
        problems.append(f"docs/bus.md has {name}, ksched.bus.endpoints has no endpoint for it")
    for name in sorted(set(declared) - set(rows)):
        problems.append(f"ksched.bus.endpoints has {name}, docs/bus.md's table does not")
    for name in sorted(set(rows) & set(declared)):
        types, delivery = documented(declared[name])
        names, cell = rows[name]
        if delivery:  # the request first, the reply last (chunks may come between)
            listed = names[:1] + names[-1:]
            if not cell.startswith(delivery):
                problems.append(f"{name}: a request endpoint, docs/bus.md says {cell!r}")
        else:
            listed = names
            if cell.startswith("request/reply"):
                problems.append(f"{name}: a publish endpoint, docs/bus.md says {cell!r}")
        if listed != types:
            problems.append(f"{name}: docs/bus.md says {listed}, ksched.bus.endpoints {types}")
    return problems


def test_the_table_of_subjects_lists_exactly_the_endpoints() -> None:
    rows = table_rows((ROOT / "docs" / "bus.md").read_text())
    assert set(ROWS_WITHOUT_ENDPOINT) <= set(rows)
    assert mismatches(rows, declared_endpoints()) == []


def test_the_table_check_catches_a_missing_row_a_missing_endpoint_and_wrong_types() -> None:
    rows = table_rows((ROOT / "docs" / "bus.md").read_text())
    declared = declared_endpoints()
    del rows["queue_pop"]
    rows["queue_steal"] = (["PopRequest", "PopReply"], "request/reply")
    rows["forget"] = (["ForgetRequest", "AssumeReply"], "request/reply")
    rows["placements"] = (["Placement", "PlacementBatch"], "request/reply")
    assert mismatches(rows, declared) == [
        "docs/bus.md has queue_steal, ksched.bus.endpoints has no endpoint for it",
        "ksched.bus.endpoints has queue_pop, docs/bus.md's table does not",
        "forget: docs/bus.md says ['ForgetRequest', 'AssumeReply'], "
        "ksched.bus.endpoints ['ForgetRequest', 'Ack']",
        "placements: a publish endpoint, docs/bus.md says 'request/reply'",
    ]


def concrete(endpoint: AnyEndpoint) -> RequestEndpoint[Any, Any] | Any:
    """``endpoint``, or a member of its family (every free part ``x.y``)."""
    if isinstance(endpoint, RequestFamily | PublishFamily):
        arity = len(inspect.signature(endpoint.build).parameters) - 1
        return endpoint.to(*["x.y"] * arity)
    return endpoint


NUMBERED = {"trace_shard": "=shard"}
"""Families whose free part is a number (a shard), and the fixed token before it."""


@pytest.mark.parametrize("name", sorted(declared_endpoints()))
def test_each_endpoint_is_its_subjects_member_with_its_kind(name: str) -> None:
    subjects = Subjects("inst.a")
    if name in NUMBERED:
        subject = declared_endpoints()[name].to(3).subject(subjects)  # type: ignore[union-attr]
        assert subject == getattr(subjects, name)(3)
        family, token, number = subject.removeprefix("inst.a.").rsplit(".", 2)
        assert (token, number) == (NUMBERED[name], "3") and declared_endpoints()[name].kind == family
        return
    endpoint = concrete(declared_endpoints()[name])
    subject = endpoint.subject(subjects)
    member = getattr(subjects, name)
    assert subject == (member(*["x.y"] * subject.count("x=2Ey")) if callable(member) else member)
    family = [t for t in subject.removeprefix("inst.a.").split(".") if t != "x=2Ey"]
    assert endpoint.kind == ".".join(family)  # the metric label names the family, never a pod


def test_wildcards_cover_declared_endpoints_of_their_types() -> None:
    subjects = Subjects()
    published = {
        t
        for e in declared_endpoints().values()
        if not isinstance(e, RequestEndpoint | RequestFamily)
        for t in e.types
    }
    for wildcard in declared_wildcards():
        assert set(wildcard.types) <= published, wildcard.name
        assert wildcard.subject(subjects) == getattr(subjects, wildcard.name)


def test_the_request_reply_samples_are_the_endpoints_pairs() -> None:
    pairs = {
        (e.request, e.reply)
        for e in declared_endpoints().values()
        if isinstance(e, RequestEndpoint | RequestFamily)
    }
    assert pairs == set(REQUEST_REPLY_PAIRS)


async def test_the_bus_refuses_a_message_of_another_type(bus: Bus) -> None:
    """What mypy refuses in typed code, the bus refuses at run time (before anything is sent)."""
    with pytest.raises(TypeError, match="queue_pop: Ack is not PopRequest"):
        await bus.request(endpoints.QUEUE_POP, Ack())  # type: ignore[misc]
    with pytest.raises(TypeError, match="placements: PopRequest is not Placement"):
        await bus.publish(endpoints.PLACEMENTS, sample(PopRequest))  # type: ignore[misc]
    with pytest.raises(TypeError, match="queue_pop: Ack is not PopReply"):
        await bus.reply(endpoints.QUEUE_POP, bus.nc.new_inbox(), Ack())  # type: ignore[misc]


MISUSE = textwrap.dedent(
    """
    from nats.aio.msg import Msg

    from ksched.bus import endpoints
    from ksched.bus.connect import Bus
    from ksched.bus.messages import Ack, AssumeReply, PopReply, PopRequest


    async def misuse(bus: Bus, pop: PopRequest) -> None:
        await bus.request(endpoints.QUEUE_POP, Ack())
        reply: AssumeReply = await bus.request(endpoints.QUEUE_POP, pop)
        await bus.publish(endpoints.PLACEMENTS, pop)
        await bus.publish(endpoints.QUEUE_DONE, pop)
        await bus.request(endpoints.UNRESERVE.to(1, 2), Ack())

        async def answers_ack(msg: PopRequest, raw: Msg) -> Ack:
            return Ack()

        await bus.subscribe(endpoints.QUEUE_POP, answers_ack)


    async def use(bus: Bus, pop: PopRequest) -> PopReply:
        return await bus.request(endpoints.QUEUE_POP, pop)
    """
)


def test_mypy_refuses_the_wrong_type_on_an_endpoint(tmp_path: Path) -> None:
    source = tmp_path / "misuse.py"
    source.write_text(MISUSE)
    out, err, _ = mypy_api.run(
        ["--strict", "--no-error-summary", "--cache-dir", str(ROOT / ".mypy_cache"), str(source)]
    )
    lines = sorted({int(m.group(1)) for m in re.finditer(r"misuse\.py:(\d+): error", out)})
    first = MISUSE.splitlines().index("async def misuse(bus: Bus, pop: PopRequest) -> None:") + 1
    assert lines == [first + n for n in (1, 2, 3, 4, 5, 10)], out + err
