"""Replaying a case through ``ksched simulate``: the objects as the API server returned them, under the
profile the real scheduler used, with ``--seed 1``."""

from __future__ import annotations

import asyncio
import copy
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import yaml

from ksched.api.files import decode_objects
from ksched.config import parse_config
from ksched.differential.extender import score_key
from ksched.differential.model import (
    ADD_NODE,
    CORDON,
    DECIDES,
    DELETE,
    LABEL,
    Obj,
    config_document,
    group_of,
    identity,
    key,
)
from ksched.features import FeatureGates
from ksched.launcher.controlplane import GANG_GATES
from ksched.simulate.cli import decide

SEED = 1


def simulate(
    objects: list[Obj], profile: Obj | None, seed: int = SEED, gangs: bool = False
) -> dict[str, dict[str, Any]]:
    """ksched's entry for each pending pod (``ns/name`` -> the pod entry of ``--output json``, in the
    order ksched tried them); ``gangs``: with the gang gates on. Raises ``ksched.simulate.cli.Refused``
    or ``ksched.config.ConfigError`` for input it refuses."""
    gates = FeatureGates.parse(GANG_GATES) if gangs else FeatureGates()
    config = parse_config(yaml.safe_dump(config_document([profile] if profile else [])), gates=gates)
    located = [(f"{kind} {name}", obj) for obj, (kind, name) in ((o, identity(o)) for o in objects)]
    objs = decode_objects(located, skipped=[])
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        outcomes = decide(objs, config, seed, gates)
    else:  # the harness's loop runs: the extenders' calls run a loop of their own, in a thread
        with ThreadPoolExecutor(1) as pool:
            outcomes = pool.submit(decide, objs, config, seed, gates).result()
    return {o.pod: _renamed(o.to_json()) for o in outcomes}


def _renamed(entry: dict[str, Any]) -> dict[str, Any]:
    """``entry`` with the harness's extenders' scores under ``extender/NAME`` (as the answers have
    them), not their urlPrefix."""
    entry["scores"] = {
        node: {score_key(plugin) or plugin: score for plugin, score in scores.items()}
        for node, scores in entry["scores"].items()
    }
    return entry


def replay_groups(
    objects: list[Obj], profile: Obj | None, answers: list[dict[str, Any]]
) -> list[list[dict[str, Any]]]:
    """ksched's entries for the members of a ``gangs`` case's pod groups, one list per group in the
    order upstream decided them (``answers``: each member's ``podGroup``), each in the order its pod
    group cycle tried them, with the gang gates on. A later group meets the earlier groups' members
    where upstream left them (placed, with their start times; the others deleted) and the pods being
    deleted then, terminating, as in :func:`replay`; not the later groups."""
    names = list(dict.fromkeys(a["podGroup"]["name"] for a in answers))
    out: list[list[dict[str, Any]]] = []
    placed: dict[str, dict[str, Any]] = {}
    victims: set[str] = set()
    for i, name in enumerate(names):
        later = set(names[i + 1 :])
        cluster: list[Obj] = []
        for obj in objects:
            if obj.get("kind") == "PodGroup" and key(obj) in later:
                continue
            if _is_pending(obj):
                if group_of(obj) == name:
                    cluster.append(obj)
                elif key(obj) in placed:
                    where = placed[key(obj)]
                    cluster.append(_placed(obj, where["node"], where.get("started")))
                continue  # deleted, or a later group's member
            cluster.append(obj)
        ours = simulate(_terminating(cluster, victims), profile, gangs=True)
        out.append(list(ours.values()))  # the group's members: the only pods left pending
        for a in answers:
            if a["podGroup"]["name"] != name:
                continue
            end = a.get("final") or a
            if end.get("node"):
                placed[a["pod"]] = {"node": end["node"], "started": a.get("started")}
            victims.update((a.get("final") or {}).get("terminating") or a.get("victims") or [])
    return out


def replay(
    objects: list[Obj], profile: Obj | None, answers: list[dict[str, Any]]
) -> dict[str, dict[str, Any]]:
    """ksched's entry for each pending pod of ``objects`` when every earlier pending pod went where
    the real scheduler put it (``answers``, in order): placed on its node, kept pending with its
    nomination, or gone (a pod left unschedulable is deleted before the next one is created). Upstream
    breaks ties between equal totals at random, so what a later pod meets depends on that draw: each pod
    is compared on the state upstream's own earlier choices made."""
    decided = {a["pod"]: a for a in answers}
    pending = [o for o in objects if _is_pending(o) and key(o) in decided]
    setup = [o for o in objects if not (_is_pending(o) and key(o) in decided)]
    out: dict[str, dict[str, Any]] = {}
    earlier: list[Obj] = []
    victims: set[str] = set()
    for pod in pending:
        pod_key = key(pod)
        ours = simulate([*_terminating([*setup, *earlier], victims), pod], profile)
        if pod_key in ours:
            out[pod_key] = ours[pod_key]
        upstream = decided[pod_key]
        if upstream.get("node"):
            earlier.append(_placed(pod, upstream["node"], upstream.get("started")))
        elif upstream.get("nominated"):
            earlier.append(_nominated(pod, upstream["nominated"]))
            victims.update(upstream.get("victims") or [])
    return out


def _terminating(objects: list[Obj], victims: set[str]) -> list[Obj]:
    """``objects`` with the pods an earlier pod's preemption deleted still there, terminating (with
    the ``DisruptionTarget`` condition the preemption wrote), as the later pods meet them upstream: no
    kubelet ends them, so they keep their node and their requests and stay potential victims of a
    later preemption, and the preemptor's retry is not eligible while they terminate."""
    out = []
    for obj in objects:
        if obj.get("kind") == "Pod" and key(obj) in victims:
            obj = copy.deepcopy(obj)
            obj["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
            obj["metadata"]["deletionGracePeriodSeconds"] = 30
            status = obj.setdefault("status", {})
            status["conditions"] = [
                *(c for c in status.get("conditions") or [] if c.get("type") != "DisruptionTarget"),
                {"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler"},
            ]
        out.append(obj)
    return out


def replay_steps(objects: list[Obj], steps: list[Obj], profile: Obj | None) -> dict[str, dict[str, Any]]:
    """ksched's entry for each pod a ``sequences`` step had tried (``steps`` as played, see
    ``Upstream._decide_steps``), on the cluster of that moment: ``objects`` (the setup) changed by the
    steps before it (nodes added, cordoned, relabelled; pods deleted), and the pods created earlier
    where they were then (placed, or pending with a nomination; one pending without is not tried
    with it); the pods a preemption was deleting then (the step's ``terminating``) are on their node,
    terminating, as in :func:`replay`. A step another pod's retry raced with (``racy``) is left out:
    what the pod met is not known."""
    current = [copy.deepcopy(o) for o in objects if not _is_pending(o)]
    created: dict[str, Obj] = {}
    out: dict[str, dict[str, Any]] = {}
    for step in steps:
        op = step["op"]
        if op == ADD_NODE:
            current.append(step["node"])
        elif op in (CORDON, LABEL):
            current = [step["object"] if identity(o) == ("Node", step["node"]) else o for o in current]
        elif op == DELETE:
            current = [o for o in current if identity(o) != ("Pod", step["pod"])]
            created.pop(step["pod"], None)
        elif op in DECIDES:
            pod = step["object"]
            created[step["pod"]] = pod
            if "racy" not in step or step["racy"]:
                continue
            earlier = []
            terminating: dict[str, str] = step.get("terminating") or {}
            started: dict[str, str] = step.get("started") or {}
            for other, state in step["before"].items():
                if other == step["pod"] or other not in created:
                    continue
                if state.get("node"):
                    earlier.append(_placed(created[other], state["node"], started.get(other)))
                elif state.get("nominated"):
                    earlier.append(_nominated(created[other], state["nominated"]))
            for other, node in terminating.items():  # a created pod placed, then preempted
                if other in created and other not in step["before"] and node:
                    earlier.append(_placed(created[other], node, started.get(other)))
            ours = simulate([*_terminating([*current, *earlier], set(terminating)), pod], profile)
            if step["pod"] in ours:
                out[step["pod"]] = ours[step["pod"]]
    return out


def _is_pending(obj: Obj) -> bool:
    return obj.get("kind") == "Pod" and not (obj.get("spec") or {}).get("nodeName")


def _placed(pod: Obj, node: str, started: str | None = None) -> Obj:
    """``pod`` on ``node``; with the start time the harness gave it there (as a kubelet would), Running."""
    out = copy.deepcopy(pod)
    out["spec"]["nodeName"] = node
    if started:
        out.setdefault("status", {}).update({"phase": "Running", "startTime": started})
    return out


REPLAY_GATE = "differential.ksched.io/replayed"
"""The scheduling gate an earlier pod pending with its nomination carries in a replay: ``ksched simulate``
tries every pending pod, and upstream did not try that one again before the next (it waited, its victims
terminating): it is what the later pods meet, its nomination reserving room, not a pod to decide
again (sequences-s9412-1165: retried first, at higher priority, it preempted elsewhere, the node it
was nominated to being cordoned since)."""


def _nominated(pod: Obj, node: str) -> Obj:
    out = copy.deepcopy(pod)
    out.setdefault("status", {})["nominatedNodeName"] = node
    gates = out["spec"].setdefault("schedulingGates", [])
    gates.append({"name": REPLAY_GATE})
    return out
