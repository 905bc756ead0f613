"""Replaying a case through ``ksched simulate``: the objects as the API server returned them, under the
profile the real scheduler used, with ``--seed 1``."""

from __future__ import annotations

import copy
from typing import Any

import yaml

from ksched.api.files import decode_objects
from ksched.config import parse_config
from ksched.differential.model import Obj, config_document, identity, key
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
    outcomes = decide(decode_objects(located, skipped=[]), config, seed, gates)
    return {o.pod: o.to_json() for o in outcomes}


def replay_group(objects: list[Obj], profile: Obj | None) -> list[dict[str, Any]]:
    """ksched's entries for the members of a ``gangs`` case (every pending pod of ``objects``), in the
    order its pod group cycle tried them, with the gang gates on."""
    return list(simulate(objects, profile, gangs=True).values())


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
    for pod in pending:
        pod_key = key(pod)
        ours = simulate([*setup, *earlier, pod], profile)
        if pod_key in ours:
            out[pod_key] = ours[pod_key]
        upstream = decided[pod_key]
        if upstream.get("node"):
            earlier.append(_placed(pod, upstream["node"]))
        elif upstream.get("nominated"):
            earlier.append(_nominated(pod, upstream["nominated"]))
    return out


def _is_pending(obj: Obj) -> bool:
    return obj.get("kind") == "Pod" and not (obj.get("spec") or {}).get("nodeName")


def _placed(pod: Obj, node: str) -> Obj:
    out = copy.deepcopy(pod)
    out["spec"]["nodeName"] = node
    return out


def _nominated(pod: Obj, node: str) -> Obj:
    out = copy.deepcopy(pod)
    out.setdefault("status", {})["nominatedNodeName"] = node
    return out
