"""A batch of cases: each played on the real scheduler, replayed through ``ksched simulate`` and
compared; a disagreement shrunk (objects taken away while it persists) and written as a regression
case."""

from __future__ import annotations

import asyncio
import copy
import json
import re
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from ksched.aio import cancel_and_wait
from ksched.config import ConfigError, parse_config
from ksched.differential.answers import GROUP_ENDS
from ksched.differential.compare import CHECKS, agrees, as_scheduled, compare
from ksched.differential.extender import plan
from ksched.differential.model import DECIDES, Case, Obj, claim_alias, config_document, key
from ksched.differential.replay import replay, replay_groups, replay_steps
from ksched.differential.store import read_cases, write_case
from ksched.differential.upstream import Played, Upstream, UpstreamError


@dataclass
class PodResult:
    golden: dict[str, Any]
    ours: dict[str, Any] | None
    checks: dict[str, bool]
    diffs: list[str]

    @property
    def agrees(self) -> bool:
        return agrees(self.checks)


@dataclass
class Result:
    """One case's outcome: its pods compared, or the error that kept it from being compared."""

    case: Case
    played: Played | None = None
    pods: list[PodResult] = field(default_factory=list)
    error: str | None = None
    stored: Path | None = None

    @property
    def disagrees(self) -> bool:
        return self.error is None and any(not p.agrees for p in self.pods)

    @property
    def failed(self) -> set[str]:
        """The checks some pod failed, as ``pod:check``."""
        return {f"{p.golden['pod']}:{c}" for p in self.pods for c in CHECKS if not p.checks.get(c, True)}

    def diff_lines(self) -> list[str]:
        return [f"{p.golden['pod']}: {d}" for p in self.pods if not p.agrees for d in p.diffs]


def judge(case: Case, played: Played) -> Result:
    """Replay ``played`` through ``ksched simulate`` and compare pod by pod (a ``gangs`` case: member
    by member in the order each side tried them, see :func:`_judge_group`)."""
    result = Result(case, played)
    try:
        if case.groups:
            return _judge_groups(result, replay_groups(played.objects, case.profile, played.answers))
        ours: dict[str, dict[str, Any]] | None
        if case.steps:
            ours = replay_steps(played.objects, played.steps, case.profile)
        else:
            ours = replay(played.objects, case.profile, played.answers)
        crash = None
    except Exception as exc:  # a crash of ksched is a disagreement, named
        ours, crash = None, f"ksched simulate failed: {type(exc).__name__}: {exc}"
    compared = tried_alone(played.steps) if case.steps else None
    for golden in played.answers:
        if compared is not None and golden["pod"] not in compared:
            continue  # never tried, or tried while another pod's retry changed the cluster
        if crash is not None:
            result.pods.append(PodResult(golden, None, dict.fromkeys(CHECKS, False), [crash]))
            continue
        entry = (ours or {}).get(golden["pod"])
        checks, diffs = compare(as_scheduled(golden), entry)
        result.pods.append(PodResult(golden, entry, checks, diffs))
    return result


def tried_alone(steps: list[Obj]) -> set[str]:
    """The pods of a ``sequences`` case whose first attempt no other pod's retry raced with."""
    return {s["pod"] for s in steps if s["op"] in DECIDES and s.get("racy") is False}


def _judge_groups(result: Result, ours: list[list[dict[str, Any]]]) -> Result:
    """A ``gangs`` case: see :func:`compare_members`."""
    answers = result.played.answers if result.played else []
    result.pods = compare_members(answers, ours)
    return result


def by_group(answers: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """The answers of a ``gangs`` case's members, one list per pod group (``podGroup``'s name), in
    their order."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for a in answers:
        groups.setdefault(a["podGroup"]["name"], []).append(a)
    return list(groups.values())


def compare_members(answers: list[dict[str, Any]], ours: list[list[dict[str, Any]]]) -> list[PodResult]:
    """The members of each pod group (``ours``: ksched's, one list per group in upstream's order of
    the groups, :func:`~ksched.differential.replay.replay_groups`), alike, compared by position:
    upstream's i-th tried member with ksched's i-th (which member comes first is not set upstream:
    equal priorities and no first attempt yet). Once the two sides put a member on different nodes (a
    tie), the group's later members meet different snapshots: only the group's condition (check
    ``g``) is compared for them. So once a member that fit while its group did not had tied top nodes:
    upstream assumed it on one of them for the rest of the cycle, and its log does not say which
    (seed 8904, case 28). A later group is replayed where upstream left the earlier ones, so a tie
    in one group leaves the next compared."""
    out: list[PodResult] = []
    for i, group in enumerate(by_group(answers)):
        mine = ours[i] if i < len(ours) else []
        diverged = False
        for j, golden in enumerate(group):
            entry = mine[j] if j < len(mine) else None
            want = as_scheduled(golden)
            checks, diffs = compare(want, entry)
            if diverged:
                checks = {c: c != "g" or checks[c] for c in CHECKS}
                diffs = [d for d in diffs if d.startswith("(g)")]
            elif entry is not None and entry.get("node") != want.get("node"):
                diverged = True
            elif not want.get("node") and len(want.get("top_nodes") or ()) > 1:
                diverged = True  # assumed on one of its tied top nodes, which the log does not name
            out.append(PodResult(golden, entry, checks, diffs))
    return out


async def play_and_judge(upstream: Upstream, case: Case) -> Result:
    try:
        played = await upstream.play(case)
    except UpstreamError as exc:
        return Result(case, error=str(exc))
    # ksched simulate in a thread: the loop goes on playing the case on the pipeline's cluster
    return await asyncio.to_thread(judge, case, played)


async def play_both(
    upstream: Upstream, pipeline: Upstream | None, case: Case
) -> tuple[Result, Played | UpstreamError | None]:
    """``case`` played on the real scheduler (and judged against ``ksched simulate``) and, at the same
    time, on ``pipeline``'s cluster (what it played, or the error that stopped it; None without a
    pipeline). Each cluster is the case's alone and the two share nothing but the harness's
    extenders, so neither waits for the other: a case takes the longer of the two, not their sum."""
    if pipeline is None:
        return await play_and_judge(upstream, case), None

    async def on_pipeline() -> Played | UpstreamError:
        try:
            return await pipeline.play(case)
        except UpstreamError as exc:
            return exc

    there = asyncio.ensure_future(on_pipeline())
    try:
        result = await play_and_judge(upstream, case)
        return result, await there
    finally:
        await cancel_and_wait(there)


def _outcome(golden: dict[str, Any]) -> str:
    """``->node``, ``~>node`` (nominated), or ``-`` (unschedulable); a ``sequences`` pod's first
    attempt, then where it ended when that differs (`` => node``, `` => gated``, `` => deleted``)."""
    first = _decided(golden)
    end = golden.get("final")
    if end is None:
        return first
    last = "deleted" if end.get("deleted") else "gated" if end.get("gated") else _decided(end).strip()
    return first if last == first.strip() else f"{first} => {last}"


def _decided(golden: dict[str, Any]) -> str:
    if golden.get("node"):
        return f"->{golden['node']}"
    if golden.get("nominated"):
        return f"~>{golden['nominated']}"
    return " -"


# --- shrinking ------------------------------------------------------------------------------------------
def _without(case: Case, drop: Obj) -> Case:
    """``case`` without ``drop`` (a node takes its bound pods along)."""
    out = copy.deepcopy(case)
    ident = (drop["kind"], key(drop))
    gone = {ident}
    if drop["kind"] == "Node":
        name = drop["metadata"]["name"]
        gone |= {
            ("Pod", key(o)) for o in case.objects if o["kind"] == "Pod" and o["spec"].get("nodeName") == name
        }
    out.objects = [o for o in out.objects if (o["kind"], key(o)) not in gone]
    out.preplaced = [o for o in out.preplaced if (o["kind"], key(o)) not in gone]
    out.pending = [o for o in out.pending if (o["kind"], key(o)) not in gone]
    out.steps = [s for s in out.steps if not _names(s) & gone]
    return out


def _names(step: Obj) -> set[tuple[str, str]]:
    """What a ``sequences`` step acts on (a node it adds is its own)."""
    out = {("Pod", step["pod"])} if "pod" in step else set()
    if isinstance(step.get("node"), str):
        out.add(("Node", step["node"]))
    return out


def _candidates(case: Case, keep_pod: str) -> list[Obj]:
    """What to try taking away, biggest first: other pending pods, nodes (never the last one: without
    nodes upstream decides nothing to compare), then single objects."""
    pending = [p for p in case.pending if key(p) != keep_pod]
    nodes = [o for o in case.objects if o["kind"] == "Node"]
    rest = [o for o in case.objects if o["kind"] != "Node"]
    return [*pending, *(nodes if len(nodes) > 1 else []), *case.preplaced, *rest]


def still_disagrees(tried: Result, keep_pod: str, needed: set[str]) -> bool:
    """Whether a smaller case keeps the disagreement being shrunk: ``keep_pod`` still fails every
    check in ``needed`` (``pod:check``, as :attr:`Result.failed`), and upstream decided it (placed it,
    or wrote why not: a case left with nothing to decide, such as no node at all, fails the checks
    for another reason)."""
    if not tried.disagrees or not needed <= tried.failed:
        return False
    golden = next((p.golden for p in tried.pods if p.golden["pod"] == keep_pod), None)
    return golden is not None and bool(golden.get("node") or golden.get("message"))


async def shrink(upstream: Upstream, result: Result, budget: int, say: Callable[[str], None]) -> Result:
    """Take objects away from a disagreeing case while the same checks still fail on the same pod
    (:func:`still_disagrees`; at most ``budget`` plays of the real scheduler); the smallest case found."""
    target = result.failed
    pods = {f.split(":", 1)[0] for f in target}
    keep_pod = sorted(pods)[0]
    needed = {f for f in target if f.split(":", 1)[0] == keep_pod}
    best = result
    plays = 0
    progress = True
    while progress and plays < budget:
        progress = False
        for drop in _candidates(best.case, keep_pod):
            if plays >= budget:
                break
            smaller = _without(best.case, drop)
            if not smaller.pending:
                continue
            plays += 1
            tried = await play_and_judge(upstream, smaller)
            if still_disagrees(tried, keep_pod, needed):
                say(f"    shrink: without {drop['kind']} {key(drop)}: still disagrees")
                best = tried
                progress = True
                break
    return best


# --- the batch ------------------------------------------------------------------------------------------
OUTCOMES = ("placed", "nominated", "unschedulable")


@dataclass
class Summary:
    cases: int = 0
    disagreements: int = 0
    errors: int = 0
    by_category: dict[str, dict[str, int]] = field(default_factory=dict)
    disagreeing: list[str] = field(default_factory=list)
    stored: list[str] = field(default_factory=list)
    error_cases: list[str] = field(default_factory=list)
    outcomes: dict[str, int] = field(default_factory=lambda: dict.fromkeys(OUTCOMES, 0))
    """How upstream decided the pods compared: placed, nominated (preemption) or unschedulable."""
    pipeline: dict[str, Any] = field(
        default_factory=lambda: {
            "cases": 0,
            "disagreements": 0,
            "errors": 0,
            "pods_not_compared": 0,
            "by_category": {},
            "disagreeing": [],
        }
    )
    """``--pipeline``: the same cases scheduled by ksched's whole pipeline on the real API server."""

    def add(self, result: Result) -> None:
        cat = self.by_category.setdefault(result.case.category, {"cases": 0, "disagreements": 0})
        if result.error is not None:
            self.errors += 1
            self.error_cases.append(f"{result.case.name}: {result.error}")
            return
        self.cases += 1
        cat["cases"] += 1
        for pod in result.pods:
            golden = pod.golden
            kind = (
                "placed"
                if golden.get("node")
                else "nominated"
                if golden.get("nominated")
                else "unschedulable"
            )
            self.outcomes[kind] += 1
        if result.disagrees:
            self.disagreements += 1
            cat["disagreements"] += 1
            self.disagreeing.append(result.case.name)

    def to_json(self) -> dict[str, Any]:
        return {
            "cases": self.cases,
            "disagreements": self.disagreements,
            "by_category": self.by_category,
            "errors": self.errors,
            "disagreeing": self.disagreeing,
            "stored": self.stored,
            "error_cases": self.error_cases,
            "pods": self.outcomes,
            **({"pipeline": self.pipeline} if self.pipeline["cases"] or self.pipeline["errors"] else {}),
        }


PIPELINE_CHECKS = ("a", "e", "f-pre", "f-full", "p", "q", "g")
"""What the API server shows of a decision: placed or not, where, the FailedScheduling text (the pod's
PodScheduled condition), the nomination and the victims, the claims' allocations (by
:func:`unnamed_claims`), a PodGroup's condition (no feasible set, no scores)."""


def unnamed_claims(answer: dict[str, Any]) -> dict[str, Any]:
    """``answer`` with its claims' allocations keyed by their order, not by the claims' names: a claim
    made from a template, or for extended resources, has a name each cluster draws."""
    if not answer.get("claims"):
        return answer
    allocations = sorted(answer["claims"].values(), key=lambda c: json.dumps(c, sort_keys=True))
    return {**answer, "claims": {str(i): c for i, c in enumerate(allocations)}}


def pair_members(golden: list[dict[str, Any]], seen: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``seen`` (a pod group's alike members, as the pipeline decided them) reordered to pair with
    ``golden`` (upstream's, in the order it tried them): each takes a member decided alike (the same
    node, or not placed with the same message) where there is one; which member is which has no
    answer upstream."""
    left = list(seen)
    out: list[dict[str, Any]] = []
    for want in golden:
        same = [
            g
            for g in left
            if (g.get("node"), g.get("node") or g.get("message"))
            == (want.get("node"), want.get("node") or want.get("message"))
        ]
        if not left:
            break
        pick = same[0] if same else left[0]
        left.remove(pick)
        out.append(pick)
    return out + left


def judge_pipeline(golden: list[dict[str, Any]], seen: list[dict[str, Any]]) -> tuple[list[str], int]:
    """(what differs, pods not compared) between the real scheduler's answers and what ksched's
    pipeline did with the same pods; once the pipeline put a pod elsewhere than upstream (a tie), the
    later pods meet another cluster and are not compared. A pod group whose members preempted is
    compared on where it ended (:func:`judge_group_ends`), not on its first cycle: its members are
    tried again within milliseconds (upstream's too: seed 4102, case 5, 20 ms), and the API server
    shows that retry's message, nomination and victims, not the first cycle's (cases 8, 57 and 62: a
    retry's ``not eligible due to a terminating pod``). A victim an
    earlier pod's preemption is deleting already is left out of upstream's victims: the pipeline's are
    read from ``Preempted`` events, and nothing deletes (or names) such a victim again (seed 8301,
    case 145). When every victim was, upstream started no asynchronous preemption and did not gate
    the pod, which any event may then try again at once: its PodScheduled message is not compared
    (extenders-s9412-674: upstream's own retry 5 ms later wrote ``not eligible due to a terminating pod
    on the nominated node``, and so did the pipeline's)."""
    if not any("podGroup" in g for g in golden):
        return _judge_pods(golden, seen)
    groups = by_group(golden)
    theirs = {g[0]["podGroup"]["name"]: g for g in by_group(seen)}
    diffs: list[str] = []
    for i, want in enumerate(groups):
        got = theirs.get(want[0]["podGroup"]["name"], [])
        if any(g.get("victims") or g.get("nominated") for g in want):
            done = groups[:i]
            before = (
                alike_members(done),
                alike_members([theirs.get(g[0]["podGroup"]["name"], []) for g in done]),
            )
            found = judge_group_ends(want, got, before)
            skipped = len(want) if found and preemption_race(want, got, before) else 0
            if skipped:
                found = []
        else:
            found, skipped = _judge_pods(want, pair_members(want, got))
        diffs += found
        if skipped or _nodes(want) != _nodes(got):  # a tie: the next group meets another cluster
            return diffs, skipped + sum(len(g) for g in groups[i + 1 :])
    return diffs, 0


def _nodes(answers: list[dict[str, Any]]) -> list[str]:
    """Where a pod group's members ended (their ``final`` state, else their first one): the nodes
    of those placed, as a multiset."""
    return sorted(n for n in ((a.get("final") or a).get("node") for a in answers) if n)


def _judge_pods(golden: list[dict[str, Any]], seen: list[dict[str, Any]]) -> tuple[list[str], int]:
    """:func:`judge_pipeline` pod by pod, ``seen`` paired with ``golden`` in order. A pod whose binding
    failed upstream by one of its bugs that ksched does not copy (``upstream_bug``, see
    :data:`~ksched.differential.answers.UPSTREAM_BUGS`) is not compared, nor are the pods after it
    (they meet it bound on one side only)."""
    diffs: list[str] = []
    deleting: set[str] = set()
    for i, (want, got) in enumerate(zip(golden, seen, strict=False)):
        if want.get("upstream_bug"):
            return diffs, len(golden) - i
        victims = want.get("victims") or []
        if deleting & set(victims):
            want = {**want, "victims": [v for v in victims if v not in deleting]}
        deleting.update(victims)
        checks, lines = compare(unnamed_claims(want), unnamed_claims(got))
        for check in PIPELINE_CHECKS:
            if check.startswith("f") and want.get("preemption_not_started"):
                continue  # what the API server shows may be a retry's message, on either side
            if not checks[check]:
                diffs += [
                    f"{want['pod']}: {line}"
                    for line in lines
                    if line.startswith(f"({check[0]})") and f"{want['pod']}: {line}" not in diffs
                ]
        if got.get("node") != want.get("node") or got.get("nominated") != want.get("nominated"):
            return diffs, len(golden) - i - 1
    return diffs, 0


def group_ends(answers: list[dict[str, Any]], alike: dict[str, str] | None = None) -> dict[str, Any]:
    """Where a pod group's members ended (their ``final`` states, alike members as a multiset): how
    many were placed, the others' nominations, the pods being deleted (the victims, which no kubelet
    ends; an earlier group's member by its name in ``alike``, :func:`alike_members`) and the group's
    ``PodGroupScheduled`` condition (waiting for preemption or not compared as one,
    :data:`PREEMPTION_WAIT`). Not the members' PodScheduled messages: the group is tried again while
    its victims terminate, as often as every few milliseconds or not at all, and each retry writes
    them from what the watch had brought by then (whether a member's own nomination was back: the
    ``not eligible due to a terminating pod on the nominated node`` part, or the filter part alone of
    a member that preempted again, gangs-s9412-1138; whether the others' were: ``1 Insufficient
    memory`` or not, gangs-s9602-20), on either side. ``ksched simulate`` compares the first cycle's."""
    finals = [a.get("final") or {} for a in answers]
    first = finals[0] if finals else {}
    terminating = first.get("terminating")
    condition = first.get("podGroup")
    if condition and condition.get("message") == PREEMPTION_WAIT[2]:
        condition = {**condition, "message": UNSCHEDULABLE_GROUP[2]}
    if condition and condition.get("status") == "True":
        condition = {**condition, "message": STALE_MESSAGE}
    return {
        "placed": sum(1 for f in finals if f.get("node")),
        "nominated": sorted(f.get("nominated") or "" for f in finals if not f.get("node")),
        "terminating": sorted((alike or {}).get(p, p) for p in terminating) if terminating else terminating,
        "podGroup": condition,
    }


PREEMPTION_WAIT = GROUP_ENDS["Pod group is waiting for preemption"]
UNSCHEDULABLE_GROUP = GROUP_ENDS["Unable to schedule a pod group"]
"""A pod group's condition where it ended: a retry cycle in which a member preempted again (it was
eligible: its nomination of the cycle before had not come back through the watch) writes the first,
one in which none did the second. Upstream's own retries write both (gangs-s9412-1138: 4 of the
first among 218 of the second); in gangs-s9602-20, played again, upstream's 1,515 cycles had the
first once, and the pipeline's group ended on it. They are compared as one."""


STALE_MESSAGE = "(not compared once True)"
"""The message of a pod group's condition that ended True, not compared: upstream may leave a later
cycle's there. ``updatePodGroupCondition`` diffs the condition it sets against the PodGroup its
lister holds and sends that difference as a strategic merge patch. When the group's retries come
milliseconds apart, a cycle that failed (``pod group is unschedulable``) after the one that placed a
member may still see the lister's ``False`` of an earlier cycle (``... waiting for preemption to
complete``): its never-regress check passes, and its patch carries the message alone, which the API
server merges into the ``True`` (gangs-s9519-73: ``True``, ``Scheduled``, ``pod group is
unschedulable``; the pipeline's informer and reporter read the group before they write, and left
``True``, ``Scheduled``, ``""``). Status and reason are compared."""


def alike_members(groups: list[list[dict[str, Any]]]) -> dict[str, str]:
    """The placed members of pod groups decided before (``groups``: one side's answers, by group), by
    what tells them apart on either side, their group and node: the members of a group are alike,
    and which went where has no answer (gangs-s9602-20: the second group's victims, members of the
    first, were p1, p2, p3 upstream and p2, p3, p4 through the pipeline, on the same nodes)."""
    return {
        a["pod"]: f"a member of {a['podGroup']['name']} on {node}"
        for group in groups
        for a in group
        if (node := (a.get("final") or a).get("node"))
    }


def held(answers: list[dict[str, Any]]) -> list[str]:
    """The node each member of a pod group holds where it ended, placed there or nominated to it
    (``""``: neither), as a multiset."""
    finals = [a.get("final") or {} for a in answers]
    return sorted(f.get("node") or f.get("nominated") or "" for f in finals)


def preemption_race(
    golden: list[dict[str, Any]],
    seen: list[dict[str, Any]],
    before: tuple[dict[str, str], dict[str, str]] = ({}, {}),
) -> bool:
    """Whether two ends of a preempting pod group (:func:`group_ends`) differ only as the race between
    its preemptions and its next cycle decides: as many members held on the same nodes, placed or
    nominated, with the same victims, but not as many placed (and the group's condition as follows).
    A member's preemption runs while the cycle that started it ends, and the group is tried again at
    once (its members pop from backoff while nothing else is active). Where the preemption is done
    by then (its victims being deleted), the retry takes in its preemptor, whose nomination then
    keeps no room (bare), and places the members that fit; where it is not, the preemptor stays
    gated (DefaultPreemption's PreEnqueue), the others preempt in turn and are gated in turn, and the
    group is not tried again until a victim is gone (no kubelet ends them here). Upstream's
    preemption is a goroutine started in PostFilter: two API calls made while the cycle goes on;
    the pipeline's starts once the cycle is over and the preemptor's status is written
    (gangs-s9503-1003: upstream's was done 8 ms before its cycle ended and placed one member; the
    pipeline's took 55 to 226 ms, and placed the member in one play of six).

    The race has a second pair of ends: as many placed, the same victims, but a member held on a
    node where another member's preemption is under way on one side, and held nowhere on the other
    (:func:`unheld_only`). Where the preemption is done before the retry, the retry takes its
    preemptor in, whose nomination then keeps no room, and another member preempts on that node too
    (its only victims being deleted already: no new one) and is nominated there; where it is not,
    the preemptor's nomination counts at its full priority, and that member finds no candidate
    (gangs-s9519-73: played on the real kube-scheduler with a validating webhook holding each
    victim's DELETE 400 ms, upstream's member ended nominated nowhere, as the pipeline's had in one
    play of eighteen; upstream's ended nominated there in every play without the webhook)."""
    want, got = group_ends(golden, before[0]), group_ends(seen, before[1])
    if want["terminating"] != got["terminating"] or not want["terminating"]:
        return False
    if want["placed"] != got["placed"]:
        return held(golden) == held(seen)
    return unheld_only(held(golden), held(seen))


def unheld_only(want: list[str], got: list[str]) -> bool:
    """Whether two pod groups' :func:`held` differ only by members held on a node on one side and
    nowhere (``""``) on the other, each such node held by another member on both sides."""
    a, b = Counter(want), Counter(got)
    both, extra = a & b, (a - b) + (b - a)
    unheld = extra.pop("", 0)
    return unheld > 0 and unheld == sum(extra.values()) and all(node in both for node in extra)


def judge_group_ends(
    golden: list[dict[str, Any]],
    seen: list[dict[str, Any]],
    before: tuple[dict[str, str], dict[str, str]] = ({}, {}),
) -> list[str]:
    """What differs between where a pod group whose members preempted ended on the real scheduler's
    cluster and on the pipeline's (check ``s``, :func:`group_ends`; ``before``: each side's
    :func:`alike_members`): its first cycle is not compared there, the API server shows the retries
    that follow within milliseconds (seed 4102, cases 5, 8, 57, 62)."""
    want, got = group_ends(golden, before[0]), group_ends(seen, before[1])
    return [
        f"pod group: (s) {part} at the end: upstream {want[part]!r}, ksched {got[part]!r}"
        for part in want
        if want[part] != got[part]
    ]


def judge_finals(golden: list[dict[str, Any]], seen: list[dict[str, Any]]) -> tuple[list[str], int]:
    """(what differs, pods not compared) between where each pod of a ``sequences`` case ended on the
    real scheduler's cluster and on the pipeline's (check ``s``: deleted, still gated, placed or not,
    the node, and for a pod left pending its PodScheduled message and nomination). A pod the pipeline
    put on another of upstream's top nodes (a tie) leaves the ends uncompared, every pod's: the
    cluster the others met differs from then on, and the answers are in the order of first attempts,
    not of the bindings (seed 8305, case 265: p1's tie changed p3's message, and p3 came first)."""
    theirs = {a["pod"]: a.get("final") or {} for a in seen}
    for want in golden:
        w, g = want.get("final") or {}, theirs.get(want["pod"]) or {}
        wn, gn = w.get("node"), g.get("node")
        if wn != gn and wn is not None and gn in (w.get("top_nodes") or []):
            return [], len(golden)
    diffs: list[str] = []
    for want in golden:
        pod, w, g = want["pod"], want.get("final") or {}, theirs.get(want["pod"]) or {}
        for flag in ("deleted", "gated"):
            if bool(w.get(flag)) != bool(g.get(flag)):
                diffs.append(f"{pod}: (s) {flag} at the end: upstream {w.get(flag)}, ksched {g.get(flag)}")
        wn, gn = w.get("node"), g.get("node")
        if wn != gn:
            diffs.append(f"{pod}: (s) node at the end: upstream {wn!r}, ksched {gn!r}")
        elif wn is None and not w.get("deleted"):
            for part in ("message", "nominated"):
                if w.get(part) != g.get(part):
                    diffs.append(
                        f"{pod}: (s) {part} at the end: upstream {w.get(part)!r}, ksched {g.get(part)!r}"
                    )
    return diffs, 0


def _state(objects: list[Obj]) -> dict[str, Any]:
    """What controllers and the scheduler made of a case's objects: claims and volumes bound, PDB
    counts, devices allocated, placed pods."""
    out: dict[str, Any] = {}
    for o in objects:
        kind, spec, status = o["kind"], o.get("spec") or {}, o.get("status") or {}
        name = f"{kind} {key(o)}"
        if kind == "PersistentVolumeClaim":
            out[name] = (spec.get("volumeName"), status.get("phase"))
        elif kind == "PersistentVolume":
            ref = spec.get("claimRef") or {}
            out[name] = (ref.get("namespace"), ref.get("name"), status.get("phase"))
        elif kind == "PodDisruptionBudget":
            out[name] = tuple(status.get(f) for f in ("disruptionsAllowed", "currentHealthy", "expectedPods"))
        elif kind == "ResourceClaim":
            results = ((status.get("allocation") or {}).get("devices") or {}).get("results") or []
            out[_claim_name(o)] = sorted(f"{r.get('pool')}/{r.get('device')}" for r in results)
        elif kind == "Pod" and spec.get("nodeName"):
            out[name] = spec["nodeName"]
    return out


POD_CLAIM_NAME = "resource.kubernetes.io/pod-claim-name"
"""The annotation by which the resourceclaim controller names a claim it made from a pod's template:
the pod's name for it (the claim's own name ends with a random suffix)."""


def _claim_name(claim: Obj) -> str:
    """How :func:`_state` names a ResourceClaim: ``ns/name``, for one made from a pod's template its
    pod and the pod's name for it, for one a scheduler made for a pod's extended resources its
    :func:`claim_alias` (equal on two clusters)."""
    meta = claim["metadata"]
    pods = [r["name"] for r in meta.get("ownerReferences") or [] if r.get("kind") == "Pod"]
    made = (meta.get("annotations") or {}).get(POD_CLAIM_NAME)
    if made and pods:
        return f"ResourceClaim {meta['namespace']}/{pods[0]} {made}"
    return f"ResourceClaim {claim_alias(key(claim))}"


def state_differences(ours: list[Obj], theirs: list[Obj]) -> list[str]:
    """Where the two clusters' objects of one case differ (see :func:`_state`)."""
    a, b = _state(ours), _state(theirs)
    return [f"{k}: {a.get(k)} vs {b.get(k)}" for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)]


def _pipeline(
    case: Case, played: Played, there: Played | UpstreamError, summary: Summary, say: Callable[[str], None]
) -> None:
    """Compare what the pipeline's cluster showed (``there``) with upstream's ``played``."""
    stats = summary.pipeline
    cat = stats["by_category"].setdefault(case.category, {"cases": 0, "disagreements": 0})
    if isinstance(there, UpstreamError):
        stats["errors"] += 1
        say(f"    pipeline: not compared: {there}")
        return
    differ = state_differences(played.objects, there.objects)
    if differ:  # the controllers of the two clusters did not do the same: nothing to compare
        stats["errors"] += 1
        say(f"    pipeline: not compared: the two clusters differ: {'; '.join(differ[:3])}")
        return
    seen = there.answers
    late = unplanned_timeout(case.pending, seen) or unplanned_timeout(case.pending, played.answers)
    if late:  # the harness's extender was too slow, on a loaded machine: no decision to compare
        stats["errors"] += 1
        say(f"    pipeline: not compared: {late}")
        return
    if case.steps:
        alone = tried_alone(played.steps) & tried_alone(there.steps)
        diffs, skipped = judge_pipeline(
            [a for a in played.answers if a["pod"] in alone], [a for a in seen if a["pod"] in alone]
        )
        if not skipped:  # the first attempts went alike: the pods' ends are comparable
            more, skipped = judge_finals(played.answers, seen)
            diffs += more
    else:
        diffs, skipped = judge_pipeline(played.answers, seen)
    stats["cases"] += 1
    cat["cases"] += 1
    stats["pods_not_compared"] += skipped
    placed = ", ".join(f"{a['pod']}{_outcome(a)}" for a in seen)
    unsaid = f"; {skipped} pod(s) not compared" if skipped else ""
    say(f"    pipeline: {'DISAGREES' if diffs else 'agrees'} ({placed}){unsaid}")
    if diffs:
        stats["disagreements"] += 1
        cat["disagreements"] += 1
        stats["disagreeing"].append(case.name)
        for line in diffs:
            say(f"    pipeline: {line}")


TIMED_OUT = re.compile(r'Post "https?://[^"]*/([a-z]+)/([a-z]+)": context deadline exceeded')
"""A call to one of the harness's extenders that timed out (Go's text, which ksched writes too): the
extender's name and verb."""


def unplanned_timeout(pods: list[Obj], answers: list[dict[str, Any]]) -> str | None:
    """A call to one of the harness's extenders that timed out although the pod's plan has no ``slow``
    for that verb, as one of ``answers`` (a side's answers for ``pods``, the case's pending pods)
    says: the server, a thread of this process, was not given the CPU in time (spread-s9524-170,
    its ``g`` filter answered after ksched's 5 s with the machine at load 21). None when every
    timeout was planned."""
    by_key = {key(p): p for p in pods}
    for a in answers:
        for message in (a.get("message"), (a.get("final") or {}).get("message")):
            for name, verb in TIMED_OUT.findall(message or ""):
                if verb not in (plan(by_key.get(a["pod"], {}), name).get("slow") or ()):
                    return f"{a['pod']}: the harness's extender {name} did not answer {verb} in time"
    return None


def refused_profiles(cases: list[Case]) -> list[Result]:
    """The cases whose profile ksched refuses (the generator's bug, or a validation of ksched's that
    upstream lacks): not played, as the real scheduler would not start with an invalid profile."""
    out = []
    for case in cases:
        if case.profile is None:
            continue
        try:
            parse_config(yaml.safe_dump(config_document([case.profile])))
        except ConfigError as exc:
            out.append(Result(case, error=f"ksched refuses its profile: {exc}"))
    return out


def signature(result: Result) -> tuple[str, frozenset[str]]:
    """What tells two disagreements apart well enough not to store both: the category and the
    failed checks (pod names aside)."""
    return result.case.category, frozenset(f.split(":", 1)[1] for f in result.failed)


async def run_cases(
    upstream: Upstream,
    cases: list[Case],
    say: Callable[[str], None],
    store: Path | None = None,
    shrink_budget: int = 30,
    deadline: float | None = None,
    summary: Summary | None = None,
    verbose: bool = False,
    pipeline: Upstream | None = None,
    gangs: Upstream | None = None,
    gang_pipeline: Upstream | None = None,
    stop: asyncio.Event | None = None,
) -> Summary:
    """Play every case (until ``deadline``, a ``time.monotonic()`` value, or ``stop`` is set), shrink
    and store each new kind of disagreement in ``store``; with ``pipeline``, play it there too and
    compare. ``gangs`` plays the ``gangs`` cases (a cluster with the gang gates on), ``gang_pipeline``
    their pipeline (none: not compared there)."""
    summary = summary if summary is not None else Summary()
    # one regression case per kind of disagreement: none for a kind an open stored case has already
    kinds = {c.signature for c in read_cases(store) if c.is_open} if store is not None else set()
    for i, case in enumerate(cases):
        if deadline is not None and time.monotonic() > deadline:
            say(f"time budget spent after {i} of {len(cases)} cases")
            break
        if stop is not None and stop.is_set():
            say(f"stopped after {i} of {len(cases)} cases")
            break
        started = time.monotonic()
        cluster = gangs if case.gang else upstream
        piped = gang_pipeline if case.gang else pipeline
        there: Played | UpstreamError | None = None
        if cluster is None:
            result = Result(case, error="no cluster with the gang gates for a gangs case")
        else:
            result, there = await play_both(cluster, piped, case)
        summary.add(result)
        took = time.monotonic() - started
        if result.error is not None:
            say(f"[{i + 1}/{len(cases)}] {case.name}: not compared: {result.error} ({took:.1f} s)")
            continue
        verdict = "DISAGREES" if result.disagrees else "agrees"
        placed = ", ".join(f"{p.golden['pod']}{_outcome(p.golden)}" for p in result.pods)
        say(f"[{i + 1}/{len(cases)}] {case.name}: {verdict} ({placed}; {took:.1f} s)")
        if verbose:
            for pod in result.pods:
                if pod.golden.get("message"):
                    say(f"    {pod.golden['pod']}: {pod.golden['message']}")
        if there is not None and result.played is not None:
            _pipeline(case, result.played, there, summary, say)
        if not result.disagrees:
            continue
        for line in result.diff_lines():
            say(f"    {line}")
        if store is None or signature(result) in kinds:
            continue
        kinds.add(signature(result))
        assert cluster is not None
        small = await shrink(cluster, result, shrink_budget, say) if shrink_budget else result
        assert small.played is not None
        path = write_case(
            store,
            case.name,
            small.played.objects,
            case.profile,
            small.played.answers,
            small.diff_lines(),
            sorted(signature(result)[1]),
            {"category": case.category, "seed": case.seed, "index": case.index},
            small.played.steps,
        )
        summary.stored.append(str(path))
        say(f"    stored {path}")
    return summary
