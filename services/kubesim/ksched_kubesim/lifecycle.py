"""KWOK-style controllers standing in for kubelets and kube-controller-manager.

* nodes registered without conditions become Ready;
* a pod bound to an existing node turns Running (IPs, start time, container statuses) after a delay;
* a pod deleted with a grace period is removed once the period (times ``time_scale``) has passed;
* a deleted namespace has its content deleted, then is finalized (namespace controller);
* PV/PVC protection finalizers are released on deletion;
* a deleted PodGroup's protection finalizer is removed once no unfinished pod names it
  (``podgroup_protection``);
* PodDisruptionBudget status is kept up to date (disruption controller);
* PVs and PVCs are bound, provisioned and released (PV controller, ``pv_controller``; off by default
  in the Python API, on in ``ksched kubesim``);
* ResourceClaims are created from templates for pods, released when their pods end and deleted with
  them (resourceclaim controller, ``claim_controller``);
* Deployments, ReplicaSets, StatefulSets and Jobs make their ReplicaSets, ControllerRevisions and
  pods (``workloads``), and the garbage collector deletes or orphans what deleted owners owned
  (``garbage_collector``).

Controllers react to store changes through a listener and act later via the event loop, never
inside the write that triggered them.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
from dataclasses import dataclass
from typing import Any

from ksched.api.timestamps import rfc3339
from ksched.apimachinery.labels import Selector, SelectorError

from .claim_controller import CLAIMS, TEMPLATES, ResourceClaimController
from .errors import ApiError
from .garbage_collector import GarbageCollector, OwnerIndex
from .jsonio import JSON
from .managed_fields import CONTROLLER_MANAGER, KUBELET_MANAGER
from .podgroup_protection import POD_GROUPS, PodGroupProtection
from .pods import set_condition
from .pv_controller import STORAGE_CLASSES, PersistentVolumeController
from .registry import NAMESPACES, NODES, PDBS, PODS, DeleteOptions, Registry
from .resources import BY_KEY
from .selectors import label_selector_of
from .store import Change, Table
from .strategies import normalize_node_status
from .workloads import WorkloadControllers

PVS = BY_KEY["persistentvolumes"]
PVCS = BY_KEY["persistentvolumeclaims"]
PROTECTION_FINALIZERS = ("kubernetes.io/pv-protection", "kubernetes.io/pvc-protection")


@dataclass(slots=True)
class LifecycleSettings:
    enabled: bool = True
    #: seconds from binding until a pod reports Running
    pod_start_delay: float = 1.0
    #: multiplies deletion grace periods (0.01 turns 30 s into 0.3 s)
    time_scale: float = 1.0
    disruption_controller: bool = True
    #: bind PVs and PVCs, provision volumes (see ``pv_controller``)
    pv_controller: bool = False
    #: seconds from a PV/PVC/StorageClass change until the PV controller reacts
    pv_bind_delay: float = 0.1
    #: create claims from templates, release and delete them (see ``claim_controller``)
    claim_controller: bool = True
    #: the Deployment, ReplicaSet, StatefulSet and Job controllers and the garbage collector
    workload_controllers: bool = True


def _node_conditions(now: str) -> list[JSON]:
    def cond(kind: str, status: str, reason: str, message: str) -> JSON:
        return {
            "type": kind,
            "status": status,
            "lastHeartbeatTime": now,
            "lastTransitionTime": now,
            "reason": reason,
            "message": message,
        }

    return [
        cond(
            "MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"
        ),
        cond("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
        cond("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
        cond("Ready", "True", "KubeletReady", "kubelet is posting ready status"),
    ]


class Lifecycle:
    """Reacts to changes in the store like the missing cluster components would."""

    def __init__(self, registry: Registry, settings: LifecycleSettings) -> None:
        self.registry = registry
        self.settings = settings
        self._timers: dict[tuple[str, str, str, str], asyncio.TimerHandle] = {}
        self._next_ip: dict[str, int] = {}
        self._dirty_budgets: set[str] = set()
        self._budget_timer: asyncio.TimerHandle | None = None
        self.volumes = (
            PersistentVolumeController(registry, settings.pv_bind_delay, self._later)
            if settings.pv_controller
            else None
        )
        self.pod_groups = PodGroupProtection(registry, self._later)
        self.claims = (
            ResourceClaimController(registry, 0.0, self._later) if settings.claim_controller else None
        )
        self.owners = OwnerIndex()
        self.garbage = GarbageCollector(registry, self.owners, self._later)
        self.workloads = (
            WorkloadControllers(registry, self.owners, self._later) if settings.workload_controllers else None
        )
        self.running = False

    # --- wiring -------------------------------------------------------------------------------

    def start(self) -> None:
        """Begin reacting to changes and catch up with objects that already exist."""
        if not self.settings.enabled or self.running:
            return
        self.running = True
        self.registry.store.listeners.append(self._on_change)
        tables = self.registry.store.tables
        if self.workloads is not None:
            self.registry.garbage_collection = True
            for table in tables.values():
                for entry in list(table.objects.values()):
                    self.owners.on_change(table, Change(entry.rv, entry, None))
        for table in (
            tables[NODES.key],
            tables[PODS.key],
            tables[NAMESPACES.key],
            tables[PVS.key],
            tables[PVCS.key],
        ):
            for entry in list(table.objects.values()):
                self._on_change(table, Change(entry.rv, entry, None))
        groups = tables.get(POD_GROUPS.storage_key)  # served with GenericWorkload only
        if groups is not None:
            for entry in list(groups.objects.values()):
                self._on_change(groups, Change(entry.rv, entry, None))
        if self.claims is not None:
            self.claims.catch_up()
        if self.workloads is not None:
            self.workloads.catch_up()

    def stop(self) -> None:
        self.running = False
        self.registry.garbage_collection = False
        with contextlib.suppress(ValueError):
            self.registry.store.listeners.remove(self._on_change)
        for timer in self._timers.values():
            timer.cancel()
        self._timers.clear()
        if self._budget_timer is not None:
            self._budget_timer.cancel()

    def _later(self, key: tuple[str, str, str, str], delay: float, callback: Any, *args: Any) -> None:
        if key in self._timers:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return

        def fire() -> None:
            self._timers.pop(key, None)
            if self.running:
                callback(*args)

        self._timers[key] = loop.call_later(max(0.0, delay), fire)

    def _cancel(self, key: tuple[str, str, str, str]) -> None:
        timer = self._timers.pop(key, None)
        if timer is not None:
            timer.cancel()

    def _on_change(self, table: Table, change: Change) -> None:
        key = table.rt.key
        if self.workloads is not None:
            self.owners.on_change(table, change)
            self.garbage.on_change(table, change)
            self.workloads.on_change(table, change)
        if key == PODS.key:
            self._pod_changed(change)
            if self.settings.disruption_controller:
                entry = change.new or change.old
                if entry is not None:
                    self._budgets_dirty(entry.namespace)
        elif key == PDBS.key and self.settings.disruption_controller:
            entry = change.new or change.old
            if entry is not None and (
                change.new is None or change.old is None or not self._own_write(change)
            ):
                self._budgets_dirty(entry.namespace)
        elif key == NODES.key:
            self._node_changed(change)
        elif key == NAMESPACES.key:
            if change.new is not None and change.new.deleting:
                self._later(
                    ("ns", "", change.new.name, "cleanup"), 0.0, self._clean_namespace, change.new.name
                )
        elif key in (PVS.key, PVCS.key) and change.new is not None and change.new.deleting:
            rt = PVS if key == PVS.key else PVCS
            new = change.new
            self._later(
                (key, new.namespace, new.name, "protect"),
                0.0,
                self._release_protection,
                rt,
                new.namespace,
                new.name,
            )
        if self.volumes is not None and key in (PVS.key, PVCS.key, STORAGE_CLASSES.key):
            self.volumes.on_change(key, change)
        if key in (PODS.key, POD_GROUPS.key):
            self.pod_groups.on_change(key, change)
        if self.claims is not None and key in (PODS.key, CLAIMS.key, TEMPLATES.key):
            self.claims.on_change(key, change)

    @staticmethod
    def _own_write(change: Change) -> bool:
        """A PDB write that only changed status (ours or anyone's) does not need a recount."""
        assert change.new is not None and change.old is not None
        new, old = change.new.obj(), change.old.obj()
        return new.get("spec") == old.get("spec")

    # --- pods ---------------------------------------------------------------------------------

    def _pod_changed(self, change: Change) -> None:
        new, old = change.new, change.old
        if new is None:
            if old is not None:
                for action in ("start", "finish"):
                    self._cancel(("pod", old.namespace, old.name, action))
            return
        if new.deleting:
            self._cancel(("pod", new.namespace, new.name, "start"))
            pod = new.obj()
            grace = int(pod["metadata"].get("deletionGracePeriodSeconds") or 0)
            if grace > 0:
                self._later(
                    ("pod", new.namespace, new.name, "finish"),
                    grace * self.settings.time_scale,
                    self._finish_deletion,
                    new.namespace,
                    new.name,
                    new.uid,
                )
            return
        if new.fields.get("spec.nodeName") and new.fields.get("status.phase") == "Pending":
            self._later(
                ("pod", new.namespace, new.name, "start"),
                self.settings.pod_start_delay,
                self._start_pod,
                new.namespace,
                new.name,
                new.uid,
            )

    def _finish_deletion(self, namespace: str, name: str, uid: str) -> None:
        entry = self.registry.table(PODS).get(namespace, name)
        if entry is None or entry.uid != uid:
            return
        with contextlib.suppress(ApiError):
            self.registry.delete(PODS, namespace, name, DeleteOptions(grace_period=0))

    def _pod_ip(self, node: JSON) -> str:
        node_name = node["metadata"]["name"]
        cidrs = (node.get("spec") or {}).get("podCIDRs") or []
        cidr = cidrs[0] if cidrs else (node.get("spec") or {}).get("podCIDR") or "10.244.0.0/16"
        try:
            network = ipaddress.ip_network(cidr, strict=False)
        except ValueError:
            network = ipaddress.ip_network("10.244.0.0/16")
        index = self._next_ip.get(node_name, 2)
        if index >= network.num_addresses - 1:
            index = 2
        self._next_ip[node_name] = index + 1
        return str(network[index])

    def _start_pod(self, namespace: str, name: str, uid: str) -> None:
        entry = self.registry.table(PODS).get(namespace, name)
        if entry is None or entry.uid != uid or entry.deleting:
            return
        pod = entry.obj()
        spec, status = pod.get("spec") or {}, pod.setdefault("status", {})
        if status.get("phase") != "Pending" or not spec.get("nodeName"):
            return
        node = self.registry.get_obj(NODES.key, "", spec["nodeName"])
        if node is None:
            return
        now = rfc3339()
        addresses = {
            a.get("type"): a.get("address") for a in (node.get("status") or {}).get("addresses") or []
        }
        host_ip = addresses.get("InternalIP") or "10.0.0.1"
        pod_ip = host_ip if spec.get("hostNetwork") else self._pod_ip(node)
        status["phase"] = "Running"
        for kind in ("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady"):
            set_condition(status, {"type": kind, "status": "True", "lastTransitionTime": now})
        set_condition(status, {"type": "PodScheduled", "status": "True"})
        order = {
            "PodReadyToStartContainers": 0,
            "Initialized": 1,
            "Ready": 2,
            "ContainersReady": 3,
            "PodScheduled": 4,
        }
        status["conditions"].sort(key=lambda c: order.get(c.get("type"), 5))
        status["hostIP"] = host_ip
        status["hostIPs"] = [{"ip": host_ip}]
        status["podIP"] = pod_ip
        status["podIPs"] = [{"ip": pod_ip}]
        status["startTime"] = now
        status["initContainerStatuses"] = [
            self._container_status(c, now, sidecar=c.get("restartPolicy") == "Always")
            for c in spec.get("initContainers") or []
        ] or None
        status["containerStatuses"] = [
            self._container_status(c, now, sidecar=True) for c in spec.get("containers") or []
        ]
        if status["initContainerStatuses"] is None:
            del status["initContainerStatuses"]
        self.registry.strategy(PODS).normalize(pod)
        self.registry.record_write(PODS, entry.obj(), pod, KUBELET_MANAGER, "status")
        self.registry.put(PODS, pod, entry)

    @staticmethod
    def _container_status(container: JSON, now: str, sidecar: bool) -> JSON:
        state: JSON
        if sidecar:
            state = {"running": {"startedAt": now}}
        else:
            state = {
                "terminated": {"exitCode": 0, "reason": "Completed", "startedAt": now, "finishedAt": now}
            }
        return {
            "name": container.get("name", ""),
            "state": state,
            "lastState": {},
            "ready": sidecar,
            "restartCount": 0,
            "image": container.get("image", ""),
            "imageID": "",
            "containerID": f"kwok://{container.get('name', '')}",
            "started": sidecar,
        }

    # --- nodes --------------------------------------------------------------------------------

    def _node_changed(self, change: Change) -> None:
        new = change.new
        if new is None or change.old is not None:
            return
        self._later(("node", "", new.name, "ready"), 0.0, self._make_ready, new.name, new.uid)

    def _make_ready(self, name: str, uid: str) -> None:
        entry = self.registry.table(NODES).get("", name)
        if entry is None or entry.uid != uid:
            return
        node = entry.obj()
        status = node.setdefault("status", {})
        if status.get("conditions"):
            return
        status["conditions"] = _node_conditions(rfc3339())
        if not status.get("addresses"):
            status["addresses"] = [{"type": "Hostname", "address": name}]
        node["status"] = normalize_node_status(status)
        self.registry.record_write(NODES, entry.obj(), node, KUBELET_MANAGER, "status")
        self.registry.put(NODES, node, entry)

    # --- namespaces and protection finalizers --------------------------------------------------

    def _clean_namespace(self, name: str) -> None:
        remaining = 0
        for table in self.registry.store.tables.values():
            rt = table.rt
            if not rt.namespaced:
                continue
            for entry in [e for e in table.objects.values() if e.namespace == name]:
                remaining += 1
                if entry.deleting:
                    continue
                with contextlib.suppress(ApiError):
                    self.registry.delete(rt, name, entry.name, DeleteOptions())
        ns = self.registry.table(NAMESPACES).get("", name)
        if ns is None:
            return
        still = sum(
            1
            for t in self.registry.store.tables.values()
            if t.rt.namespaced
            for e in t.objects.values()
            if e.namespace == name
        )
        if still:
            self._later(("ns", "", name, "cleanup"), 0.2, self._clean_namespace, name)
            return
        with contextlib.suppress(ApiError):
            self.registry.update(
                NAMESPACES,
                "",
                name,
                {"metadata": {"name": name}, "spec": {"finalizers": []}},
                "finalize",
                manager=CONTROLLER_MANAGER,
            )

    def _release_protection(self, rt: Any, namespace: str, name: str) -> None:
        entry = self.registry.table(rt).get(namespace, name)
        if entry is None or not entry.deleting:
            return
        obj = entry.obj()
        finalizers = obj["metadata"].get("finalizers") or []
        kept = [f for f in finalizers if f not in PROTECTION_FINALIZERS]
        if kept != finalizers:
            with contextlib.suppress(ApiError):
                self.registry.patch(
                    rt,
                    namespace,
                    name,
                    "application/merge-patch+json",
                    b'{"metadata":{"finalizers":%s}}' % str(kept).replace("'", '"').encode(),
                    manager=CONTROLLER_MANAGER,
                )

    # --- disruption controller ----------------------------------------------------------------

    def _budgets_dirty(self, namespace: str) -> None:
        table = self.registry.table(PDBS)
        if not any(e.namespace == namespace for e in table.objects.values()):
            return
        self._dirty_budgets.add(namespace)
        if self._budget_timer is None:
            with contextlib.suppress(RuntimeError):
                self._budget_timer = asyncio.get_running_loop().call_later(0.05, self._recount_budgets)

    def _recount_budgets(self) -> None:
        self._budget_timer = None
        dirty, self._dirty_budgets = self._dirty_budgets, set()
        if not self.running:
            return
        pdb_table = self.registry.table(PDBS)
        pods = self.registry.table(PODS)
        for entry in list(pdb_table.objects.values()):
            if entry.namespace not in dirty or entry.deleting:
                continue
            pdb = entry.obj()
            try:
                selector = label_selector_of((pdb.get("spec") or {}).get("selector"))
            except SelectorError:
                selector = Selector.nothing()  # an invalid selector counts no pods
            matching = [
                p
                for p in pods.objects.values()
                if p.namespace == entry.namespace and selector.matches(p.labels)
            ]
            status = dict(pdb.get("status") or {})
            disrupted = {
                k: v
                for k, v in (status.get("disruptedPods") or {}).items()
                if any(p.name == k and not p.deleting for p in matching)
            }
            healthy = 0
            expected = 0
            for p in matching:
                if p.fields.get("status.phase") in ("Succeeded", "Failed") or p.deleting:
                    continue
                expected += 1
                if p.name in disrupted:
                    continue
                obj = p.obj()
                if any(
                    c.get("type") == "Ready" and c.get("status") == "True"
                    for c in (obj.get("status") or {}).get("conditions") or []
                ):
                    healthy += 1
            desired = self._desired_healthy(pdb.get("spec") or {}, expected)
            allowed = max(0, healthy - desired)
            generation = pdb["metadata"].get("generation", 1)
            new_status: JSON = {"observedGeneration": generation}
            if disrupted:
                new_status["disruptedPods"] = disrupted
            new_status.update(
                {
                    "disruptionsAllowed": allowed,
                    "currentHealthy": healthy,
                    "desiredHealthy": desired,
                    "expectedPods": expected,
                }
            )
            old_conditions = [
                c for c in status.get("conditions") or [] if c.get("type") == "DisruptionAllowed"
            ]
            sufficient = allowed > 0
            condition: JSON = {
                "type": "DisruptionAllowed",
                "status": "True" if sufficient else "False",
                "observedGeneration": generation,
                "lastTransitionTime": rfc3339(),
                "reason": "SufficientPods" if sufficient else "InsufficientPods",
                "message": "",
            }
            if old_conditions and old_conditions[0].get("status") == condition["status"]:
                condition["lastTransitionTime"] = old_conditions[0].get("lastTransitionTime")
            new_status["conditions"] = [condition]
            if new_status != status:
                pdb["status"] = new_status
                self.registry.strategy(PDBS).normalize(pdb)
                self.registry.record_write(PDBS, entry.obj(), pdb, CONTROLLER_MANAGER, "status")
                self.registry.put(PDBS, pdb, entry)

    @staticmethod
    def _desired_healthy(spec: JSON, expected: int) -> int:
        def scaled(value: Any, round_up: bool) -> int:
            if isinstance(value, str) and value.endswith("%"):
                pct = int(value[:-1])
                whole, rest = divmod(pct * expected, 100)
                return whole + (1 if rest and round_up else 0)
            return int(value)

        if spec.get("minAvailable") is not None:
            return scaled(spec["minAvailable"], True)
        if spec.get("maxUnavailable") is not None:
            return max(0, expected - scaled(spec["maxUnavailable"], True))
        return 0
