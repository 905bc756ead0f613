"""The harness's own HTTP scheduler extenders (category ``extenders``).

Every batch's configuration lists the extenders of :data:`EXTENDERS`, served by one HTTP server of this
process on loopback (:func:`base_url`: a free port, started on first use). Each of :data:`MANAGED` is
interested only in pods that request its managed resource (:data:`RESOURCE` ``-NAME``), which only
``extenders`` cases ask for, so the other categories never meet them; those of :data:`EVERY_POD` have
none and meet every pod, but act only on a pod that carries a plan for them. What an extender answers
is no state of the server's: the pod carries it, in its :data:`ANNOTATION` (JSON ``{NAME: {"fail":
{node: message}, "unresolvable": {node: message}, "scores": {node: 0..10}, "error": text, "preempt":
{"drop": [node], "pdb": {node: count}, "empty": [node], "error": text}}}``), so a stored case replays
with the same answers on another port. ``preempt`` is the preemption verb's answer: the candidates it
was sent (each with its victims), less ``drop``, with ``NumPDBViolations`` set from ``pdb``, the
victims of ``empty`` left out, those of ``add`` (node -> pod UIDs) added, or HTTP 500 with ``error``.
The generator names ``add``'s pods ``ns/name``: :func:`with_uids` puts in their UIDs on the cluster the
pod is created on (each cluster has its own). ``slow`` lists verbs answered only after the extender's
``httpTimeout``, so the caller meets a timeout.

The extender of :data:`BINDER` binds the pods it is interested in: its bind verb is sent no pod, only
its name, namespace and UID, so it looks the pod up on every cluster registered with
:func:`serve_cluster` (the one whose pod has that UID asked) and reads its plan there; ``bind``
``{"error": text}`` answers that error, ``{"refuse": text}`` HTTP 500 with it, and no plan binds the
pod (a ``Binding`` POSTed to that cluster).

The extenders of :data:`SECURE` are served over HTTPS by a second server, with a certificate of a
throwaway CA that their configuration's ``tlsConfig.caData`` trusts; the server asks for a client
certificate (another throwaway CA's), which their ``certData`` and ``keyData`` hold: a caller that
sends none fails the handshake. The managed resources of the extenders of :data:`IGNORED` are
``ignoredByScheduler``: nodes need not advertise them (NodeResourcesFit ignores them).
"""

from __future__ import annotations

import base64
import copy
import json
import ssl
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Protocol

from ksched.secureport.selfsigned import SelfSigned, self_signed, serving_context

Obj = dict[str, Any]

ANNOTATION = "differential.ksched.io/extender"
RESOURCE = "differential.ksched.io/ext"
SCORE_KEY = "extender/"
"""Scores are compared under ``extender/NAME`` (upstream logs them under the urlPrefix, whose port
changes from run to run)."""
MAX_NODE_SCORE, MAX_EXTENDER_PRIORITY = 100, 10

EXTENDERS: dict[str, Obj] = {
    # filters, prioritizes and narrows preemption's candidates, node names and victims' UIDs only;
    # not ignorable: its failure (an Error, a timeout) ends the attempt with that error
    "a": {
        "filterVerb": "filter",
        "prioritizeVerb": "prioritize",
        "preemptVerb": "preempt",
        "weight": 1,
        "nodeCacheCapable": True,
        "httpTimeout": "2s",
    },
    # the same, ignorable (an Error in its filter answer: the nodes pass through; a failed preempt
    # call is skipped, a candidate left without victims dropped), another weight
    "b": {
        "filterVerb": "filter",
        "prioritizeVerb": "prioritize",
        "preemptVerb": "preempt",
        "weight": 3,
        "nodeCacheCapable": True,
        "ignorable": True,
    },
    # prioritizes only, sent whole nodes (a filter without nodeCacheCapable is upstream's
    # kubernetes#141781: the nodes it keeps score as idle, see docs/extenders.md)
    "c": {"prioritizeVerb": "prioritize", "weight": 5, "nodeCacheCapable": False},
    # over TLS with a client certificate, ignorable, a short timeout: a call answered late fails
    # (filter: the nodes pass through; prioritize: no score, as for any extender)
    "d": {
        "filterVerb": "filter",
        "prioritizeVerb": "prioritize",
        "weight": 2,
        "nodeCacheCapable": True,
        "ignorable": True,
        "httpTimeout": "2s",
    },
    # filters only; its resource is ignoredByScheduler, so a node that does not advertise it fits
    "e": {"filterVerb": "filter", "nodeCacheCapable": True},
    # binds the pods it is interested in (on the cluster that asked); not ignorable: its failure ends
    # the binding cycle with its error. Upstream allows one binder per configuration.
    "f": {"bindVerb": "bind", "nodeCacheCapable": True},
    # no managed resource: interested in every pod of every category. A pod with a plan for it (only
    # ``extenders`` cases') is filtered and scored by it; every other pod passes and gets no score
    "g": {"filterVerb": "filter", "prioritizeVerb": "prioritize", "weight": 4, "nodeCacheCapable": True},
}
SECURE = frozenset({"d"})
"""The extenders served over HTTPS."""
IGNORED = frozenset({"e", "f"})
"""The extenders whose managed resource is ``ignoredByScheduler``."""
BINDER = "f"
"""The extender with a bind verb."""
EVERY_POD = frozenset({"g"})
"""The extenders without a managed resource, interested in every pod: the pods of every category call
them (a pod without a plan for one passes its filter and gets no score from it)."""
MANAGED = tuple(name for name in EXTENDERS if name not in EVERY_POD)
"""The extenders interested only in the pods that request their resource."""
SLOW_SECONDS = 3.0
"""How long a ``slow`` verb takes: past every extender's ``httpTimeout``."""


VERBS = ("filter", "prioritize", "preempt", "bind")


def resource(name: str) -> str:
    """The managed resource of extender ``name`` (a pod requesting it is the extender's)."""
    return f"{RESOURCE}-{name}"


def binder_ignorable(seed: int) -> bool:
    """Whether a batch's :data:`BINDER` is ignorable: in a run of an odd ``--seed`` (upstream allows one
    binder per configuration, so a batch has one or the other)."""
    return seed % 2 == 1


def extender_configs(ignorable_binder: bool = False) -> list[Obj]:
    """The ``extenders`` section of a KubeSchedulerConfiguration (the servers started on first use);
    ``ignorable_binder``: :data:`BINDER` ignorable (its failure passes the pod to the bind plugins)."""
    out = []
    for name, spec in EXTENDERS.items():
        managed: Obj = {"name": resource(name), **({"ignoredByScheduler": True} if name in IGNORED else {})}
        config = {**spec} if name in EVERY_POD else {**spec, "managedResources": [managed]}
        if name == BINDER and ignorable_binder:
            config["ignorable"] = True
        if name in SECURE:
            client = _certificate("client")
            tls = {"caData": ca_pem(), "certData": client.chain, "keyData": client.key}
            config = {
                "urlPrefix": f"{secure_base_url()}/{name}",
                **config,
                "tlsConfig": {key: base64.b64encode(pem).decode() for key, pem in tls.items()},
            }
        else:
            config = {"urlPrefix": f"{base_url()}/{name}", **config}
        out.append(config)
    return out


def score_key(url: str) -> str | None:
    """``extender/NAME`` for an extender's urlPrefix (None for another plugin name)."""
    name = url.rstrip("/").rsplit("/", 1)[-1]
    return SCORE_KEY + name if url.startswith("http") and name in EXTENDERS else None


def weighted(url: str, score: int) -> int:
    """An extender's raw score as it counts in a node's total (upstream's prioritizeNodes)."""
    name = url.rstrip("/").rsplit("/", 1)[-1]
    # an extender without a prioritize verb scores 0 with weight 0 (upstream logs those scores too)
    return score * int(EXTENDERS[name].get("weight", 0)) * (MAX_NODE_SCORE // MAX_EXTENDER_PRIORITY)


def plan(pod: Obj, name: str) -> Obj:
    """What extender ``name`` answers for ``pod`` (its annotation), empty when it says nothing."""
    raw = ((pod.get("metadata") or {}).get("annotations") or {}).get(ANNOTATION)
    try:
        doc = json.loads(raw) if raw else {}
    except ValueError:
        doc = {}
    out = doc.get(name) if isinstance(doc, dict) else None
    return out if isinstance(out, dict) else {}


class Refused(Exception):
    """An extender's planned failure: answered with HTTP 500 and this text."""


class Cluster(Protocol):
    """An API server the bind verb may be called for (``ControlPlane``: requests as its admin)."""

    def get(self, path: str, timeout: float = 5.0) -> tuple[int, bytes]: ...

    def post(self, path: str, body: object, timeout: float = 5.0) -> tuple[int, bytes]: ...


_clusters: list[Cluster] = []


def serve_cluster(cluster: Cluster) -> None:
    """Let the bind verb bind the pods of ``cluster``."""
    with _lock:
        _clusters.append(cluster)


def forget_cluster(cluster: Cluster) -> None:
    with _lock:
        if cluster in _clusters:
            _clusters.remove(cluster)


def answer(name: str, verb: str, args: Obj) -> Any:
    """Extender ``name``'s answer to ``verb`` with ``ExtenderArgs`` (``ExtenderPreemptionArgs`` for
    ``preempt``, ``ExtenderBindingArgs`` for ``bind``) ``args``; :class:`Refused` for a planned
    failure."""
    if verb == "bind":
        return bind(name, args)
    the_plan = plan(args.get("Pod") or {}, name)
    if verb == "preempt":
        return preempt(the_plan.get("preempt") or {}, args)
    if args.get("NodeNames") is not None:
        names = [str(n) for n in args["NodeNames"]]
    else:
        names = [str(n["metadata"]["name"]) for n in ((args.get("Nodes") or {}).get("items") or [])]
    if verb == "prioritize":
        if name in EVERY_POD and not the_plan:
            return []  # no score at all (zeros would be logged upstream, node by node)
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


def with_uids(pod: Obj, uids: dict[str, str]) -> Obj:
    """``pod`` with the victims its extenders' preempt plans add (``add``: node -> ``ns/name``)
    named by their UIDs (``uids``: ``ns/name`` -> UID, the pods created on the cluster ``pod`` is
    created on); a pod not there is left out. ``pod`` itself when it adds none."""
    raw = ((pod.get("metadata") or {}).get("annotations") or {}).get(ANNOTATION)
    doc = json.loads(raw) if raw else {}
    adding = [
        p["preempt"] for p in doc.values() if isinstance(p, dict) and (p.get("preempt") or {}).get("add")
    ]
    if not adding:
        return pod
    for the_plan in adding:
        the_plan["add"] = {
            node: [uids[name] for name in names if name in uids] for node, names in the_plan["add"].items()
        }
    out = copy.deepcopy(pod)
    out["metadata"]["annotations"][ANNOTATION] = json.dumps(doc, sort_keys=True)
    return out


def preempt(the_plan: Obj, args: Obj) -> Obj:
    """``ExtenderPreemptionResult``: the candidates of ``args`` as ``the_plan`` (a pod's ``preempt``)
    narrows them, victims as UIDs whatever they were sent as."""
    if the_plan.get("error"):
        raise Refused(str(the_plan["error"]))
    meta = args.get("NodeNameToMetaVictims")
    sent = meta if meta is not None else args.get("NodeNameToVictims") or {}
    drop, empty = set(the_plan.get("drop") or ()), set(the_plan.get("empty") or ())
    pdb, add = the_plan.get("pdb") or {}, the_plan.get("add") or {}
    out: Obj = {}
    for node, victims in sent.items():
        if node in drop:
            continue
        pods = victims.get("Pods") or []
        uids = [p["UID"] if meta is not None else p["metadata"]["uid"] for p in pods]
        uids += [uid for uid in add.get(node) or () if uid not in uids]
        out[node] = {
            "Pods": [] if node in empty else [{"UID": uid} for uid in uids],
            "NumPDBViolations": int(pdb.get(node, victims.get("NumPDBViolations") or 0)),
        }
    return {"NodeNameToMetaVictims": out}


def bind(name: str, args: Obj) -> Obj:
    """``ExtenderBindingResult``: the pod of ``args`` bound on the registered cluster that has it
    (its UID), or the error its plan's ``bind`` says."""
    ns, pod_name, uid, node = (str(args[k]) for k in ("PodNamespace", "PodName", "PodUID", "Node"))
    path = f"/api/v1/namespaces/{ns}/pods/{pod_name}"
    with _lock:
        clusters = list(_clusters)
    for cluster in clusters:
        status, raw = cluster.get(path)
        pod = json.loads(raw) if status == 200 else {}
        if (pod.get("metadata") or {}).get("uid") != uid:
            continue
        the_plan = plan(pod, name).get("bind") or {}
        if the_plan.get("refuse"):
            raise Refused(str(the_plan["refuse"]))
        if the_plan.get("error"):
            return {"Error": str(the_plan["error"])}
        binding = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": pod_name, "namespace": ns, "uid": uid},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node},
        }
        status, raw = cluster.post(f"{path}/binding", binding)
        return {
            "Error": "" if status in (200, 201) else f"ext-{name}: binding {ns}/{pod_name}: HTTP {status}"
        }
    return {"Error": f"ext-{name}: pod {ns}/{pod_name} (UID {uid}) is on no cluster of the harness"}


class _Handler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        parts = self.path.strip("/").split("/")
        length = int(self.headers.get("Content-Length") or 0)
        try:
            args = json.loads(self.rfile.read(length) or b"{}")
            if len(parts) != 2 or parts[0] not in EXTENDERS or parts[1] not in VERBS:
                raise ValueError(f"no such verb {self.path}")
            if parts[1] in (plan(args.get("Pod") or {}, parts[0]).get("slow") or ()):
                time.sleep(SLOW_SECONDS)  # the caller has given up: what follows goes nowhere
            body, code = json.dumps(answer(parts[0], parts[1], args)).encode(), 200
        except Refused as exc:
            body, code = str(exc).encode(), 500
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            body, code = str(exc).encode(), 400
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


class _Server(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        """Quiet: a caller that gave up (a timeout) or refused the certificate is no error of ours."""


_servers: dict[str, _Server] = {}
_certificates: dict[str, SelfSigned] = {}
_lock = threading.Lock()


def _certificate(role: str) -> SelfSigned:
    """This process's ``server`` certificate (for 127.0.0.1) or ``client`` certificate, each of its
    own throwaway CA, made on first use."""
    with _lock:
        if role not in _certificates:
            _certificates[role] = self_signed("127.0.0.1", client=role == "client")
        return _certificates[role]


def _serve(scheme: str) -> str:
    """The URL of this process's server for ``scheme`` (started on first use, on a free port)."""
    context = None
    if scheme == "https" and scheme not in _servers:
        context = serving_context(_certificate("server"))
        context.verify_mode = ssl.CERT_REQUIRED  # a caller without the client certificate is refused
        context.load_verify_locations(cadata=_certificate("client").ca.decode())
    with _lock:
        if scheme not in _servers:
            server = _Server(("127.0.0.1", 0), _Handler)
            if context is not None:
                # the handshake in the request's thread, not in the one accepting
                server.socket = context.wrap_socket(
                    server.socket, server_side=True, do_handshake_on_connect=False
                )
            _servers[scheme] = server
            threading.Thread(
                target=server.serve_forever, name=f"differential-extender-{scheme}", daemon=True
            ).start()
        return f"{scheme}://127.0.0.1:{_servers[scheme].server_address[1]}"


def base_url() -> str:
    """The URL the plain-HTTP extenders are served under."""
    return _serve("http")


def secure_base_url() -> str:
    """The URL the extenders of :data:`SECURE` are served under (HTTPS)."""
    return _serve("https")


def ca_pem() -> bytes:
    """The CA that signed the HTTPS server's certificate (what a caller trusts)."""
    return _certificate("server").ca
