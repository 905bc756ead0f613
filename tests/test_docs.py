"""The docs describe what exists: metric names, ``ksched`` command lines and option tables, and
``KSCHED_*`` variables in README.md and docs/*.md are checked against the code (no services run)."""

from __future__ import annotations

import argparse
import importlib
import itertools
import re
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NoReturn

import pytest
from prometheus_client import REGISTRY

from ksched.api.lifecycle import QUEUED, PodLifecycle
from ksched.cli import SUBCOMMANDS

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
METRIC_DOCS = [ROOT / "README.md", ROOT / "docs" / "metrics.md"]
SERVICE_MODULES = (
    "ksched_informer.service",
    "ksched_queue.service",
    "ksched_scheduler.service",
    "ksched_binder.service",
)
METRIC_NAME = re.compile(r"`((?:scheduler|ksched|leader_election)_[a-z_]+)")
#: docs whose option tables (a row's first cell naming ``--flags``) document these commands' options
OPTION_TABLES = {
    "kubesim.md": ("kubesim",),
    "queue.md": ("queue",),
    "tracing.md": ("trace",),
    "ui.md": ("ui",),
    "ha.md": ("informer", "queue"),
    "differential.md": ("differential",),
}
BENCH_WITHOUT_OPTIONS = {"all"}
"""``ksched bench all`` parses nothing (and runs for minutes): it is checked by name only."""


# --- metrics --------------------------------------------------------------------------------------


def registered_metric_names() -> set[str]:
    """Names every service registers, as scraped (counters with ``_total``)."""
    for module in SERVICE_MODULES:
        importlib.import_module(module)
    from ksched.metrics.framework_metrics import PLUGIN_EVALUATIONS  # registered on first use

    names: set[str] = set()
    for family in itertools.chain(REGISTRY.collect(), PLUGIN_EVALUATIONS.describe()):
        names.add(family.name + "_total" if family.type == "counter" else family.name)
    return {n for n in names if n.startswith(("scheduler_", "ksched_", "leader_election_"))}


def documented_metric_names(paths: list[Path]) -> set[str]:
    return {name for path in paths for name in METRIC_NAME.findall(path.read_text())}


def test_documented_metrics_are_registered() -> None:
    missing = documented_metric_names(METRIC_DOCS) - registered_metric_names()
    assert not missing, f"documented in README.md / docs/metrics.md but registered by no service: {missing}"


def test_registered_metrics_are_documented() -> None:
    undocumented = registered_metric_names() - documented_metric_names([ROOT / "docs" / "metrics.md"])
    assert not undocumented, f"exported but missing from docs/metrics.md: {sorted(undocumented)}"


def test_metric_check_catches_a_wrong_name(tmp_path: Path) -> None:
    doc = tmp_path / "metrics.md"
    doc.write_text("| `scheduler_schedule_attempts_total` | `scheduler_schedule_atempts_total` |\n")
    assert documented_metric_names([doc]) - registered_metric_names() == {"scheduler_schedule_atempts_total"}


# --- command lines and options --------------------------------------------------------------------


class _Captured(Exception):
    def __init__(self, parser: argparse.ArgumentParser) -> None:
        self.parser = parser


def _capture(self: argparse.ArgumentParser, *args: Any, **kwargs: Any) -> NoReturn:
    raise _Captured(self)


def option_strings(command: str, sub: str | None, monkeypatch: pytest.MonkeyPatch) -> set[str]:
    """The options of ``ksched command [sub]``: its ``main`` is called and stopped at ``parse_args``."""
    if command == "bench" and sub in BENCH_WITHOUT_OPTIONS:
        return set()
    module_name, _, func_name = SUBCOMMANDS[command][0].partition(":")
    main = getattr(importlib.import_module(module_name), func_name)
    with monkeypatch.context() as patch:
        patch.setattr(argparse.ArgumentParser, "parse_args", _capture)
        try:
            main([sub] if sub else [])
        except _Captured as captured:
            return {s for action in captured.parser._actions for s in action.option_strings}
    raise AssertionError(f"ksched {command} {sub or ''} parsed no arguments")


def _expand(flag: str) -> list[str]:
    """``--a-{b,c}`` -> ``--a-b``, ``--a-c``."""
    m = re.fullmatch(r"(.*)\{([^}]*)\}(.*)", flag)
    return [m.group(1) + alt + m.group(3) for alt in m.group(2).split(",")] if m else [flag]


FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*(?:\{[^}]*\})?\*?")


def flags_in(text: str) -> list[str]:
    return [f for token in FLAG.findall(text) for f in _expand(token)]


def code_texts(text: str) -> Iterator[str]:
    """Fenced and indented code lines (continuations joined), then inline code spans."""
    prose: list[str] = []
    fenced = False
    for line in text.replace("\\\n", " ").splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
        elif fenced or line.startswith("    "):
            yield line
        else:
            prose.append(line)
    yield from re.findall(r"`([^`]+)`", "\n".join(prose))


COMMAND = re.compile(r"(?:^|(?<=[\s/]))ksched ([a-z]+(?:-[a-z]+)*(?: ?\| ?[a-z]+)*)([^#]*)")


def documented_commands() -> Iterator[tuple[str, str, str | None, list[str]]]:
    """(where, command, bench subcommand, flags) for every ``ksched <command> ...`` in the docs; a word
    that is no command counts only where a code line or span starts with ``ksched``."""
    for path in DOCS:
        for code in code_texts(path.read_text()):
            for m in COMMAND.finditer(code):
                rest = m.group(2)
                leading = code[: m.start()].strip() in ("", "$", ".venv/bin/")
                for command in re.split(r" ?\| ?", m.group(1)):
                    if command not in SUBCOMMANDS and not leading:
                        continue  # prose inside code ("... in ksched yet")
                    subs: list[str | None] = [None]
                    if command == "bench":
                        sub = re.match(r" ([a-z0-9]+(?:\|[a-z0-9]+)*)", rest)
                        subs = list(sub.group(1).split("|")) if sub else [None]
                    for s in subs:
                        yield f"{path.name}: {m.group(0).strip()}", command, s, flags_in(rest)


def documented_option_tables() -> Iterator[tuple[str, str, list[str]]]:
    for name, commands in OPTION_TABLES.items():
        for line in (ROOT / "docs" / name).read_text().splitlines():
            cells = line.split("|")
            flags = flags_in(cells[1]) if line.startswith("|") and len(cells) > 2 else []
            for command in commands if flags else ():
                yield f"{name}: {cells[1].strip()}", command, flags


def _known(flag: str, options: set[str]) -> bool:
    if flag.endswith("*"):
        return any(o.startswith(flag[:-1]) for o in options)
    return flag in options


def test_documented_command_lines_parse(monkeypatch: pytest.MonkeyPatch) -> None:
    found = list(documented_commands())
    assert len(found) > 20, "the command-line scan found almost nothing: is the pattern broken?"
    problems: list[str] = []
    for where, command, sub, flags in found:
        if command not in SUBCOMMANDS:
            problems.append(f"{where}: no command `ksched {command}`")
            continue
        if command == "bench" and sub is not None:
            from ksched.bench.cli import COMMANDS

            if sub not in COMMANDS:
                problems.append(f"{where}: no command `ksched bench {sub}`")
                continue
        if flags:
            options = option_strings(command, sub, monkeypatch)
            problems += [f"{where}: `ksched {command}` has no {f}" for f in flags if not _known(f, options)]
    assert not problems, "\n".join(problems)


def test_documented_option_tables_parse(monkeypatch: pytest.MonkeyPatch) -> None:
    rows = list(documented_option_tables())
    assert len(rows) > 15
    options = {c: option_strings(c, None, monkeypatch) for cs in OPTION_TABLES.values() for c in cs}
    problems = [
        f"{where}: `ksched {command}` has no {f}"
        for where, command, flags in rows
        for f in flags
        if not _known(f, options[command])
    ]
    assert not problems, "\n".join(problems)


def test_flag_check_catches_a_wrong_flag(monkeypatch: pytest.MonkeyPatch) -> None:
    options = option_strings("queue", None, monkeypatch)
    assert flags_in("ksched queue --lease-duration 30s --leader-elect-{lease-duration,retry-period}") == [
        "--lease-duration",
        "--leader-elect-lease-duration",
        "--leader-elect-retry-period",
    ]
    assert all(_known(f, options) for f in ["--lease-duration", "--nats-tls-*"])
    assert not _known("--lease-durations", options)
    assert not _known("--nats-tsl-*", options)


# --- environment ----------------------------------------------------------------------------------


def test_documented_environment_variables_are_read() -> None:
    """Named in full somewhere in the code, or by its suffix in a module that reads ``_env(..., "X")``."""
    files = [
        p.read_text()
        for p in itertools.chain(
            (ROOT / "shared").rglob("*.py"),
            (ROOT / "services").rglob("*.py"),
            (ROOT / "tests").rglob("*.py"),
            [ROOT / "docker-compose.yml"],
        )
        if p.resolve() != Path(__file__).resolve()
    ]
    sources = "\n".join(files)
    env_readers = "\n".join(text for text in files if "_env(" in text)
    documented = {v for path in DOCS for v in re.findall(r"KSCHED_[A-Z0-9_]*[A-Z0-9]", path.read_text())}
    unread = {
        v for v in documented if v not in sources and f'"{v.removeprefix("KSCHED_")}"' not in env_readers
    }
    assert not unread, f"documented but read nowhere: {sorted(unread)}"


# --- the package layers ---------------------------------------------------------------------------


def documented_layers(text: str) -> list[str]:
    """The layer line of docs/architecture.md (an indented ``cli ─ ... ─ ...`` block), top first."""
    found = re.search(r"\n\n {4}(cli ─.*?)\n\n", text, re.DOTALL)
    assert found, "docs/architecture.md has no layer line"
    return [" ".join(layer.split()) for layer in " ".join(found.group(1).split()).split("─")]


def test_architecture_shows_the_import_linter_layers() -> None:
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    [layers] = [c["layers"] for c in contracts if c["type"] == "layers"]
    assert documented_layers((ROOT / "docs" / "architecture.md").read_text()) == [
        " ".join(layer.split()) for layer in layers
    ]


# --- the pod's state machine ----------------------------------------------------------------------

STATE_NAME = re.compile(r"\b[A-Z][A-Z_]{2,}\b")


def drawn_states(text: str) -> tuple[set[str], set[str]]:
    """(every state the drawing names, the states it lists as QUEUED), from the code block of
    docs/architecture.md's "The pod's state machine"."""
    section = text.split("## The pod's state machine", 1)[1]
    drawing = section.split("```", 2)[1]
    queued = re.search(r"QUEUED = ([A-Z_| ]+)", drawing)
    assert queued, "the drawing does not say which states QUEUED is"
    return set(STATE_NAME.findall(drawing)), set(STATE_NAME.findall(queued.group(1)))


def lifecycle_mismatches(names: set[str], queued: set[str]) -> list[str]:
    problems = [
        f"drawn but not a PodLifecycle member: {n}"
        for n in sorted(names - {*PodLifecycle.__members__, "QUEUED"})
    ]
    problems += [
        f"a PodLifecycle member the drawing lacks: {n}" for n in sorted(set(PodLifecycle.__members__) - names)
    ]
    if queued != {s.name for s in QUEUED}:
        problems.append(
            f"QUEUED drawn as {sorted(queued)}, lifecycle.QUEUED is {sorted(s.name for s in QUEUED)}"
        )
    return problems


def test_the_state_machine_draws_the_lifecycle_enum() -> None:
    names, queued = drawn_states((ROOT / "docs" / "architecture.md").read_text())
    assert lifecycle_mismatches(names, queued) == []


def test_the_state_machine_check_catches_a_state_the_enum_lacks() -> None:
    text = (ROOT / "docs" / "architecture.md").read_text()
    names, queued = drawn_states(text.replace("IN_FLIGHT (", "POPPED (").replace("| GATED (", "("))
    assert lifecycle_mismatches(names, queued) == [
        "drawn but not a PodLifecycle member: POPPED",
        "a PodLifecycle member the drawing lacks: GATED",
        "a PodLifecycle member the drawing lacks: IN_FLIGHT",
        "QUEUED drawn as ['ACTIVE', 'BACKOFF', 'UNSCHEDULABLE'], lifecycle.QUEUED is "
        "['ACTIVE', 'BACKOFF', 'GATED', 'UNSCHEDULABLE']",
    ]


FIDELITY_CLAIM = re.compile(r"\ball (\d+) (?:recorded scenarios|agree)")
"""How README and CONTRIBUTING state the agreement of ``make fidelity``: "all N ..."."""


def fidelity_claims(text: str) -> list[int]:
    return [int(n) for n in FIDELITY_CLAIM.findall(text)]


def test_readme_and_contributing_state_the_same_fidelity_figure() -> None:
    """The figure README and CONTRIBUTING give for the recorded scenarios is one, and it is the
    number of scenarios in ../shared/fidelity-public when that folder is here."""
    readme = fidelity_claims((ROOT / "README.md").read_text())
    contributing = fidelity_claims((ROOT / "CONTRIBUTING.md").read_text())
    assert readme and contributing, "README and CONTRIBUTING each state the fidelity figure"
    assert set(readme) == set(contributing) and len(set(readme)) == 1, (readme, contributing)
    scenarios = ROOT.parent / "shared" / "fidelity-public"
    if scenarios.is_dir():
        assert readme[0] == len(list(scenarios.glob("*.expected.json")))


def test_the_fidelity_figure_check_reads_both_forms() -> None:
    assert fidelity_claims("agrees on all 80 recorded scenarios; (all 72 agree)") == [80, 72]


# --- links ----------------------------------------------------------------------------------------

LINKED_DOCS = [*DOCS, ROOT / "CONTRIBUTING.md", ROOT / "CHANGELOG.md"]
LINK = re.compile(r"\]\(([^)\s]+)\)")


def heading_anchors(text: str) -> set[str]:
    """The anchors GitHub gives a document's headings: lower case, punctuation but ``-`` and ``_``
    dropped, spaces as ``-``; a repeated one numbered ``-1``, ``-2`` ... (fenced code is no heading)."""
    found: set[str] = set()
    seen: dict[str, int] = {}
    fenced = False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        heading = re.match(r"#{1,6} (.*)", line)
        if heading and not fenced:
            slug = re.sub(r"[^\w\- ]", "", heading.group(1).strip().lower()).replace(" ", "-")
            n = seen.get(slug, 0)
            seen[slug] = n + 1
            found.add(slug if n == 0 else f"{slug}-{n}")
    return found


def broken_links(path: Path, text: str) -> list[str]:
    """Relative links of ``text`` (the file ``path``) whose file or heading anchor does not exist."""
    problems: list[str] = []
    for target in LINK.findall(text):
        if re.match(r"[a-z]+:", target):
            continue  # http:, https:, mailto:
        file, _, anchor = target.partition("#")
        dest = (path.parent / file) if file else path
        if not dest.exists():
            problems.append(f"{path.name}: {target}: no such file")
        elif anchor and dest.suffix == ".md" and anchor not in heading_anchors(dest.read_text()):
            problems.append(f"{path.name}: {target}: no such heading")
    return problems


def test_relative_links_and_their_anchors_resolve() -> None:
    problems = [p for path in LINKED_DOCS for p in broken_links(path, path.read_text())]
    assert not problems, "\n".join(problems)


def test_the_link_check_catches_a_missing_file_and_heading() -> None:
    doc = ROOT / "docs" / "benchmarks.md"
    assert "end-to-end-ksched-bench-e2e" in heading_anchors(doc.read_text())
    headings = "# A b\n## A b\n```\n# not a heading\n```\n### `x` (y, z)"
    assert heading_anchors(headings) == {"a-b", "a-b-1", "x-y-z"}
    text = "[a](benchmarks-history.md) [b](nowhere.md) [c](#end-to-end-ksched-bench-e2e) [d](#no-such)"
    text += " [e](https://example.com/#anything)"
    assert broken_links(doc, text) == [
        "benchmarks.md: nowhere.md: no such file",
        "benchmarks.md: #no-such: no such heading",
    ]


# --- streams: who publishes -----------------------------------------------------------------------

PLACEMENT_PUBLISH = re.compile(r"publish\w*\(\s*(?:self\.bus,\s*)?PLACEMENTS\b")
"""A call publishing to the placements' work queue (``endpoints.PLACEMENTS``)."""


def subject_table(text: str) -> dict[str, str]:
    """docs/bus.md's table of subjects: subject → producer cell."""
    rows: dict[str, str] = {}
    for line in text.splitlines():
        if line.startswith("| `P."):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            rows[cells[0].split("`")[1]] = cells[1]
    return rows


def _covers(subject: str, row: str) -> bool:
    return row == subject or (subject.endswith(">") and row.startswith(subject[:-1]))


def _earlier(producer: str) -> bool:
    return "earlier releases" in producer or "releases before" in producer


def producer_mismatches(rows: dict[str, str], descriptions: dict[str, tuple[list[str], str]]) -> list[str]:
    """Stream subjects whose current rows (earlier releases' aside) do not start with the producer the
    stream's description names, or that no current row documents. ``descriptions``: stream name →
    (its subjects, its description ``"... (producer -> consumers)"``)."""
    out = []
    for stream, (subjects, description) in descriptions.items():
        producer = description.rsplit("(", 1)[1].split(" -> ", 1)[0]
        current = [s for s in rows if any(_covers(subj, s) for subj in subjects) and not _earlier(rows[s])]
        if not current:
            out.append(f"{stream}: no row of {subjects}")
        out += [
            f"{stream}: {s} is produced by {rows[s]!r}" for s in current if not rows[s].startswith(producer)
        ]
    return out


def test_streams_and_the_subject_table_name_the_same_producers() -> None:
    """Each stream's description (ksched.bus.streams) names the producer docs/bus.md's table gives its
    subjects, and the placements' producer there is the one service whose code publishes them."""
    from ksched.bus.streams import all_streams
    from ksched.bus.subjects import Subjects

    rows = subject_table((ROOT / "docs" / "bus.md").read_text())
    streams = {c.name or "": (c.subjects or [], c.description or "") for c in all_streams(Subjects("P"))}
    assert producer_mismatches(rows, streams) == []
    publishers = {
        path.relative_to(ROOT).parts[1]
        for path in ROOT.glob("services/*/ksched_*/**/*.py")
        if PLACEMENT_PUBLISH.search(path.read_text())
    }
    assert publishers == {"informer"}
    assert rows["P.binder.placement"].startswith("informer/")


def test_the_producer_check_catches_another_producer() -> None:
    rows = {
        "P.binder.placement": "informer/cache",
        "P.feed.batch": "informer/cache",
        "P.feed.event.x": "informers of earlier releases",
    }
    wrong = {"placements": (["P.binder.placement"], "placements (scheduler -> binders)")}
    assert producer_mismatches(rows, wrong) == [
        "placements: P.binder.placement is produced by 'informer/cache'"
    ]
    assert producer_mismatches(rows, {"feed": (["P.feed.>"], "feed (informer/cache -> queue)")}) == []
    undocumented = {"trace": (["P.trace.>"], "t (every service -> trace)")}
    assert producer_mismatches(rows, undocumented) == ["trace: no row of ['P.trace.>']"]
