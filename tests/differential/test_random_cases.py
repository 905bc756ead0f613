"""``ksched differential`` within a CI budget: random cases played on the real kube-scheduler 1.36.2
(``../shared/kube-1.36``) and replayed through ``ksched simulate``; any disagreement fails.

Two seeds share one cluster: :data:`FIXED_SEED` (the same cases on every run of a commit: one per
category, the ``sequences`` one, timed events, through the pipeline as well) and a rotating one (the
day's number, or ``$KSCHED_DIFFERENTIAL_SEED``; no ``sequences`` cases, 10-15 s each); ``gangs``
cases play on a third cluster, with the gang gates on. The rotating cases are first played with
``--pipeline`` (each also on a second cluster scheduled by ksched's whole pipeline, ``ksched
kube-scheduler``, started beside the first): :data:`PIPELINE_CASES` of them, and more until
:data:`PIPELINE_BUDGET` seconds have passed; then without it until every category has had a case and
:data:`BUDGET` seconds have passed. A loaded machine plays fewer cases, never fewer categories. A
failure names the command that plays the case again. The first case is played once more at the end,
on the cluster every other case has used, and must be decided as it was on the fresh cluster: reusing
the cluster leaks no state into later cases. The pipeline's first ``ksched kube-scheduler`` exits at
once, so every run also starts the drop-in again on its cluster, as the harness does for one not ready
in time; three fixed cases of their own (:func:`two_preemptions`, :func:`binds_by_extender`,
:func:`foreign_victim`) go through both sides.
"""

from __future__ import annotations

import asyncio
import datetime
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from ksched.differential.extender import ANNOTATION, BINDER, binder_ignorable, resource
from ksched.differential.generate import CATEGORIES, GPU_DRIVER, Gen, device_slice, generate_cases
from ksched.differential.model import Case
from ksched.differential.pipeline import Pipeline
from ksched.differential.run import Summary, refused_profiles, run_cases
from ksched.differential.upstream import Upstream
from tests.fixtures.kube136 import kube_folder

FIXED_SEED = 40
SEED_ENV = "KSCHED_DIFFERENTIAL_SEED"
BUDGET = 10.0
"""Seconds of rotating cases replayed through ``ksched simulate`` alone (the clusters' start, 5-15 s,
comes on top)."""
PIPELINE_BUDGET = 15.0
"""Seconds of rotating cases also played on the pipeline's cluster (``--pipeline``)."""
PIPELINE_CASES = 3
"""Rotating cases played on the pipeline's cluster however long they take (on a loaded machine)."""
ROTATING_CASES = 64


def rotating_seed() -> int:
    return int(os.environ.get(SEED_ENV) or datetime.date.today().toordinal())


def two_preemptions() -> Case:
    """Two pods that each preempt a pod of their own node: the second one's victims are its own only,
    though the first one's victim is still being deleted then (no kubelet ends it; seed 8202, case 134
    found the pipeline's cluster crediting the second pod with both)."""
    g = Gen("preemption", 0, 900)
    nodes = [g.node("2", "4Gi"), g.node("2", "4Gi")]
    for i, node in enumerate(nodes):
        low = g.pod(f"b{i}", [g.container("c", {"cpu": "1500m"})], "team-a", priorityClassName="low")
        g.bind(low, node)
    for i, node in enumerate(nodes):
        only = {"kubernetes.io/hostname": node["metadata"]["name"]}
        high = g.pod(f"p{i}", [g.container("c", {"cpu": "1"})], "team-b", priorityClassName="high")
        g.pending(high)["spec"]["nodeSelector"] = only
    return g.finish()


def binds_by_extender() -> Case:
    """Three pods of the harness's binder extender: one it binds, one whose binding it answers with an
    error, one with HTTP 500. Upstream logs the last two's scores, then ``Failed to bind pod`` and
    the error, its PodScheduled message; ``ksched simulate`` is compared on the scheduling cycle,
    the pipeline on the message."""
    g = Gen("extenders", 0, 901)
    for _ in range(2):
        g.node("4", "8Gi")
    plans: tuple[dict[str, str], ...] = (
        {},
        {"error": "ext-f: binding quota exhausted"},
        {"refuse": "ext-f: binding backend unavailable"},
    )
    wanted = {resource(BINDER): "1"}
    for j, plan in enumerate(plans):
        container = g.container("c")
        container["resources"] = {"requests": {"cpu": "100m", **wanted}, "limits": wanted}
        pod = g.pod(f"p{j}", [container])
        pod["metadata"]["annotations"] = {ANNOTATION: json.dumps({BINDER: {"bind": plan} if plan else {}})}
        g.pending(pod)
    return g.finish()


def foreign_victim() -> Case:
    """A pod of priority ``high`` that preempts on either of two nodes, each full with a low pod,
    whose extender ``a`` (not ignorable) adds n1's low pod to n0's victims: upstream's preemption
    fails with ``extender: URL claims to preempt pod (UID: &{UID}) on node: …, but the pod is not
    found on that node``, the pod's UID left out of the comparison (each cluster has its own)."""
    g = Gen("extenders", 0, 902)
    nodes = [g.node("2", "4Gi", extra={resource("a"): "4"}) for _ in range(2)]
    low = [
        g.pod(f"b{i}", [g.container("c", {"cpu": "1500m"})], "team-a", priorityClassName="low")
        for i in range(2)
    ]
    for pod, node in zip(low, nodes, strict=True):
        g.bind(pod, node)
    wanted = {resource("a"): "1"}
    container = g.container("c")
    container["resources"] = {"requests": {"cpu": "1", **wanted}, "limits": wanted}
    pod = g.pod("p0", [container], "team-b", priorityClassName="high")
    n0, b1 = nodes[0]["metadata"]["name"], f"team-a/{low[1]['metadata']['name']}"
    pod["metadata"]["annotations"] = {ANNOTATION: json.dumps({"a": {"preempt": {"add": {n0: [b1]}}}})}
    g.pending(pod)
    return g.finish()


def extended_by_dra() -> Case:
    """A pod asking for ``example.com/gpu``, which a DeviceClass backs and no node offers, and for a
    claim made from a ResourceClaimTemplate: the scheduler creates the claim for its extended resource
    in PreBind (the pipeline's binder once sent it with a patch's media type, which the real API
    server refused: no such pod was bound), and the resourceclaim controller makes the other."""
    g = Gen("dra", 0, 903)
    nodes = [g.node("4", "8Gi") for _ in range(2)]
    gpu = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": "c903-gpu"},
        "spec": {
            "selectors": [{"cel": {"expression": f'device.driver == "{GPU_DRIVER}"'}}],
            "extendedResourceName": "example.com/gpu",
        },
    }
    node = nodes[1]["metadata"]["name"]
    devices = [{"name": f"gpu-{i}", "attributes": {"index": {"int": i}}} for i in range(2)]
    slices = device_slice(node, node, 1, devices=devices)
    request = {"name": "gpu", "exactly": {"deviceClassName": "c903-gpu", "count": 1}}
    template = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": "c903-tmpl", "namespace": "team-a"},
        "spec": {"spec": {"devices": {"requests": [request]}}},
    }
    wanted = {"example.com/gpu": "1"}
    container = g.container("c")
    container["resources"] = {
        "requests": {"cpu": "1", **wanted},
        "limits": wanted,
        "claims": [{"name": "t0"}],
    }
    claims = [{"name": "t0", "resourceClaimTemplateName": "c903-tmpl"}]
    g.pending(g.pod("p0", [container], "team-a", resourceClaims=claims))
    return g.finish([gpu, slices, template])


class RestartedPipeline(Pipeline):
    """The pipeline's cluster, whose first ``ksched kube-scheduler`` exits at once: the harness starts
    it again on the same cluster, as a kubelet would (the retry once stopped the whole cluster)."""

    launches = 0

    async def _launch(self, config: Path) -> None:
        self.launches += 1
        if self.launches > 1:
            await super()._launch(config)
            return
        self._config = config
        self.process = await asyncio.create_subprocess_exec(sys.executable, "-c", "raise SystemExit(3)")


def same_answer(first: dict[str, Any], again: dict[str, Any]) -> list[str]:
    """What differs between two answers of the real scheduler for the same pod (a tie may go either way)."""
    out = [
        f"{field}: {first.get(field)!r} then {again.get(field)!r}"
        for field in ("feasible", "scores", "totals", "message", "nominated", "victims")
        if first.get(field) != again.get(field)
    ]
    if first["node"] != again["node"] and again["node"] not in first["top_nodes"]:
        out.append(f"node: {first['node']!r} then {again['node']!r}")
    return out


@pytest.mark.timeout(BUDGET + PIPELINE_BUDGET + 400)  # the minimum is played however loaded the machine
def test_random_cases_agree_with_the_real_scheduler(tmp_path: Path) -> None:
    kube = kube_folder()
    seed = rotating_seed()
    fixed = generate_cases(len(CATEGORIES), FIXED_SEED)
    rotating = [c for c in generate_cases(ROTATING_CASES, seed) if not c.steps]  # sequences: the fixed one
    assert not refused_profiles([*fixed, *rotating])
    lines: list[str] = []
    plays: list[list[dict[str, Any]]] = []

    async def run() -> tuple[Summary, Summary, Summary, Summary]:
        profiles = [c.profile for c in [*fixed, *rotating] if c.profile is not None]
        # the batch's binder is FIXED_SEED's (not ignorable: binds_by_extender's failures fail)
        ignorable = binder_ignorable(FIXED_SEED)
        upstream = Upstream(
            kube, tmp_path / "cluster", profiles, say=lines.append, ignorable_binder=ignorable
        )
        pipeline = RestartedPipeline(
            kube, tmp_path / "pipeline", profiles, say=lines.append, ignorable_binder=ignorable
        )
        gangs = Upstream(kube, tmp_path / "gangs", profiles, say=lines.append, gangs=True)
        clusters = (upstream, pipeline, gangs)
        try:
            await asyncio.gather(*(c.start() for c in clusters))
            plays.append((await upstream.play(fixed[0])).answers)  # on the fresh cluster
            first = await run_cases(
                upstream, [c for c in fixed if not c.steps], lines.append, None, gangs=gangs
            )
            timed = [c for c in fixed if c.steps]  # timed events: through the pipeline too
            await run_cases(upstream, timed, lines.append, None, summary=first, pipeline=pipeline)
            regression = await run_cases(
                upstream,
                [two_preemptions(), binds_by_extender(), foreign_victim(), extended_by_dra()],
                lines.append,
                None,
                pipeline=pipeline,
                verbose=True,  # the messages, in the report
            )
            # at least PIPELINE_CASES through the pipeline, and every category once in all, however loaded
            # the machine is; more while the budgets last
            deadline = time.monotonic() + PIPELINE_BUDGET
            piped = await run_cases(
                upstream, rotating[:PIPELINE_CASES], lines.append, None, pipeline=pipeline, gangs=gangs
            )
            piped = await run_cases(
                upstream,
                rotating[PIPELINE_CASES:],
                lines.append,
                None,
                deadline=deadline,
                summary=piped,
                pipeline=pipeline,
                gangs=gangs,
            )
            await pipeline.stop()
            deadline = time.monotonic() + BUDGET
            played = {id(c) for c in rotating[: piped.cases + piped.errors]}
            rest = [c for c in rotating if id(c) not in played]
            need = max(0, len(CATEGORIES) - 1 - piped.cases)
            second = await run_cases(upstream, rest[:need], lines.append, None, gangs=gangs)
            second = await run_cases(
                upstream, rest[need:], lines.append, None, deadline=deadline, summary=second, gangs=gangs
            )
            plays.append((await upstream.play(fixed[0])).answers)  # after every other case
            return first, piped, second, regression
        finally:
            await asyncio.gather(*(c.stop() for c in clusters))

    first, piped, second, regression = asyncio.run(run())
    report = "\n".join(lines)
    restarted = [line for line in lines if "kube-scheduler exited 3" in line and "starting it again" in line]
    assert restarted, report
    for summary, s, n in (
        (first, FIXED_SEED, len(fixed)),
        (piped, seed, len(rotating)),
        (second, seed, len(rotating)),
    ):
        assert not summary.errors, f"seed {s}: cases not compared:\n{report}"
        assert not summary.disagreements, (
            f"seed {s}: ksched disagrees with kube-scheduler on {summary.disagreeing}; play them again (and "
            f"store shrunk regression cases) with\n    ksched differential --kube {kube} --seed {s} "
            f"--cases {n}\n{report}"
        )
    timed = first.pipeline
    assert timed["cases"] == 1 and not timed["errors"] and not timed["disagreements"], (
        f"seed {FIXED_SEED}: the sequences case through the pipeline: {timed}; play it again with\n    "
        f"ksched differential --kube {kube} --seed {FIXED_SEED} --cases {len(fixed)} --pipeline "
        f"--only {CATEGORIES.index('sequences')}\n{report}"
    )
    assert not regression.errors and not regression.disagreements, f"the fixed cases:\n{report}"
    # two_preemptions: two nominations; binds_by_extender: one pod bound, two bindings failed;
    # foreign_victim: its preemption failed; extended_by_dra: placed, its two claims allocated
    assert regression.outcomes == {"placed": 2, "nominated": 2, "unschedulable": 3}, report
    assert "claims to preempt pod (UID: &{" in report, report
    assert regression.pipeline["cases"] == 4 and not regression.pipeline["disagreements"], (
        f"the fixed cases through the pipeline: {regression.pipeline}\n{report}"
    )
    stats = piped.pipeline
    assert not stats["errors"], f"seed {seed}: cases the pipeline's cluster did not compare:\n{report}"
    assert not stats["disagreements"], (
        f"seed {seed}: ksched's pipeline disagrees with kube-scheduler on {stats['disagreeing']}; play them "
        f"again with\n    ksched differential --kube {kube} --seed {seed} --cases {len(rotating)} "
        f"--pipeline\n{report}"
    )
    gang_cases = piped.by_category.get("gangs", {}).get("cases", 0)
    assert stats["cases"] == piped.cases - gang_cases >= PIPELINE_CASES, (
        f"only {stats['cases']} case(s) through the pipeline:\n{report}"
    )
    assert first.cases == len(CATEGORIES)
    assert piped.cases + second.cases >= len(CATEGORIES) - 1, (
        f"only {piped.cases + second.cases} rotating case(s):\n{report}"
    )
    fresh, reused = plays
    assert [a["pod"] for a in fresh] == [a["pod"] for a in reused]
    leaks = [f"{a['pod']}: {d}" for a, b in zip(fresh, reused, strict=True) for d in same_answer(a, b)]
    assert not leaks, "the same case decided differently on a reused cluster:\n" + "\n".join(leaks)
