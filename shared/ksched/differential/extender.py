"""The harness's own HTTP scheduler extenders (category ``extenders``).

Every batch's configuration lists the extenders of :data:`EXTENDERS`, served by one HTTP server of
this process on loopback (:func:`base_url`: a free port, started on first use). Each is interested
only in pods that request its managed resource (:data:`RESOURCE` ``-NAME``), which only ``extenders``
cases ask for, so the other categories never meet them. What an extender answers is no state of the
server's: the pod carries it, in its :data:`ANNOTATION` (JSON ``{NAME: {"fail": {node: message},
"unresolvable": {node: message}, "scores": {node: 0..10}, "error": text}}``), so a stored case replays
with the same answers on another port.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Obj = dict[str, Any]

ANNOTATION = "differential.ksched.io/extender"
RESOURCE = "differential.ksched.io/ext"
SCORE_KEY = "extender/"
"""Scores are compared under ``extender/NAME`` (upstream logs them under the urlPrefix, whose port
changes from run to run)."""
MAX_NODE_SCORE, MAX_EXTENDER_PRIORITY = 100, 10

EXTENDERS: dict[str, Obj] = {
    # filters and prioritizes, node names only
    "a": {"filterVerb": "filter", "prioritizeVerb": "prioritize", "weight": 1, "nodeCacheCapable": True},
    # the same, ignorable (an Error in its filter answer: the nodes pass through), another weight
    "b": {
        "filterVerb": "filter",
        "prioritizeVerb": "prioritize",
        "weight": 3,
        "nodeCacheCapable": True,
        "ignorable": True,
    },
    # prioritizes only, sent whole nodes (a filter without nodeCacheCapable is upstream's
    # kubernetes#141781: the nodes it keeps score as idle, see docs/extenders.md)
    "c": {"prioritizeVerb": "prioritize", "weight": 5, "nodeCacheCapable": False},
}


def resource(name: str) -> str:
    """The managed resource of extender ``name`` (a pod requesting it is the extender's)."""
    return f"{RESOURCE}-{name}"


def extender_configs(base: str) -> list[Obj]:
    """The ``extenders`` section of a KubeSchedulerConfiguration, served at ``base``."""
    return [
        {"urlPrefix": f"{base}/{name}", **spec, "managedResources": [{"name": resource(name)}]}
        for name, spec in EXTENDERS.items()
    ]


def score_key(url: str) -> str | None:
    """``extender/NAME`` for an extender's urlPrefix (None for another plugin name)."""
    name = url.rstrip("/").rsplit("/", 1)[-1]
    return SCORE_KEY + name if url.startswith("http") and name in EXTENDERS else None


def weighted(url: str, score: int) -> int:
    """An extender's raw score as it counts in a node's total (upstream's prioritizeNodes)."""
    name = url.rstrip("/").rsplit("/", 1)[-1]
    return score * int(EXTENDERS[name]["weight"]) * (MAX_NODE_SCORE // MAX_EXTENDER_PRIORITY)


def plan(pod: Obj, name: str) -> Obj:
    """What extender ``name`` answers for ``pod`` (its annotation), empty when it says nothing."""
    raw = ((pod.get("metadata") or {}).get("annotations") or {}).get(ANNOTATION)
    try:
        doc = json.loads(raw) if raw else {}
    except ValueError:
        doc = {}
    out = doc.get(name) if isinstance(doc, dict) else None
    return out if isinstance(out, dict) else {}


def answer(name: str, verb: str, args: Obj) -> Any:
    """Extender ``name``'s answer to ``verb`` with ``ExtenderArgs`` ``args``."""
    the_plan = plan(args.get("Pod") or {}, name)
    if args.get("NodeNames") is not None:
        names = [str(n) for n in args["NodeNames"]]
    else:
        names = [str(n["metadata"]["name"]) for n in ((args.get("Nodes") or {}).get("items") or [])]
    if verb == "prioritize":
        scores = the_plan.get("scores") or {}
        return [{"Host": n, "Score": int(scores.get(n, 0))} for n in names]
    if the_plan.get("error"):
        return {"Error": str(the_plan["error"])}
    fail, unresolvable = the_plan.get("fail") or {}, the_plan.get("unresolvable") or {}
    kept = [n for n in names if n not in fail and n not in unresolvable]
    return {
        "NodeNames": kept,
        "FailedNodes": {n: m for n, m in fail.items() if n in names},
        "FailedAndUnresolvableNodes": {n: m for n, m in unresolvable.items() if n in names},
        "Error": "",
    }


class _Handler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        parts = self.path.strip("/").split("/")
        length = int(self.headers.get("Content-Length") or 0)
        try:
            args = json.loads(self.rfile.read(length) or b"{}")
            if len(parts) != 2 or parts[0] not in EXTENDERS or parts[1] not in ("filter", "prioritize"):
                raise ValueError(f"no such verb {self.path}")
            body, code = json.dumps(answer(parts[0], parts[1], args)).encode(), 200
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            body, code = str(exc).encode(), 400
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


_servers: list[ThreadingHTTPServer] = []
_lock = threading.Lock()


def base_url() -> str:
    """The URL the extenders are served under (the server started on first use, on a free port)."""
    with _lock:
        if not _servers:
            _servers.append(ThreadingHTTPServer(("127.0.0.1", 0), _Handler))
            threading.Thread(
                target=_servers[0].serve_forever, name="differential-extender", daemon=True
            ).start()
        return f"http://127.0.0.1:{_servers[0].server_address[1]}"
