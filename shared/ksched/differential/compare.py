"""Comparing ``ksched simulate``'s entry for a pod with the real scheduler's answer: the rules of
``../shared/fidelity-public/compare.py``, and the whole FailedScheduling text too.

Checks (a case agrees when all hold for each of its pods):

* ``a``: placed or not, on both sides;
* ``b``: the feasible set (upstream: the nodes it scored, or the one node it placed the pod on
  without scoring; ksched: the keys of its totals, else the node it chose);
* ``c``: every plugin's weighted score on every feasible node (a plugin one side does not report
  counts as 0: upstream does not log a plugin whose PreScore skipped); not when upstream skipped
  scoring;
* ``d``: every node's total (same rule);
* ``e``: the chosen node is among upstream's top-total nodes (upstream breaks ties at random, so
  the node itself is not compared);
* ``f-pre``: the FailedScheduling text before its first ``". "``; ``f-full``: the whole text (the
  dry run's ``expected at least one victim pod on node`` errors in any order: upstream's dry run
  starts at a random offset and runs in parallel; a loopback URL's port and a pod's UID left out);
  for an attempt that ended in an error, the error;
* ``p``: for a pod upstream did not place, the nominated node and the victims (sorted ``ns/name``);
* ``g``: for a member of a pod group, the group's ``PodGroupScheduled`` condition (status, reason,
  message);
* ``q``: for a pod with ResourceClaims, the node and devices (``driver/pool/device``) of each claim's
  allocation once placed, ``{}`` when not placed; not when the two sides placed the pod on different
  nodes of equal totals (upstream's draw).
"""

from __future__ import annotations

import re
from typing import Any

from ksched.differential.model import claim_alias

CHECKS = ("a", "b", "c", "d", "e", "f-pre", "f-full", "p", "q", "g")


def filter_part(message: str | None) -> str | None:
    """``0/5 nodes are available: 5 Insufficient cpu. preemption: ...`` -> ``0/5 nodes are
    available: 5 Insufficient cpu``."""
    if not message:
        return None
    return message.split(". ", 1)[0].rstrip(". ").strip()


_NO_VICTIM = re.compile(r'expected at least one victim pod on node "[^"]*"')
_AGGREGATE = re.compile(r"preemption: \[(.*)\]$")


def order_free(message: str | None) -> str | None:
    """``message`` with the preemption dry run's aggregated per-node errors sorted (upstream appends
    them as its parallel dry run, from a random offset, meets the nodes)."""
    found = _AGGREGATE.search(message or "")
    if found is None:
        return message
    items = _NO_VICTIM.findall(found.group(1))
    if ", ".join(items) != found.group(1):
        return message
    assert message is not None
    return message[: found.start(1)] + ", ".join(sorted(items)) + "]"


_LOOPBACK_URL = re.compile(r"(https?)://127\.0\.0\.1:\d+/")
_POD_UID = re.compile(r"\(UID: &\{[^}]*\}\)")


def run_free(message: str | None) -> str | None:
    """``message`` without what differs from run to run: the port of each loopback URL (an
    extender's failure names its URL, whose port is the harness's of that run; a stored case replays
    on another) and a pod's UID (an extender's preempt verb naming a pod not on its node: each
    cluster has its own UIDs)."""
    if not message:
        return message
    return _POD_UID.sub("(UID: &{UID})", _LOOPBACK_URL.sub(r"\1://127.0.0.1:PORT/", message))


def as_scheduled(golden: dict[str, Any]) -> dict[str, Any]:
    """Upstream's answer for a pod as its scheduling cycle left it: a pod whose binding failed
    (``binding_failed``: not placed, the error its message) placed on one of its top nodes (``ksched
    simulate`` does not bind; check ``e`` still takes any of them), its claims not compared (the failed
    binding undid their allocation); any other answer as it is."""
    if not golden.get("binding_failed"):
        return golden
    top = golden.get("top_nodes") or ["(the node its scheduling cycle chose)"]
    return {k: v for k, v in golden.items() if k != "claims"} | {"node": top[0], "message": None}


def _dict(x: Any) -> dict[str, Any]:
    return x if isinstance(x, dict) else {}


def _tied_fit(golden: dict[str, Any], ours: dict[str, Any]) -> bool:
    """Whether both nominations name one of upstream's tied best nodes for a pod that preempted
    nothing: a pod group member that fit while its group waits for another member's preemption is
    nominated where its cycle chose to place it, which among tied nodes upstream picks at random
    (gangs-s9526-688: top nodes n2 and n3, upstream n3, ksched n2), as check (e) allows."""
    top = golden.get("top_nodes") or []
    return (
        len(top) > 1
        and not golden.get("victims")
        and not ours.get("victims")
        and golden.get("nominated") in top
        and ours.get("nominated") in top
    )


def compare(golden: dict[str, Any], ours: dict[str, Any] | None) -> tuple[dict[str, bool], list[str]]:
    """({check: held}, what differs, one line each) for one pod; ``ours`` None: ksched has no entry."""
    if ours is None:
        return dict.fromkeys(CHECKS, False), [f"ksched simulate has no entry for {golden['pod']}"]
    res: dict[str, bool] = {}
    diffs: list[str] = []
    gnode, knode = golden.get("node"), ours.get("node") or None
    res["a"] = (gnode is None) == (knode is None)
    if not res["a"]:
        diffs.append(f"(a) placed: upstream {gnode!r}, ksched {knode!r}")
    ktot, ksc = _dict(ours.get("totals")), _dict(ours.get("scores"))
    feasible = golden.get("feasible")
    if feasible is None:  # the log does not tell
        res["b"] = res["c"] = res["d"] = res["e"] = True
    else:
        kfeas = sorted(ktot) if ktot else (sorted(ksc) if ksc else ([knode] if knode else []))
        res["b"] = kfeas == sorted(feasible)
        if not res["b"]:
            miss, extra = sorted(set(feasible) - set(kfeas)), sorted(set(kfeas) - set(feasible))
            diffs.append(f"(b) feasible: missing {miss} extra {extra}")
        res["c"] = res["d"] = True
        if not golden.get("scoring_skipped") and golden.get("totals"):
            for node, gps in sorted(_dict(golden.get("scores")).items()):
                kps = _dict(ksc.get(node))
                for plugin in sorted(set(gps) | set(kps)):
                    if (gps.get(plugin) or 0) != (kps.get(plugin) or 0):
                        res["c"] = False
                        diffs.append(
                            f"(c) {node} {plugin}: upstream {gps.get(plugin)}, ksched {kps.get(plugin)}"
                        )
            for node, total in sorted(golden["totals"].items()):
                if ktot.get(node) != total:
                    res["d"] = False
                    diffs.append(f"(d) {node} total: upstream {total}, ksched {ktot.get(node)}")
        if gnode is None:
            res["e"] = knode is None
        else:
            res["e"] = knode in golden.get("top_nodes", [])
            if not res["e"]:
                diffs.append(
                    f"(e) chosen {knode!r} not among upstream's top nodes {golden.get('top_nodes')} "
                    f"(upstream chose {gnode!r})"
                )
    gm, km = run_free(golden.get("message") or None), run_free(ours.get("message") or None)
    res["f-pre"] = filter_part(gm) == filter_part(km)
    res["f-full"] = order_free(gm) == order_free(km)
    if not res["f-full"]:
        diffs.append(f"(f) message:\n      upstream: {gm}\n      ksched:   {km}")
    res["p"] = True
    # a pod group member ksched did not nominate has no "nominated" entry: none, as upstream's
    quiet = "podGroup" in golden and "nominated" not in ours and not golden.get("nominated")
    if "nominated" in golden and not (quiet and not golden.get("victims")):
        if "nominated" not in ours:
            res["p"] = False
            diffs.append(f"(p) ksched reports no nomination (upstream {golden['nominated']!r})")
        elif (ours.get("nominated") or None) != golden["nominated"] and not _tied_fit(golden, ours):
            res["p"] = False
            diffs.append(f"(p) nominated: upstream {golden['nominated']!r}, ksched {ours.get('nominated')!r}")
        victims = ours.get("victims")
        if sorted(victims or []) != sorted(golden.get("victims") or []):
            res["p"] = False
            diffs.append(f"(p) victims: upstream {golden.get('victims')}, ksched {victims}")
    res["q"] = True
    if "claims" in golden and (knode == gnode or gnode is None):
        res["q"] = _claims(ours.get("claims")) == golden["claims"]
        if not res["q"]:
            diffs.append(f"(q) claims: upstream {golden['claims']}, ksched {_claims(ours.get('claims'))}")
    res["g"] = True
    if "podGroup" in golden:
        want = golden["podGroup"]["condition"]
        cond = _dict(_dict(ours.get("podGroup")).get("condition"))
        got = {f: cond.get(f) or "" for f in ("status", "reason", "message")}
        res["g"] = got == want
        if not res["g"]:
            diffs.append(f"(g) PodGroupScheduled: upstream {want}, ksched {got}")
    return res, diffs


def _claims(claims: Any) -> dict[str, Any]:
    """ksched's ``claims`` as the golden has them: only allocated ones, devices as sorted strings."""

    def device(d: Any) -> str:
        if isinstance(d, dict):
            return f"{d.get('driver')}/{d.get('pool')}/{d.get('device')}"
        return str(d)

    return {
        claim_alias(name): {
            "node": c.get("node"),
            "devices": sorted(device(d) for d in c.get("devices") or []),
        }
        for name, c in _dict(claims).items()
        if isinstance(c, dict) and (c.get("devices") or c.get("node"))
    }


def agrees(checks: dict[str, bool]) -> bool:
    return all(checks.get(c, True) for c in CHECKS)
