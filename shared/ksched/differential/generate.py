"""Random but valid cases, one generator per category, seeded and reproducible.

``generate(category, seed, index)`` always returns the same case: its random source is seeded with
the three. A case is small (3-8 nodes, a few bound pods, 1-3 pending pods) and only uses what the API
server accepts; every object is plain data, created as it is (the API server applies defaults).
"""

from __future__ import annotations

import copy
import json
import random
from collections.abc import Callable
from typing import Any

from ksched.differential.extender import ANNOTATION, BINDER, EVERY_POD, EXTENDERS, IGNORED, MANAGED, resource
from ksched.differential.model import (
    ADD_NODE,
    CORDON,
    CREATE,
    DELETE,
    LABEL,
    NAMESPACES,
    RUNTIME_CLASS,
    UNGATE,
    Case,
    Obj,
)
from ksched.differential.model import key as key_of
from ksched.plugins.noderesources.fit import DEVICE_CLASS_RESOURCE_PREFIX

ZONE = "topology.kubernetes.io/zone"
HOSTNAME = "kubernetes.io/hostname"
APPS = ("web", "db", "cache")
IMAGES = ("nginx:1.27", "redis", "busybox:1.36", "registry.example/app:v2")
GPU = "example.com/gpu"
FPGA = "vendor.io/fpga"


class Gen:
    """The random source of one case and the builders its objects share."""

    def __init__(self, category: str, seed: int, index: int) -> None:
        self.rng = random.Random(f"{category}/{seed}/{index}")
        self.case = Case(category, seed, index)
        self.prefix = f"c{index}"
        self.nodes: list[Obj] = []
        self.bound: list[Obj] = []
        self._started = 0
        self.added = 0
        """Nodes made for a ``sequences`` step (added later, named apart)."""

    # --- random helpers ----------------------------------------------------------------------------
    def chance(self, p: float) -> bool:
        return self.rng.random() < p

    def pick(self, items: Any) -> Any:
        return self.rng.choice(list(items))

    def some(self, items: Any, low: int = 0, high: int | None = None) -> list[Any]:
        pool = list(items)
        n = self.rng.randint(low, len(pool) if high is None else min(high, len(pool)))
        return self.rng.sample(pool, n)

    # --- nodes ---------------------------------------------------------------------------------------
    def node(
        self,
        cpu: str,
        memory: str,
        pods: int = 110,
        zone: str | None = None,
        labels: dict[str, str] | None = None,
        extra: dict[str, str] | None = None,
    ) -> Obj:
        name = f"{self.prefix}-n{len(self.nodes)}"
        all_labels = {HOSTNAME: name, "kubernetes.io/os": "linux", **(labels or {})}
        if zone is not None:
            all_labels[ZONE] = zone
        allocatable = {"cpu": cpu, "memory": memory, "pods": str(pods), **(extra or {})}
        node: Obj = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": name, "labels": all_labels},
            "spec": {},
            "status": {"capacity": dict(allocatable), "allocatable": allocatable},
        }
        self.nodes.append(node)
        return node

    def random_nodes(self, low: int = 3, high: int = 8, zones: int = 3) -> list[Obj]:
        for _ in range(self.rng.randint(low, high)):
            zone = f"zone-{'abc'[self.rng.randrange(zones)]}" if self.chance(0.9) else None
            self.node(
                self.pick(("1", "2", "4", "8", "1500m")),
                self.pick(("2Gi", "4Gi", "8Gi", "16Gi", "3500Mi")),
                zone=zone,
            )
        return self.nodes

    def taint(self, node: Obj, key: str, value: str, effect: str) -> None:
        taint = {"key": key, "effect": effect, **({"value": value} if value else {})}
        node["spec"].setdefault("taints", []).append(taint)

    def label(self, node: Obj, key: str, value: str) -> None:
        node["metadata"]["labels"][key] = value

    # --- pods ----------------------------------------------------------------------------------------
    def requests(self, cpu_max: int = 1500, mem_max: int = 2048, none: float = 0.1) -> dict[str, str]:
        if self.chance(none):
            return {}
        out: dict[str, str] = {}
        if self.chance(0.9):
            out["cpu"] = f"{self.rng.randrange(50, cpu_max, 50)}m"
        if self.chance(0.8):
            out["memory"] = f"{self.rng.randrange(64, mem_max, 64)}Mi"
        return out

    def container(self, name: str, requests: dict[str, str] | None = None, **extra: Any) -> Obj:
        out: Obj = {"name": name, "image": self.pick(IMAGES)}
        if requests:
            out["resources"] = {"requests": requests}
        out.update(extra)
        return out

    def pod(
        self,
        name: str,
        containers: list[Obj] | None = None,
        namespace: str | None = None,
        labels: dict[str, str] | None = None,
        **spec: Any,
    ) -> Obj:
        meta: Obj = {"name": f"{self.prefix}-{name}", "namespace": namespace or self.pick(NAMESPACES)}
        if labels:
            meta["labels"] = labels
        body: Obj = {"containers": containers or [self.container("c", self.requests())], **spec}
        if self.case.profile is not None and "nodeName" not in body:
            body["schedulerName"] = self.case.profile["schedulerName"]
        return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": body}

    def bind(self, pod: Obj, node: Obj) -> Obj:
        """``pod`` placed on ``node`` (created with ``nodeName``; its status is made Running and Ready
        with a start time of its own, as a kubelet would report)."""
        pod["spec"]["nodeName"] = node["metadata"]["name"]
        self._started += 1
        pod["status"] = {
            "phase": "Running",
            "startTime": f"2026-01-01T00:{self._started // 60:02d}:{self._started % 60:02d}Z",
            "conditions": [{"type": "Ready", "status": "True"}],
        }
        self.bound.append(pod)
        return pod

    def random_bound(self, low: int = 0, high: int = 6, **kw: Any) -> None:
        for i in range(self.rng.randint(low, high)):
            app = self.pick(APPS)
            pod = self.pod(f"b{i}-{app}", labels={"app": app}, **kw)
            self.bind(pod, self.pick(self.nodes))

    def pending(self, pod: Obj) -> Obj:
        self.case.pending.append(pod)
        return pod

    def finish(self, extra: list[Obj] | None = None) -> Case:
        self.case.objects = [*self.nodes, *(extra or []), *self.bound]
        return self.case


# --- categories -------------------------------------------------------------------------------------
def _resources(g: Gen) -> Case:
    for _ in range(g.rng.randint(3, 8)):
        extra: dict[str, str] = {}
        if g.chance(0.3):
            extra["ephemeral-storage"] = g.pick(("10Gi", "50Gi"))
        if g.chance(0.3):
            extra[GPU] = str(g.rng.randint(1, 4))
        node = g.node(
            g.pick(("1", "2", "4", "8", "1500m")),
            g.pick(("2Gi", "4Gi", "8Gi", "16Gi", "3500Mi")),
            pods=g.pick((110, 110, 110, 3, 5)),
            zone=g.pick(("zone-a", "zone-b")),
            extra=extra,
        )
        if g.chance(0.3):
            node["status"]["images"] = [
                {
                    "names": [f"docker.io/library/{image}", image],
                    "sizeBytes": g.rng.randrange(10, 900) * 2**20,
                }
                for image in g.some(IMAGES, 1, 2)
            ]
    g.random_bound(0, 6)
    for j in range(g.rng.randint(1, 3)):
        g.pending(_resource_pod(g, f"p{j}"))
    return g.finish()


def _resource_pod(g: Gen, name: str) -> Obj:
    containers = []
    for i in range(g.rng.randint(1, 2)):
        requests = g.requests(cpu_max=2000, mem_max=4096, none=0.15)
        if g.chance(0.15):
            requests["ephemeral-storage"] = g.pick(("1Gi", "20Gi"))
        if g.chance(0.2):
            requests[GPU] = str(g.rng.randint(1, 2))
        container = g.container(f"c{i}")
        if requests:
            limits_only = g.chance(0.2) and GPU not in requests
            if limits_only:
                container["resources"] = {"limits": requests}
            elif GPU in requests:
                container["resources"] = {"requests": requests, "limits": {GPU: requests[GPU]}}
            else:
                container["resources"] = {"requests": requests}
        containers.append(container)
    spec: dict[str, Any] = {}
    if g.chance(0.15):
        spec["runtimeClassName"] = RUNTIME_CLASS  # admission sets the pod's overhead from it
    if g.chance(0.3):
        init = g.container("init", g.requests(cpu_max=4000, mem_max=4096, none=0.0))
        if g.chance(0.5):
            init["restartPolicy"] = "Always"  # a sidecar
        spec["initContainers"] = [init]
    if g.chance(0.15):  # pod-level requests: at least what every container asks (validation)
        every = [*containers, *spec.get("initContainers", [])]
        cpu = sum(_milli(c, "cpu") for c in every) + g.rng.randrange(0, 1000, 100)
        mem = sum(_mebi(c) for c in every) + g.rng.randrange(0, 1024, 64)
        spec["resources"] = {"requests": {"cpu": f"{max(cpu, 100)}m", "memory": f"{max(mem, 64)}Mi"}}
    return g.pod(name, containers, labels={"app": g.pick(APPS)}, **spec)


def _requests_of(container: Obj) -> dict[str, str]:
    resources = container.get("resources") or {}
    return {**(resources.get("limits") or {}), **(resources.get("requests") or {})}


def _milli(container: Obj, name: str) -> int:
    value = _requests_of(container).get(name, "0m")
    return int(value[:-1]) if value.endswith("m") else int(value) * 1000


def _mebi(container: Obj) -> int:
    value = _requests_of(container).get("memory", "0Mi")
    return int(value[:-2]) if value.endswith("Mi") else int(value[:-2]) * 1024


TAINT_KEYS = ("dedicated", "gpu", "spot")


def _taints(g: Gen) -> Case:
    g.random_nodes(3, 7)
    no_execute: set[str] = set()
    for node in g.nodes:
        for key in g.some(TAINT_KEYS, 0, 2):
            effect = g.pick(("NoSchedule", "NoSchedule", "PreferNoSchedule", "NoExecute"))
            g.taint(node, key, g.pick(("a", "b", "")), effect)
            if effect == "NoExecute":
                no_execute.add(node["metadata"]["name"])
        if g.chance(0.15):
            node["spec"]["unschedulable"] = True
    # bound pods tolerate every NoExecute taint: the taint eviction controller must leave them be
    everything = [{"operator": "Exists", "effect": "NoExecute"}]
    g.random_bound(0, 5, tolerations=everything)
    for j in range(g.rng.randint(1, 3)):
        tolerations = []
        for _ in range(g.rng.randint(0, 3)):
            t: Obj = {"key": g.pick(TAINT_KEYS)}
            if g.chance(0.3):
                t["operator"] = "Exists"
            else:
                t["operator"] = "Equal"
                t["value"] = g.pick(("a", "b", ""))
            if g.chance(0.7):
                t["effect"] = g.pick(("NoSchedule", "PreferNoSchedule", "NoExecute"))
                if t["effect"] == "NoExecute" and g.chance(0.3):
                    t["tolerationSeconds"] = 3600
            tolerations.append(t)
        if g.chance(0.05):
            tolerations.append({"operator": "Exists"})
        if g.chance(0.1):
            tolerations.append(
                {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"}
            )
        spec: Obj = {"tolerations": tolerations} if tolerations else {}
        g.pending(g.pod(f"p{j}", **spec))
    return g.finish()


def _expression(g: Gen, names: list[str]) -> Obj:
    key = g.pick(("disk", "tier", "region", ZONE, "gen"))
    op = g.pick(("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"))
    if op in ("Gt", "Lt"):
        return {"key": g.pick(("tier", "gen")), "operator": op, "values": [str(g.rng.randint(0, 5))]}
    if op in ("Exists", "DoesNotExist"):
        return {"key": key, "operator": op}
    values = {
        "disk": ("ssd", "hdd"),
        "tier": ("1", "2", "3"),
        "region": ("r1", "r2"),
        ZONE: ("zone-a", "zone-b", "zone-c"),
        "gen": ("1", "3", "5"),
    }[key]
    return {"key": key, "operator": op, "values": g.some(values, 1, 2)}


def _node_term(g: Gen, names: list[str]) -> Obj:
    term: Obj = {}
    if g.chance(0.85):
        term["matchExpressions"] = [_expression(g, names) for _ in range(g.rng.randint(1, 2))]
    if not term or g.chance(0.15):
        op = g.pick(("In", "NotIn"))
        term["matchFields"] = [{"key": "metadata.name", "operator": op, "values": g.some(names, 1, 1)}]
    return term


def _nodeaffinity(g: Gen) -> Case:
    g.random_nodes(3, 8)
    for node in g.nodes:
        for key, values in (
            ("disk", ("ssd", "hdd")),
            ("tier", ("1", "2", "3")),
            ("region", ("r1", "r2")),
            ("gen", ("1", "2", "3", "4", "5")),
        ):
            if g.chance(0.7):
                g.label(node, key, g.pick(values))
    names = [n["metadata"]["name"] for n in g.nodes]
    g.random_bound(0, 4)
    for j in range(g.rng.randint(1, 3)):
        spec: Obj = {}
        if g.chance(0.3):
            spec["nodeSelector"] = {"disk": g.pick(("ssd", "hdd"))}
        affinity: Obj = {}
        if g.chance(0.6):
            terms = [_node_term(g, names) for _ in range(g.rng.randint(1, 2))]
            affinity["requiredDuringSchedulingIgnoredDuringExecution"] = {"nodeSelectorTerms": terms}
        if g.chance(0.6):
            affinity["preferredDuringSchedulingIgnoredDuringExecution"] = [
                {"weight": g.rng.randint(1, 100), "preference": _node_term(g, names)}
                for _ in range(g.rng.randint(1, 3))
            ]
        if affinity:
            spec["affinity"] = {"nodeAffinity": affinity}
        g.pending(g.pod(f"p{j}", **spec))
    return g.finish()


def _ports(g: Gen) -> Case:
    g.random_nodes(3, 6)

    def ports() -> list[Obj]:
        out = []
        for port in g.some((80, 443, 8080), 1, 2):
            entry: Obj = {"containerPort": port, "hostPort": port}
            if g.chance(0.3):
                entry["protocol"] = g.pick(("UDP", "SCTP"))
            if g.chance(0.3):
                entry["hostIP"] = g.pick(("127.0.0.1", "10.1.2.3", "0.0.0.0"))
            out.append(entry)
        return out

    for i in range(g.rng.randint(1, 6)):
        pod = g.pod(f"b{i}", [g.container("c", g.requests(), ports=ports())])
        g.bind(pod, g.pick(g.nodes))
    for j in range(g.rng.randint(1, 3)):
        g.pending(g.pod(f"p{j}", [g.container("c", g.requests(), ports=ports())]))
    return g.finish()


def _pod_term(g: Gen, labels: dict[str, str]) -> Obj:
    key, value = g.pick(sorted(labels.items()))
    if g.chance(0.7):
        selector: Obj = {"matchLabels": {key: value}}
    else:
        selector = {
            "matchExpressions": [{"key": key, "operator": g.pick(("In", "NotIn")), "values": [value]}]
        }
    term: Obj = {"labelSelector": selector, "topologyKey": g.pick((HOSTNAME, ZONE, ZONE))}
    if g.chance(0.15):  # the API server merges the pod's own value of the key into labelSelector
        term[g.pick(("matchLabelKeys", "mismatchLabelKeys"))] = ["version"]
    if g.chance(0.2):
        term["namespaces"] = g.some(NAMESPACES, 1, 2)
    elif g.chance(0.2):
        term["namespaceSelector"] = g.pick(
            ({}, {"matchLabels": {"team": "a"}}, {"matchLabels": {"env": "dev"}})
        )
    return term


def _pod_affinity(g: Gen, kinds: tuple[str, ...] = ("podAffinity", "podAntiAffinity")) -> Obj:
    out: Obj = {}
    for kind in kinds:
        if not g.chance(0.6):
            continue
        terms: Obj = {}
        if g.chance(0.5):
            labels = {"app": g.pick(APPS), "tier": g.pick(("fe", "be"))}
            terms["requiredDuringSchedulingIgnoredDuringExecution"] = [_pod_term(g, labels)]
        if g.chance(0.6):
            terms["preferredDuringSchedulingIgnoredDuringExecution"] = [
                {
                    "weight": g.rng.randint(1, 100),
                    "podAffinityTerm": _pod_term(g, {"app": g.pick(APPS), "tier": g.pick(("fe", "be"))}),
                }
                for _ in range(g.rng.randint(1, 2))
            ]
        if terms:
            out[kind] = terms
    return out


def _interpod(g: Gen) -> Case:
    g.random_nodes(3, 7)
    for i in range(g.rng.randint(1, 6)):
        labels = {"app": g.pick(APPS), "tier": g.pick(("fe", "be")), "version": g.pick(("1", "2"))}
        spec: Obj = {}
        if g.chance(0.3):
            affinity = _pod_affinity(g)
            if affinity:
                spec["affinity"] = affinity
        g.bind(g.pod(f"b{i}", labels=labels, **spec), g.pick(g.nodes))
    for j in range(g.rng.randint(1, 3)):
        labels = {"app": g.pick(APPS), "tier": g.pick(("fe", "be")), "version": g.pick(("1", "2"))}
        affinity = _pod_affinity(g)
        spec = {"affinity": affinity} if affinity else {}
        g.pending(g.pod(f"p{j}", labels=labels, **spec))
    return g.finish()


def _spread_constraint(g: Gen, app: str, key: str | None = None) -> Obj:
    hard = g.chance(0.6)
    out: Obj = {
        "maxSkew": g.rng.randint(1, 3),
        "topologyKey": key or g.pick((ZONE, ZONE, HOSTNAME)),
        "whenUnsatisfiable": "DoNotSchedule" if hard else "ScheduleAnyway",
        "labelSelector": {"matchLabels": {"app": app}},
    }
    if hard and g.chance(0.3):
        out["minDomains"] = g.rng.randint(1, 5)
    if g.chance(0.25):
        out["nodeAffinityPolicy"] = g.pick(("Honor", "Ignore"))
    if g.chance(0.25):
        out["nodeTaintsPolicy"] = g.pick(("Honor", "Ignore"))
    if g.chance(0.2):
        out["matchLabelKeys"] = ["version"]
    return out


def _spread(g: Gen) -> Case:
    g.random_nodes(3, 8)
    for node in g.nodes:
        if g.chance(0.15):
            g.taint(node, "dedicated", "a", "NoSchedule")
    for i in range(g.rng.randint(0, 7)):
        app = g.pick(APPS)
        g.bind(g.pod(f"b{i}", labels={"app": app, "version": g.pick(("1", "2"))}), g.pick(g.nodes))
    for j in range(g.rng.randint(1, 3)):
        app = g.pick(APPS)
        constraints = [_spread_constraint(g, app, key) for key in g.some((ZONE, HOSTNAME), 1, 2)]
        spec: Obj = {"topologySpreadConstraints": constraints}
        if g.chance(0.2):
            spec["nodeSelector"] = {ZONE: g.pick(("zone-a", "zone-b"))}
        labels = {"app": app, "version": g.pick(("1", "2"))}
        g.pending(g.pod(f"p{j}", labels=labels, **spec))
    return g.finish()


def _preemption(g: Gen) -> Case:
    for _ in range(g.rng.randint(2, 5)):
        g.node(g.pick(("2", "2", "4")), g.pick(("4Gi", "8Gi")), zone=g.pick(("zone-a", "zone-b")))
    for i in range(g.rng.randint(2 * len(g.nodes), 3 * len(g.nodes))):  # the nodes mostly full
        app = g.pick(APPS)
        spec: Obj = {}
        if g.chance(0.8):
            spec["priorityClassName"] = g.pick(("low", "low", "mid"))
        requests = {
            "cpu": f"{g.rng.randrange(200, 1600, 100)}m",
            "memory": f"{g.rng.randrange(256, 3072, 256)}Mi",
        }
        pod = g.pod(f"b{i}-{app}", [g.container("c", requests)], labels={"app": app}, **spec)
        g.bind(pod, g.pick(g.nodes))
    pdbs = []
    for i, app in enumerate(g.some(APPS, 0, 2)):
        for ns in g.some(NAMESPACES, 1, 2):
            budget: Obj = {"selector": {"matchLabels": {"app": app}}}
            if g.chance(0.5):
                budget["minAvailable"] = g.rng.randint(0, 2)
            else:
                budget["maxUnavailable"] = g.rng.randint(0, 1)
            pdbs.append(
                {
                    "apiVersion": "policy/v1",
                    "kind": "PodDisruptionBudget",
                    "metadata": {"name": f"{g.prefix}-pdb{i}", "namespace": ns},
                    "spec": budget,
                }
            )
    priority = g.pick(("high", "high", "high", "high-never", "mid", None))
    spec = {"priorityClassName": priority} if priority else {}
    requests = {
        "cpu": f"{g.rng.randrange(500, 3000, 100)}m",
        "memory": f"{g.rng.randrange(256, 4096, 256)}Mi",
    }
    g.pending(g.pod("p0", [g.container("c", requests)], labels={"app": g.pick(APPS)}, **spec))
    return g.finish(pdbs)


def _profile(g: Gen) -> Obj:
    """A valid non-default profile: scoring strategies, weights, disabled score plugins, plugin args."""
    plugins: Obj = {}
    config: list[Obj] = []
    kind = g.pick(("LeastAllocated", "MostAllocated", "RequestedToCapacityRatio", None))
    if kind is not None:
        resources = [
            {"name": "cpu", "weight": g.rng.randint(1, 5)},
            {"name": "memory", "weight": g.rng.randint(1, 5)},
        ]
        strategy: Obj = {"type": kind, "resources": resources}
        if kind == "RequestedToCapacityRatio":
            low, high = g.pick(((0, 10), (10, 0), (0, 5)))
            strategy["requestedToCapacityRatio"] = {
                "shape": [{"utilization": 0, "score": low}, {"utilization": 100, "score": high}]
            }
        config.append({"name": "NodeResourcesFit", "args": {"scoringStrategy": strategy}})
    if g.chance(0.3):  # extended resources NodeResourcesFit leaves unchecked (the pods may ask for them)
        ignored = g.pick(
            ({"ignoredResources": [GPU]}, {"ignoredResourceGroups": [FPGA.split("/", maxsplit=1)[0]]})
        )
        fit = next((c for c in config if c["name"] == "NodeResourcesFit"), None)
        if fit is None:
            config.append({"name": "NodeResourcesFit", "args": ignored})
        else:
            fit["args"].update(ignored)
    if g.chance(0.3):
        config.append(
            {
                "name": "NodeResourcesBalancedAllocation",
                # upstream's validation: every weight must be 1
                "args": {"resources": [{"name": r, "weight": 1} for r in g.some(("cpu", "memory"), 1)]},
            }
        )
    if g.chance(0.3):
        config.append(
            {
                "name": "PodTopologySpread",
                "args": {
                    "defaultingType": "List",
                    "defaultConstraints": [
                        {
                            "maxSkew": g.rng.randint(1, 3),
                            "topologyKey": ZONE,
                            "whenUnsatisfiable": "ScheduleAnyway",
                        }
                    ],
                },
            }
        )
    if g.chance(0.3):
        config.append(
            {
                "name": "InterPodAffinity",
                "args": {
                    "hardPodAffinityWeight": g.rng.randint(0, 100),
                    "ignorePreferredTermsOfExistingPods": g.chance(0.5),
                },
            }
        )
    if g.chance(0.25):
        pref = {"matchExpressions": [{"key": "disk", "operator": "In", "values": ["ssd"]}]}
        added: Obj = {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": g.rng.randint(1, 100), "preference": pref}
            ]
        }
        if g.chance(0.4):
            term = {"matchExpressions": [{"key": "disk", "operator": "Exists"}]}
            added["requiredDuringSchedulingIgnoredDuringExecution"] = {"nodeSelectorTerms": [term]}
        config.append({"name": "NodeAffinity", "args": {"addedAffinity": added}})
    score_plugins = (
        "NodeResourcesFit",
        "NodeResourcesBalancedAllocation",
        "ImageLocality",
        "PodTopologySpread",
        "InterPodAffinity",
        "NodeAffinity",
        "TaintToleration",
    )
    weighted = g.some(score_plugins, 0, 3)
    disabled = [p for p in g.some(score_plugins, 0, 2) if p not in weighted]
    score: Obj = {}
    if weighted:
        score["enabled"] = [{"name": p, "weight": g.rng.randint(1, 10)} for p in weighted]
    if disabled:
        score["disabled"] = [{"name": p} for p in disabled]
    if score:
        plugins["score"] = score
    profile: Obj = {"schedulerName": f"cfg-{g.case.seed}-{g.case.index}"}
    if plugins:
        profile["plugins"] = plugins
    if config:
        profile["pluginConfig"] = config
    return profile


def _configs(g: Gen) -> Case:
    g.case.profile = _profile(g)
    g.random_nodes(3, 7)
    for node in g.nodes:
        if g.chance(0.5):
            g.label(node, "disk", g.pick(("ssd", "hdd")))
        if g.chance(0.15):
            g.taint(node, "dedicated", "a", "PreferNoSchedule")
        for extended in (GPU, FPGA):
            if g.chance(0.3):
                count = str(g.rng.randint(1, 2))
                node["status"]["allocatable"][extended] = node["status"]["capacity"][extended] = count
    for i in range(g.rng.randint(0, 6)):
        app = g.pick(APPS)
        spec: Obj = {}
        if g.chance(0.2):
            affinity = _pod_affinity(g)
            if affinity:
                spec["affinity"] = affinity
        g.bind(g.pod(f"b{i}-{app}", labels={"app": app, "tier": "fe"}, **spec), g.pick(g.nodes))
    for j in range(g.rng.randint(1, 3)):
        app = g.pick(APPS)
        spec = {}
        if g.chance(0.3):
            spec["affinity"] = _pod_affinity(g) or {}
            if not spec["affinity"]:
                del spec["affinity"]
        if g.chance(0.2):
            spec["topologySpreadConstraints"] = [_spread_constraint(g, app)]
        containers = [g.container("c", g.requests(cpu_max=2000, mem_max=4096))]
        if g.chance(0.3):  # an extended resource: on the nodes offering it, or anywhere if ignored
            wanted = {g.pick((GPU, FPGA)): "1"}
            containers[0]["resources"] = {
                "requests": {**containers[0].get("resources", {}).get("requests", {}), **wanted},
                "limits": wanted,
            }
        g.pending(g.pod(f"p{j}", containers, labels={"app": app, "tier": "fe"}, **spec))
    return g.finish()


def _images(g: Gen) -> Case:
    sizes = {image: g.rng.randrange(10, 1200) * 2**20 for image in IMAGES}
    for _ in range(g.rng.randint(3, 8)):
        node = g.node(
            g.pick(("2", "4", "8")), g.pick(("4Gi", "8Gi", "16Gi")), zone=g.pick(("zone-a", "zone-b"))
        )
        images = []
        for image in g.some(IMAGES, 0, 3):
            size = sizes[image] if g.chance(0.8) else g.rng.randrange(10, 1200) * 2**20
            names = [image] if ":" in image else [f"{image}:latest"]
            if g.chance(0.5):
                names.insert(0, f"docker.io/library/{names[0]}")
            images.append({"names": names, "sizeBytes": size})
        if images:
            node["status"]["images"] = images
    g.random_bound(0, 4)
    for j in range(g.rng.randint(1, 3)):
        containers = [g.container(f"c{i}", g.requests()) for i in range(g.rng.randint(1, 3))]
        spec: Obj = {}
        if g.chance(0.3):
            spec["initContainers"] = [g.container("init")]
        g.pending(g.pod(f"p{j}", containers, **spec))
    return g.finish()


def _defaultspread(g: Gen) -> Case:
    """System default spreading: the pods of Services and ReplicaSets spread by hostname and zone (the
    ReplicaSet controller does not run: it would adopt the pods and make or delete some)."""
    g.random_nodes(3, 8)
    extra: list[Obj] = []
    namespaces = ("default", "team-a")
    for i, app in enumerate(g.some(APPS, 1, 3)):
        ns = g.pick(namespaces)
        if g.chance(0.6):
            extra.append(
                {
                    "apiVersion": "v1",
                    "kind": "Service",
                    "metadata": {"name": f"{g.prefix}-svc{i}", "namespace": ns},
                    "spec": {"selector": {"app": app}, "ports": [{"port": 80}]},
                }
            )
        if g.chance(0.6):
            labels = {"app": app, "pod-template-hash": "h1"}
            extra.append(
                {
                    "apiVersion": "apps/v1",
                    "kind": "ReplicaSet",
                    "metadata": {"name": f"{g.prefix}-rs{i}", "namespace": ns},
                    "spec": {
                        "replicas": g.rng.randint(1, 3),
                        "selector": {"matchLabels": labels},
                        "template": {
                            "metadata": {"labels": labels},
                            "spec": {"containers": [{"name": "c", "image": "nginx:1.27"}]},
                        },
                    },
                }
            )
    for i in range(g.rng.randint(0, 8)):
        app = g.pick(APPS)
        pod = g.pod(
            f"b{i}-{app}", namespace=g.pick(namespaces), labels={"app": app, "pod-template-hash": "h1"}
        )
        g.bind(pod, g.pick(g.nodes))
    for j in range(g.rng.randint(1, 3)):
        app = g.pick(APPS)
        labels = {"app": app, "pod-template-hash": "h1"} if g.chance(0.7) else {"app": app}
        g.pending(g.pod(f"p{j}", namespace=g.pick(namespaces), labels=labels))
    return g.finish(extra)


GATE = "example.com/hold"
"""The scheduling gate of a ``sequences`` pod created gated (a later step removes it)."""
DISK = "disk"
"""A node label some ``sequences`` pods select and a later step may set."""


def _sequences(g: Gen) -> Case:
    """Timed events (``Case.steps``): 3-5 pods created one after another (some gated, their gate
    removed later), between them a node added, cordoned or relabelled, a pod deleted; each pod meets
    what the earlier ones and the events left, with requests, spreading, (anti-)affinity, host ports,
    tolerations and a node label to select mixed. A pod left unschedulable stays: a later event may
    make room for it. Some pods have a higher priority than the bound pods and the others: they
    preempt, bound pods and the case's own (which the harness starts as a kubelet would, with start
    times), and the later pods meet the nomination and the victims, terminating."""
    g.random_nodes(2, 4)
    for node in g.nodes:
        if g.chance(0.2):
            g.taint(node, "dedicated", "a", g.pick(("NoSchedule", "PreferNoSchedule")))
        if g.chance(0.3):
            g.label(node, DISK, "ssd")
    g.random_bound(0, 3, **({"priorityClassName": "low"} if g.chance(0.5) else {}))
    steps: list[Obj] = []
    created: list[str] = []
    gated: list[str] = []
    for j in range(g.rng.randint(3, 5)):
        app = g.pick(APPS)
        spec: Obj = {}
        if g.chance(0.3):
            spec["topologySpreadConstraints"] = [_spread_constraint(g, app)]
        if g.chance(0.3):
            affinity = _pod_affinity(g)
            if affinity:
                spec["affinity"] = affinity
        if g.chance(0.2):
            spec["tolerations"] = [{"key": "dedicated", "operator": "Exists"}]
        if g.chance(0.25):
            spec["nodeSelector"] = {DISK: "ssd"}
        if g.chance(0.25):
            spec["schedulingGates"] = [{"name": GATE}]
        if g.chance(0.3):
            spec["priorityClassName"] = g.pick(("mid", "high"))
        extra: Obj = {}
        if g.chance(0.2):
            extra["ports"] = [{"containerPort": 8080, "hostPort": 8080}]
        containers = [g.container("c", g.requests(cpu_max=3000, mem_max=6144), **extra)]
        pod = g.pending(g.pod(f"p{j}", containers, labels={"app": app, "tier": g.pick(("fe", "be"))}, **spec))
        steps.append({"op": CREATE, "pod": key_of(pod)})
        (gated if "schedulingGates" in spec else created).append(key_of(pod))
        for _ in range(g.rng.randint(0, 2) if j else 0):
            steps.append(_event(g, created, gated))
    steps += [{"op": UNGATE, "pod": p} for p in gated if g.chance(0.8)]
    if g.chance(0.5):
        steps.append(_event(g, created, []))
    g.case.steps = steps
    return g.finish()


def _event(g: Gen, created: list[str], gated: list[str]) -> Obj:
    """One event between two pods: a node added (sized to take a pod or two), a node cordoned or
    labelled ``disk=ssd``, a pod deleted (bound, or one created earlier), a gate removed."""
    kinds = [ADD_NODE, CORDON, LABEL, DELETE, *([UNGATE] if gated else [])]
    kind = g.pick(kinds)
    if kind == ADD_NODE:
        node = g.node(g.pick(("2", "4")), g.pick(("4Gi", "8Gi")), zone=g.pick(("zone-a", "zone-b", "zone-c")))
        g.nodes.remove(node)  # not part of the cluster at the start
        name = f"{g.prefix}-x{g.added}"
        g.added += 1
        node["metadata"]["name"] = name
        g.label(node, HOSTNAME, name)
        if g.chance(0.4):
            g.label(node, DISK, "ssd")
        return {"op": ADD_NODE, "node": node}
    if kind == UNGATE:
        pod = gated.pop(g.rng.randrange(len(gated)))
        created.append(pod)
        return {"op": UNGATE, "pod": pod}
    if kind == DELETE:
        pods = [*created, *(key_of(p) for p in g.bound)]
        if pods:
            pod = g.pick(pods)
            if pod in created:
                created.remove(pod)
            return {"op": DELETE, "pod": pod}
    node_name = g.pick(g.nodes)["metadata"]["name"]
    if kind == CORDON:
        return {"op": CORDON, "node": node_name}
    return {"op": LABEL, "node": node_name, "labels": {DISK: "ssd"}}


DRIVER = "csi.example.com"
ACCESS_MODES = ("ReadWriteOnce", "ReadWriteOnce", "ReadWriteMany", "ReadOnlyMany", "ReadWriteOncePod")


CAPACITY_DRIVER = "capacity.csi.example.com"
"""The CSI driver whose storage capacity the scheduler checks (``storageCapacity: true``)."""
CAPACITIES = 0.4
"""How often a ``volumes`` case has a class whose volumes the scheduler provisions by capacity."""


def _capacities(g: Gen, zones: tuple[str, ...]) -> list[Obj]:
    """Storage capacity tracking: the CSIDriver of :data:`CAPACITY_DRIVER`, its WaitForFirstConsumer
    class, and its CSIStorageCapacity per zone (some zones none, some with a largest volume size
    below the capacity): a claim of that class with no volume fits only where a capacity of the class
    holds its size."""
    name = f"{g.prefix}-cap"
    out: list[Obj] = [
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "CSIDriver",
            "metadata": {"name": CAPACITY_DRIVER},
            "spec": {"storageCapacity": True, "attachRequired": False},
        },
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "StorageClass",
            "metadata": {"name": name},
            "provisioner": CAPACITY_DRIVER,
            "volumeBindingMode": "WaitForFirstConsumer",
        },
    ]
    for zone in g.some(zones, 1):
        capacity: Obj = {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "CSIStorageCapacity",
            "metadata": {"name": f"{name}-{zone}", "namespace": g.pick(NAMESPACES)},
            "storageClassName": name,
            "nodeTopology": {"matchLabels": {ZONE: zone}},
            "capacity": g.pick(("2Gi", "5Gi", "10Gi", "20Gi")),
        }
        if g.chance(0.3):
            capacity["maximumVolumeSize"] = g.pick(("3Gi", "6Gi"))
        out.append(capacity)
    return out


def _volume(g: Gen, name: str, storage_class: str, zones: tuple[str, ...]) -> Obj:
    pv: Obj = {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": name},
        "spec": {
            "capacity": {"storage": f"{g.rng.randint(1, 10)}Gi"},
            "accessModes": [g.pick(ACCESS_MODES)],
            "storageClassName": storage_class,
            "persistentVolumeReclaimPolicy": "Retain",
            "csi": {"driver": DRIVER, "volumeHandle": name},
        },
    }
    zone = g.pick(zones)
    if g.chance(0.7):
        term = {"matchExpressions": [{"key": ZONE, "operator": "In", "values": [zone]}]}
        pv["spec"]["nodeAffinity"] = {"required": {"nodeSelectorTerms": [term]}}
    if g.chance(0.3):
        pv["metadata"]["labels"] = {ZONE: zone}
    return pv


def _volumes(g: Gen) -> Case:
    """PersistentVolumes and claims: bound and unbound, Immediate and WaitForFirstConsumer classes,
    volume node affinity and zone labels, CSI volume limits (CSINode), storage capacities
    (CSIStorageCapacity), ReadWriteOncePod. One pending
    pod: a later one would meet the volumes the first one's binding made."""
    zones = ("zone-a", "zone-b", "zone-c")
    for _ in range(g.rng.randint(3, 6)):
        g.node(g.pick(("2", "4")), g.pick(("4Gi", "8Gi")), zone=g.pick(zones))
    extra: list[Obj] = []
    for node in g.nodes:
        if g.chance(0.6):
            name = node["metadata"]["name"]
            driver = {"name": DRIVER, "nodeID": name, "allocatable": {"count": g.rng.randint(1, 3)}}
            extra.append(
                {
                    "apiVersion": "storage.k8s.io/v1",
                    "kind": "CSINode",
                    "metadata": {"name": name},
                    "spec": {"drivers": [driver]},
                }
            )
    classes = {f"{g.prefix}-wffc": "WaitForFirstConsumer", f"{g.prefix}-now": "Immediate"}
    for name, mode in classes.items():
        sc: Obj = {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "StorageClass",
            "metadata": {"name": name},
            "provisioner": DRIVER,
            "volumeBindingMode": mode,
        }
        if mode == "WaitForFirstConsumer" and g.chance(0.3):
            allowed = [{"key": ZONE, "values": g.some(zones, 1, 2)}]
            sc["allowedTopologies"] = [{"matchLabelExpressions": allowed}]
        extra.append(sc)
    if g.chance(CAPACITIES):
        extra += _capacities(g, zones)
        classes[f"{g.prefix}-cap"] = "WaitForFirstConsumer"
    # Nothing may depend on the PersistentVolume controller's timing (with --pipeline, two clusters
    # must end up alike): free volumes are of the WaitForFirstConsumer class (the scheduler binds
    # them), an Immediate claim's volume is made for it (claimRef), a claim names a volume of its own.
    wffc, now, *capacity = classes
    pvs = [_volume(g, f"{g.prefix}-pv{i}", wffc, zones) for i in range(g.rng.randint(0, 5))]
    free = list(pvs)
    ns = g.pick(NAMESPACES)
    claims = []
    for i in range(g.rng.randint(1, 4)):
        cls = wffc if g.chance(0.75) else now
        if capacity and g.chance(0.5):
            cls = capacity[0]
        mode = g.pick(ACCESS_MODES)
        size = g.rng.randint(1, 8)
        claim: Obj = {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": f"{g.prefix}-claim{i}", "namespace": ns},
            "spec": {
                "storageClassName": cls,
                "accessModes": [mode],
                "resources": {"requests": {"storage": f"{size}Gi"}},
            },
        }
        if cls == now and g.chance(0.8):  # mostly a volume the PersistentVolume controller binds it to
            pv = _volume(g, f"{g.prefix}-pv{len(pvs)}", now, zones)
            pv["spec"].update(accessModes=[mode], capacity={"storage": f"{size + 1}Gi"})
            pv["spec"]["claimRef"] = {"namespace": ns, "name": claim["metadata"]["name"]}
            pvs.append(pv)
        elif free and g.chance(0.2):
            claim["spec"]["volumeName"] = free.pop(g.rng.randrange(len(free)))["metadata"]["name"]
        claims.append(claim)
    names = [c["metadata"]["name"] for c in claims]

    def volumes(low: int, high: int) -> list[Obj]:
        return [
            {"name": f"v{i}", "persistentVolumeClaim": {"claimName": c}}
            for i, c in enumerate(g.some(names, low, high))
        ]

    for i in range(g.rng.randint(0, 3)):
        pod = g.pod(f"b{i}", namespace=ns, volumes=volumes(0, 1))
        g.bind(pod, g.pick(g.nodes))
    spec: Obj = {"volumes": volumes(1, 2)}
    if g.chance(0.05):
        spec["volumes"].append(
            {"name": "missing", "persistentVolumeClaim": {"claimName": f"{g.prefix}-none"}}
        )
    g.pending(g.pod("p0", namespace=ns, **spec))
    return g.finish([*extra, *pvs, *claims])


GPU_DRIVER = "gpu.example.com"
GPU_MODELS = {"t4": "16Gi", "a100": "40Gi", "h100": "80Gi"}


PARTITIONED = 0.35
"""How often a ``dra`` node has a pool of partitionable devices (:func:`_partitioned`)."""
SHARED = 0.3
"""How often a ``dra`` node has a device that serves several claims (:func:`_shared`)."""
SHARED_MODEL = "l4"
"""The model of the shared devices, which a claim's selector asks for now and then."""


def device_slice(node: str, pool: str, count: int, suffix: str = "gpu", **spec: Any) -> Obj:
    """A ResourceSlice of the GPU driver on ``node``, one of ``count`` in ``pool`` (generation 1)."""
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": f"{node}-{suffix}"},
        "spec": {
            "driver": GPU_DRIVER,
            "nodeName": node,
            "pool": {"name": pool, "generation": 1, "resourceSliceCount": count},
            **spec,
        },
    }


def _partitioned(g: Gen, node: str) -> list[Obj]:
    """A pool of partitionable devices on ``node`` (DRAPartitionableDevices): one slice of shared
    counters (one or two GPUs' memory, now and then less than a whole GPU takes) and one of devices
    that consume them: per GPU the whole of it and its halves, in an order of their own. A claim gets
    the whole or halves; the whole and a half of one GPU never fit together."""
    counters, devices = [], []
    for i in range(g.rng.randint(1, 2)):
        counters.append(
            {"name": f"gpu{i}", "counters": {"memory": {"value": g.pick(("40Gi", "40Gi", "30Gi"))}}}
        )
        parts = [("whole", "40Gi"), ("half0", "20Gi"), ("half1", "20Gi")]
        g.rng.shuffle(parts)
        for part, size in parts:
            devices.append(
                {
                    "name": f"gpu{i}-{part}",
                    "attributes": {"model": {"string": "a100"}, "index": {"int": i}},
                    "capacity": {"memory": {"value": size}},
                    "consumesCounters": [{"counterSet": f"gpu{i}", "counters": {"memory": {"value": size}}}],
                }
            )
    pool = f"{node}-part"
    return [
        device_slice(node, pool, 2, "part-counters", sharedCounters=counters),
        device_slice(node, pool, 2, "part-devices", devices=devices),
    ]


def _shared(g: Gen, node: str) -> Obj:
    """A slice on ``node`` with a device several claims share (DRAConsumableCapacity:
    ``allowMultipleAllocations``), its memory consumed as the claims' capacity requests and its
    request policy (none, a list of valid values, a range with a step) say."""
    memory: Obj = {"value": "16Gi"}
    policy = g.pick(("none", "values", "range"))
    if policy == "values":
        memory["requestPolicy"] = {"default": "4Gi", "validValues": ["4Gi", "8Gi", "16Gi"]}
    elif policy == "range":
        memory["requestPolicy"] = {
            "default": "4Gi",
            "validRange": {"min": "2Gi", "max": "8Gi", "step": "2Gi"},
        }
    device = {
        "name": "shared-0",
        "allowMultipleAllocations": True,
        "attributes": {"model": {"string": SHARED_MODEL}, "index": {"int": 0}},
        "capacity": {"memory": memory},
    }
    return device_slice(node, f"{node}-shared", 1, "shared", devices=[device])


def _claim(g: Gen, name: str, ns: str, classes: tuple[str, str], sharing: bool = False) -> Obj:
    """A ResourceClaim of one request: a count of devices, all of them, one with a model selector,
    or a prioritized list (``firstAvailable``); now and then with a capacity request (memory), which
    a shared device's policy rounds up and a device of less memory refuses. ``sharing``: mostly
    one shared device (:func:`_shared`), with a capacity request."""
    gpu, big = classes
    shape = "shared" if sharing and g.chance(0.8) else g.pick(("count", "count", "all", "selector", "first"))
    request: Obj = {"name": "gpu"}
    if shape == "first":
        request["firstAvailable"] = [
            {"name": "big", "deviceClassName": big, "count": 1},
            {"name": "any", "deviceClassName": gpu, "count": g.rng.randint(1, 2)},
        ]
    else:
        exactly: Obj = {"deviceClassName": gpu if shape == "shared" else g.pick(classes)}
        if shape == "all":
            exactly["allocationMode"] = "All"
        else:
            exactly["count"] = 1 if shape == "shared" and g.chance(0.8) else g.rng.randint(1, 2)
        if shape in ("selector", "shared"):
            model = SHARED_MODEL if shape == "shared" else g.pick((*GPU_MODELS, SHARED_MODEL))
            expression = f'device.attributes["{GPU_DRIVER}"].model == "{model}"'
            exactly["selectors"] = [{"cel": {"expression": expression}}]
        if g.chance(0.9 if shape == "shared" else 0.2):
            exactly["capacity"] = {
                "requests": {"memory": g.pick(("1Gi", "3Gi", "4Gi", "6Gi", "10Gi", "20Gi"))}
            }
        request["exactly"] = exactly
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"devices": {"requests": [request]}},
    }


def _claiming_pod(
    g: Gen, name: str, ns: str, claims: list[str], templates: tuple[str, ...] | list[str] = (), **spec: Any
) -> Obj:
    refs = [{"name": f"r{i}", "resourceClaimName": c} for i, c in enumerate(claims)]
    refs += [{"name": f"t{i}", "resourceClaimTemplateName": t} for i, t in enumerate(templates)]
    container = g.container("c", g.requests())
    container.setdefault("resources", {})["claims"] = [{"name": r["name"]} for r in refs]
    return g.pod(name, [container], namespace=ns, resourceClaims=refs, **spec)


def _dra(g: Gen) -> Case:
    """Dynamic Resource Allocation (resource.k8s.io/v1): a DeviceClass by driver and one by capacity, a
    ResourceSlice of GPUs on most nodes, partitionable devices and devices shared by several claims
    on some, claims by name (a count, all, a CEL selector on the model, a prioritized list, a
    capacity request), devices already allocated to pods the scheduler placed first, a claim shared
    with such a pod, a claim made from a template, an extended resource a DeviceClass backs (some
    nodes offering it from a device plugin instead). One pending pod: its claims' allocation (node and
    devices) is compared too."""
    extended = g.chance(EXTENDED)
    for _ in range(g.rng.randint(3, 5)):
        plugin = {GPU: "2"} if extended and g.chance(0.3) else None  # a device plugin's GPUs
        g.node(g.pick(("4", "8")), g.pick(("8Gi", "16Gi")), zone=g.pick(("zone-a", "zone-b")), extra=plugin)
    gpu, big = f"{g.prefix}-gpu", f"{g.prefix}-big"
    extra: list[Obj] = [
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "DeviceClass",
            "metadata": {"name": gpu},
            "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{GPU_DRIVER}"'}}]},
        },
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "DeviceClass",
            "metadata": {"name": big},
            "spec": {
                "selectors": [
                    {
                        "cel": {
                            "expression": f'device.driver == "{GPU_DRIVER}" && '
                            f'device.capacity["{GPU_DRIVER}"].memory.compareTo(quantity("40Gi")) >= 0'
                        }
                    }
                ]
            },
        },
    ]
    for node in g.nodes:
        name = node["metadata"]["name"]
        if g.chance(0.8):
            model = g.pick(GPU_MODELS)
            devices = [
                {
                    "name": f"gpu-{i}",
                    "attributes": {"model": {"string": model}, "index": {"int": i}},
                    "capacity": {"memory": {"value": GPU_MODELS[model]}},
                }
                for i in range(g.rng.randint(1, 4))
            ]
            extra.append(device_slice(name, name, 1, devices=devices))
        if g.chance(PARTITIONED):
            extra += _partitioned(g, name)
        if g.chance(SHARED):
            extra.append(_shared(g, name))
    ns = g.pick(NAMESPACES)
    sharers = [s["spec"]["nodeName"] for s in extra if s["metadata"]["name"].endswith("-shared")]
    sharing = bool(sharers) and g.chance(0.5)  # the claims mostly ask for a shared device
    count = g.rng.randint(1, 4)
    claims = [_claim(g, f"{g.prefix}-claim{i}", ns, (gpu, big), sharing) for i in range(count)]
    names = [c["metadata"]["name"] for c in claims]
    used: list[str] = []
    for i in range(g.rng.randint(0, 2)):  # placed by the scheduler: their claims get allocated
        claim = names[i % len(names)]
        used.append(claim)
        pin = {HOSTNAME: g.pick(sharers) if sharing else g.pick(g.nodes)["metadata"]["name"]}
        g.case.preplaced.append(_claiming_pod(g, f"b{i}", ns, [claim], nodeSelector=pin))
    g.random_bound(0, 3)
    free = [n for n in names if n not in used]
    mine = g.some(free, 1, 2) if free else []
    if used and (not mine or g.chance(0.2)):
        mine.append(g.pick(used))  # a claim shared with a placed pod
    templates: list[Obj] = []
    if g.chance(TEMPLATED):  # the claim the resourceclaim controller makes for the pod
        claim = _claim(g, f"{g.prefix}-tmpl", ns, (gpu, big), sharing)
        templates.append({**claim, "kind": "ResourceClaimTemplate", "spec": {"spec": claim["spec"]}})
        mine = mine[: g.rng.randint(0, 1)]
    names = [t["metadata"]["name"] for t in templates]
    pod = g.pending(_claiming_pod(g, "p0", ns, mine, names))
    if extended:  # the scheduler makes a claim for it, on a node that does not offer it
        extra[0]["spec"]["extendedResourceName"] = GPU
        name = g.pick((GPU, GPU, DEVICE_CLASS_RESOURCE_PREFIX + gpu, DEVICE_CLASS_RESOURCE_PREFIX + big))
        wanted = str(g.rng.randint(1, 2))
        resources = pod["spec"]["containers"][0].setdefault("resources", {})
        resources.setdefault("requests", {})[name] = wanted
        resources["limits"] = {name: wanted}
    return g.finish([*extra, *claims, *templates])


EXTENDED = 0.3
"""How often a ``dra`` case's pending pod asks for an extended resource a DeviceClass backs."""
TEMPLATED = 0.3
"""How often a ``dra`` case's pending pod has a claim made from a ResourceClaimTemplate."""


GROUP_API = "scheduling.k8s.io/v1alpha2"


def _gangs(g: Gen) -> Case:
    """One PodGroup, now and then a second one decided after it (:func:`_gang`); bound pods take some
    of the room. The members of a group are created at once and the group after them (the case's
    ``groups``)."""
    for _ in range(g.rng.randint(2, 5)):
        g.node(
            g.pick(("2", "3", "4", "6", "1500m")),
            g.pick(("4Gi", "8Gi", "16Gi")),
            pods=g.pick((110, 110, 110, 3)),
            zone=g.pick(("zone-a", "zone-b")),
        )
    g.random_bound(0, 4)
    extra = _gang(g, "pg", "p")
    if g.chance(SECOND_GROUP):
        extra += _gang(g, "pg2", "q")
    return g.finish(extra)


SECOND_GROUP = 0.3
"""How often a ``gangs`` case has a second PodGroup, decided once the first one is."""


def _gang(g: Gen, suffix: str, member: str) -> list[Obj]:
    """A PodGroup ``PREFIX-SUFFIX`` (mostly the gang policy with a minCount, now and then the basic
    one) whose members (``MEMBER0``...) are alike, as a controller makes them from one template,
    appended to the case; what else it needs made first (a Workload)."""
    ns = g.pick(NAMESPACES)
    name = f"{g.prefix}-{suffix}"
    min_count = g.rng.randint(1, 4)
    members = min_count + g.pick((0, 0, 1, 2))
    policy: Obj = {"gang": {"minCount": min_count}} if g.chance(0.85) else {"basic": {}}
    container = g.container("c", g.requests(cpu_max=2500, mem_max=6144, none=0.05))
    spec: dict[str, Any] = {"schedulingGroup": {"podGroupName": name}}
    labels = {"app": "gang", "group": name}
    if g.chance(0.2):
        spec["nodeSelector"] = {ZONE: g.pick(("zone-a", "zone-b"))}
    if g.chance(0.2):  # at most one member per node
        term = {"labelSelector": {"matchLabels": {"group": name}}, "topologyKey": HOSTNAME}
        spec["affinity"] = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
    if g.chance(0.2):
        spec["topologySpreadConstraints"] = [
            {
                "maxSkew": 1,
                "topologyKey": ZONE,
                "whenUnsatisfiable": g.pick(("DoNotSchedule", "ScheduleAnyway")),
                "labelSelector": {"matchLabels": {"group": name}},
            }
        ]
    if g.chance(0.3):  # above the bound pods: a member that does not fit preempts in the group's cycle
        spec["priorityClassName"] = "high"
    for j in range(members):
        g.pending(
            g.pod(
                f"{member}{j}",
                [copy.deepcopy(container)],
                namespace=ns,
                labels=dict(labels),
                **copy.deepcopy(spec),
            )
        )
    group_spec: Obj = {"schedulingPolicy": policy}
    extra: list[Obj] = []
    if g.chance(0.3):  # made from a Workload's template, as a workload's controller makes it
        workload_name = f"{name}-wl"
        template = {"name": "workers", "schedulingPolicy": copy.deepcopy(policy)}
        extra.append(
            {
                "apiVersion": GROUP_API,
                "kind": "Workload",
                "metadata": {"name": workload_name, "namespace": ns},
                "spec": {"podGroupTemplates": [template]},
            }
        )
        ref = {"workloadName": workload_name, "podGroupTemplateName": "workers"}
        group_spec["podGroupTemplateRef"] = {"workload": ref}
    g.case.groups.append(
        {
            "apiVersion": GROUP_API,
            "kind": "PodGroup",
            "metadata": {"name": name, "namespace": ns},
            "spec": group_spec,
        }
    )
    return extra


EXTENDER_MESSAGES = {
    "fail": ("node is draining", "no licence left on the node", "rack over its power budget"),
    "unresolvable": ("node is in a retired rack",),
    "bind": ("node agent did not confirm the pod", "binding quota exhausted"),
}


def _preempt_plan(g: Gen, name: str, names: list[str]) -> Obj:
    """What extender ``name``'s preempt verb answers: candidates dropped, PDB violations counted
    otherwise, a victim more (a bound pod of the node, ``ns/name`` until the harness creates the pod;
    now and then one of another node, which upstream refuses: the preemption fails); it may fail
    (HTTP 500), or leave a candidate without victims (an ignorable one's is dropped; a
    non-ignorable one's ends the preemption with an error)."""
    the_plan: Obj = {}
    if EXTENDERS[name].get("ignorable"):
        if g.chance(0.15):
            the_plan["error"] = f"ext-{name}: preemption backend unavailable"
        if g.chance(0.3):
            the_plan["empty"] = g.some(names, 1, 2)
    elif g.chance(0.08):  # a non-ignorable one's failure ends the preemption with its error
        the_plan["error"] = f"ext-{name}: preemption backend unavailable"
    elif g.chance(0.08):  # so does a candidate it leaves without victims
        the_plan["empty"] = g.some(names, 1, 1)
    if g.chance(0.6):
        the_plan["drop"] = g.some(names, 1, max(1, len(names) - 1))
    on_node: dict[str, list[str]] = {}
    for pod in g.bound:
        on_node.setdefault(pod["spec"]["nodeName"], []).append(key_of(pod))
    if on_node and g.chance(0.3):  # a victim more than it was sent: a bound pod of the candidate
        node = g.pick(sorted(on_node))
        the_plan["add"] = {node: g.some(on_node[node], 1, 1)}
    elif len(on_node) > 1 and g.chance(0.1):  # or of another node: upstream fails the preemption
        node = g.pick(sorted(on_node))
        other = g.pick(sorted(n for n in on_node if n != node))
        the_plan["add"] = {node: g.some(on_node[other], 1, 1)}
    if g.chance(0.5):
        the_plan["pdb"] = {node: g.rng.randint(0, 2) for node in g.some(names, 1)}
    return the_plan


def _extenders(g: Gen) -> Case:
    """The harness's own extenders (``ksched.differential.extender``): each pending pod requests the
    managed resource of one to three of them and carries, in its annotation, what each answers (nodes
    refused, some unresolvably, with a message per node; scores 0-10; an ignorable one's error; the
    resource of an ``ignoredByScheduler`` one on half the nodes only; for a
    pod of priority ``high``, now and then what their preempt verb makes of its candidates; verbs
    answered only after the extender's timeout; the binder's failure, an error or HTTP 500)."""
    for _ in range(g.rng.randint(2, 6)):
        # an ignoredByScheduler resource is advertised by half the nodes: the others fit all the same
        extra = {resource(name): "4" for name in MANAGED if g.chance(0.5 if name in IGNORED else 0.9)}
        g.node(
            g.pick(("1", "2", "4", "8")),
            g.pick(("2Gi", "4Gi", "8Gi", "16Gi")),
            zone=g.pick(("zone-a", "zone-b")),
            extra=extra,
        )
    g.random_bound(1, 2 * len(g.nodes) + 1, priorityClassName="low")  # full enough to preempt at times
    names = [str(n["metadata"]["name"]) for n in g.nodes]
    for j in range(g.rng.randint(1, 3)):
        chosen = g.some(MANAGED, 1)
        plans: Obj = {}
        for name in chosen:
            spec = EXTENDERS[name]
            the_plan: Obj = {}
            if "filterVerb" in spec:
                if g.chance(0.2 if spec.get("ignorable") else 0.06):  # a's: the attempt fails with it
                    the_plan["error"] = f"ext-{name}: backend unavailable"
                refused = g.some(names, 0, len(names))
                for node in refused:
                    kind = "unresolvable" if g.chance(0.2) else "fail"
                    the_plan.setdefault(kind, {})[node] = f"ext-{name}: {g.pick(EXTENDER_MESSAGES[kind])}"
            if name == BINDER and g.chance(0.35):  # else it binds the pod
                if g.chance(0.7):
                    the_plan["bind"] = {"error": f"ext-{name}: {g.pick(EXTENDER_MESSAGES['bind'])}"}
                else:
                    the_plan["bind"] = {"refuse": f"ext-{name}: binding backend unavailable"}
            if "prioritizeVerb" in spec:
                the_plan["scores"] = {node: g.rng.randint(0, 10) for node in names if g.chance(0.8)}
            if "httpTimeout" in spec and g.chance(0.3 if spec.get("ignorable") else 0.06):  # too late
                the_plan["slow"] = g.some([v for v in ("filter", "prioritize") if f"{v}Verb" in spec], 1)
            plans[name] = the_plan
        wanted = {resource(name): "1" for name in chosen}
        requests = {**g.requests(cpu_max=3000, mem_max=4096), **wanted}
        container = g.container("c")
        container["resources"] = {"requests": requests, "limits": wanted}
        spec_extra: Obj = {"priorityClassName": "high"} if g.chance(0.3) else {}
        if spec_extra:  # it may preempt: the extenders' preempt verb narrows the candidates
            for name in chosen:
                if "preemptVerb" in EXTENDERS[name] and g.chance(0.6):
                    plans[name]["preempt"] = _preempt_plan(g, name, names)
        pod = g.pod(f"p{j}", [container], labels={"app": g.pick(APPS)}, **spec_extra)
        plans.update(_every_pod_plans(g, j, names))
        pod["metadata"]["annotations"] = {ANNOTATION: json.dumps(plans, sort_keys=True)}
        g.pending(pod)
    return g.finish()


def _every_pod_plans(g: Gen, j: int, names: list[str]) -> Obj:
    """Now and then a plan for each extender interested in every pod (nodes refused, scores), drawn
    from a random source of its own, so the rest of a case is what it was before these extenders
    (a seed's cases, and the commands that play them again, stay the same)."""
    rng = random.Random(f"{g.case.category}/{g.case.seed}/{g.case.index}/{j}/every-pod")
    out: Obj = {}
    for name in sorted(EVERY_POD):
        if rng.random() >= 0.5:
            continue
        the_plan: Obj = {"scores": {node: rng.randint(0, 10) for node in names if rng.random() < 0.8}}
        if rng.random() < 0.3:
            refused = rng.sample(names, rng.randint(1, len(names)))
            for node in refused:
                kind = "unresolvable" if rng.random() < 0.2 else "fail"
                the_plan.setdefault(kind, {})[node] = f"ext-{name}: {rng.choice(EXTENDER_MESSAGES[kind])}"
        out[name] = the_plan
    return out


GENERATORS: dict[str, Callable[[Gen], Case]] = {
    "resources": _resources,
    "taints": _taints,
    "nodeaffinity": _nodeaffinity,
    "ports": _ports,
    "interpod": _interpod,
    "spread": _spread,
    "preemption": _preemption,
    "configs": _configs,
    "images": _images,
    "defaultspread": _defaultspread,
    "sequences": _sequences,
    "volumes": _volumes,
    "dra": _dra,
    "gangs": _gangs,
    "extenders": _extenders,
}
CATEGORIES = tuple(GENERATORS)


def generate(category: str, seed: int, index: int) -> Case:
    """Case ``index`` of ``category`` for ``seed`` (the same every time)."""
    return GENERATORS[category](Gen(category, seed, index))


def generate_cases(n: int, seed: int, categories: tuple[str, ...] = CATEGORIES) -> list[Case]:
    """``n`` cases taking the categories in turn."""
    return [generate(categories[i % len(categories)], seed, i) for i in range(n)]
