"""Playing cases on the real kube-scheduler 1.36.2: one cluster (``../shared/kube-1.36``, with the
controller manager and the scheduler) per batch, every case's objects deleted before the next.

Per case:

1. its objects are created in order (bound pods then made Running and Ready with a start time of their
   own, as a kubelet would report; PodDisruptionBudgets waited for until the disruption controller has
   counted them), and the scheduler's log is read until its informers have every node and bound pod
   (``Add event for node`` …, ``Update event for scheduled pod`` after the status);
2. the cluster is listed back (defaults and admission applied: what ``ksched simulate`` reads);
3. each pending pod is created in turn (the create response is the pod as stored) and the log is read
   until its first attempt is over (placed, or failed with its nomination and preemption done); a pod
   the scheduler placed is then made Running with a start time, as a kubelet would (:meth:`_kubelet`). A pod
   left unschedulable and not nominated is deleted before the next one, so that no later retry of it
   changes what the next pod meets; between two pods the scheduler idles longer than its opportunistic
   batching window (500 ms), so every pod is filtered and scored from scratch;
4. everything the case made is deleted (pods without grace, as nothing else would end them: there
   are no kubelets), the log is read until the scheduler saw every deletion, and the cluster is listed
   again: anything but the batch's own objects left over is a :class:`LeakError`.
"""

from __future__ import annotations

import asyncio
import copy
import json
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from ksched.aio import cancel_and_wait
from ksched.api.kinds import BY_NAME
from ksched.api.scheduling import POD_GROUP_SCHEDULED
from ksched.client.config import api_client
from ksched.client.rest import Client
from ksched.differential import extender
from ksched.differential.answers import (
    ATTEMPT,
    GROUP_ATTEMPT,
    GROUP_ENDS,
    Attempt,
    answer,
    bound_attempt,
    first_attempt,
)
from ksched.differential.klog import Entry, LogReader
from ksched.differential.model import (
    ADD_NODE,
    BACKOFF,
    CORDON,
    CREATE,
    DECIDES,
    DEFAULT_SCHEDULER,
    DELETE,
    LABEL,
    NAMESPACES,
    PRIORITY_CLASSES,
    RUNTIME_CLASS_OBJECT,
    UNGATE,
    Case,
    Obj,
    claim_alias,
    config_document,
    extended_resources,
    identity,
    key,
    members,
    start_time,
)
from ksched.launcher.controlplane import GANG_APISERVER_ARGS, GANG_GATES, ControlPlane
from ksched.simulate.live import ClusterReadError, list_cluster

SCHEDULER_FLAGS = "--v=3 --vmodule=schedule_one=10,schedule_one_podgroup=4,eventhandlers=4"
"""What the log needs: V(3) for informer events, attempts and outcomes (V(2)) and preemption; V(10) in
schedule_one.go for every plugin's score; V(4) in schedule_one_podgroup.go for each member's attempt
in a pod group cycle; V(4) in eventhandlers.go for pod updates."""
CONTROLLERS = ",".join(
    [
        "--controllers=*",
        *(
            f"-{name}"
            for name in (
                # cluster.sh's own exclusions (its flag is given first; this one is the last word)
                "node-lifecycle-controller",
                "service-lb-controller",
                "cloud-node-lifecycle-controller",
                # nothing may create, adopt, delete or evict a case's pods behind its back
                "replicaset-controller",
                "replicationcontroller-controller",
                "statefulset-controller",
                "deployment-controller",
                "daemonset-controller",
                "job-controller",
                "cronjob-controller",
                "taint-eviction-controller",
            )
        ),
    ]
)
"""The controller manager runs the controllers whose work a case reads (disruption: PDB status;
persistentvolume-binder; resourceclaim) and none that would change its pods."""
BATCHING_WINDOW = 0.6
"""Seconds between two pending pods: longer than upstream's opportunistic batching keeps a result."""
DECISION_TIMEOUT = 30.0
NO_GOROUTINE_WAIT = 2.0
"""How long a nominated pod whose victims were all being deleted already waits for an asynchronous
preemption that upstream does not start (:attr:`Attempt.maybe_no_goroutine`; sequences-s9412-145)."""
SYNC_TIMEOUT = 20.0
START_TIMEOUT = 90.0
QUIET = BACKOFF + 1.0
"""Seconds without a change to any pod of a ``sequences`` case that end a step: longer than the
batch's pod backoff, so a retry an event caused is over."""
POD_UPDATE = "Update event for scheduled pod"
GATED = "SchedulingGated"
"""The PodScheduled reason of a pod its scheduling gates hold back (no attempt yet)."""

PATHS: dict[str, str] = {name: kind.path() for name, kind in BY_NAME.items()}
"""Collection paths by kind (of what the generators create and the listing returns)."""


GROUP_END_MESSAGES = frozenset(message for _, _, message in GROUP_ENDS.values())
"""The condition messages the ends of a pod group cycle write (a richer one is a plugin's own)."""


class UpstreamError(RuntimeError):
    """The real cluster did not do what a case needs (an object refused, a decision never made)."""


class LeakError(UpstreamError):
    """Objects of a case were left in the cluster after its cleanup."""


@dataclass
class Played:
    """A case as the real scheduler played it: the objects as read back (the setup, then each pending
    pod as created), and the answer for each pending pod, in order."""

    objects: list[Obj]
    answers: list[dict[str, Any]]
    steps: list[Obj] = field(default_factory=list)
    """A ``sequences`` case's steps as played (see :meth:`Upstream._decide_steps`)."""


def object_path(obj: Obj, named: bool = True) -> str:
    collection = PATHS[str(obj["kind"])]
    base, resource = collection.rsplit("/", 1)
    ns = (obj.get("metadata") or {}).get("namespace")
    path = f"{base}/namespaces/{ns}/{resource}" if ns else collection
    return f"{path}/{obj['metadata']['name']}" if named else path


def scheduler_config(profiles: Iterable[Obj], kubeconfig: Path, ignorable_binder: bool = False) -> str:
    """The KubeSchedulerConfiguration of a batch: the default profile and the cases' own profiles."""
    doc = config_document(
        [{"schedulerName": DEFAULT_SCHEDULER}, *profiles], str(kubeconfig), ignorable_binder=ignorable_binder
    )
    return yaml.safe_dump(doc, sort_keys=False)


class Upstream:
    """The real control plane of one batch; :meth:`play` runs one case on it."""

    def __init__(
        self,
        kube: Path,
        workdir: Path,
        profiles: Iterable[Obj] = (),
        say: Callable[[str], None] = print,
        gangs: bool = False,
        ignorable_binder: bool = False,
    ) -> None:
        self.workdir = workdir
        self.profiles = list(profiles)
        self.say = say
        self.gangs = gangs
        """The gang gates on (API server, controller manager, scheduler): the cluster of ``gangs`` cases."""
        self.ignorable_binder = ignorable_binder
        """The harness's binder extender ignorable (:func:`extender.binder_ignorable`)."""
        self.plane = ControlPlane(
            kube=kube,
            dir=workdir,
            parts=("controller-manager", "scheduler"),
            apiserver_args=GANG_APISERVER_ARGS if gangs else "",
            controller_manager_args=f"{CONTROLLERS} --feature-gates={GANG_GATES}" if gangs else CONTROLLERS,
        )
        self.log = LogReader(workdir / "scheduler.log")
        self.entries: list[Entry] = []
        self.steps: list[Obj] = []
        self.started: dict[str, str] = {}
        """The start times given to the case's pods the scheduler placed (``ns/name`` -> time)."""
        self.uids: dict[str, str] = {}
        """The UIDs of the case's pods created so far (``ns/name`` -> UID)."""
        self.baseline: set[tuple[str, str]] = set()
        self._api: Client | None = None

    # --- the batch ---------------------------------------------------------------------------------
    async def start(self) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        config = self.workdir / "scheduler-config.yaml"
        config.write_text(scheduler_config(self.profiles, self.scheduler_kubeconfig, self.ignorable_binder))
        gates = f" --feature-gates={GANG_GATES}" if self.gangs else ""
        self.plane.scheduler_args = f"--config={config} {SCHEDULER_FLAGS}{gates}"
        await asyncio.to_thread(self.plane.up)
        extender.serve_cluster(self.plane)  # the bind verb binds this cluster's pods too
        await self._launch(config)
        self._api = await api_client(str(self.plane.admin_kubeconfig), component="ksched-differential")
        for name, labels in NAMESPACES.items():
            if name != "default":
                ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}}
                await self.create(ns)
        for name, (value, policy) in PRIORITY_CLASSES.items():
            pc = {
                "apiVersion": "scheduling.k8s.io/v1",
                "kind": "PriorityClass",
                "metadata": {"name": name},
                "value": value,
                "preemptionPolicy": policy,
            }
            await self.create(pc)
        await self.create(RUNTIME_CLASS_OBJECT)
        await self._scheduler_ready()
        self.baseline = {identity(o) for o in await self.read_back()}

    @property
    def scheduler_kubeconfig(self) -> Path:
        return self.plane.scheduler_kubeconfig

    async def _launch(self, config: Path) -> None:
        """Start the scheduler with ``config`` once the control plane is up (cluster.sh started
        kube-scheduler already)."""

    async def _scheduler_ready(self) -> None:
        """Until the scheduler's informers run: a node made and deleted, both seen in its log."""
        sentinel = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "differential-sentinel"}}
        await self.create(sentinel)
        await self.wait_seen([("Add event for node", "node", key(sentinel))], START_TIMEOUT)
        await self.delete(object_path(sentinel))
        await self.wait_seen([("Delete event for node", "node", key(sentinel))], START_TIMEOUT)

    async def stop(self) -> None:
        if self._api is not None:
            await self._api.close()
            self._api = None
        extender.forget_cluster(self.plane)
        await asyncio.to_thread(self.plane.down)

    @property
    def api(self) -> Client:
        assert self._api is not None, "start() first"
        return self._api

    # --- requests ----------------------------------------------------------------------------------
    async def request(
        self, method: str, path: str, body: Any = None, content_type: str = "application/json"
    ) -> tuple[int, Any]:
        status, raw = await self.api.request(method, path, body, content_type, timeout=30.0)
        try:
            decoded = json.loads(raw) if raw else None
        except ValueError:
            decoded = raw.decode("utf-8", "replace")
        return status, decoded

    async def create(self, obj: Obj) -> Obj:
        """``obj`` created; the API server's answer (the object as stored), with apiVersion and kind."""
        body = {k: v for k, v in obj.items() if k != "status" or obj["kind"] == "Node"}
        if obj["kind"] == "Pod":  # the victims its extenders add, by their UIDs on this cluster
            body = extender.with_uids(body, self.uids)
        status, out = await self.request("POST", object_path(obj, named=False), body)
        if status == 409 and obj["kind"] in ("Namespace", "PriorityClass", "RuntimeClass"):
            return obj  # the batch's own, from an earlier start on the same cluster
        if status not in (200, 201):
            raise UpstreamError(f"create {obj['kind']} {key(obj)}: HTTP {status}: {_short(out)}")
        assert isinstance(out, dict)
        if obj["kind"] == "Pod":
            self.uids[key(out)] = out["metadata"]["uid"]
        return {"apiVersion": obj["apiVersion"], "kind": obj["kind"], **out}

    async def patch_status(self, obj: Obj) -> None:
        path = object_path(obj) + "/status"
        body = {"status": obj["status"]}
        status, out = await self.request("PATCH", path, body, "application/merge-patch+json")
        if status != 200:
            raise UpstreamError(f"status of {obj['kind']} {key(obj)}: HTTP {status}: {_short(out)}")

    async def delete(self, path: str) -> None:
        status, out = await self.request("DELETE", path, {"gracePeriodSeconds": 0})
        if status not in (200, 202, 404):
            raise UpstreamError(f"delete {path}: HTTP {status}: {_short(out)}")

    async def read_back(self) -> list[Obj]:
        """Every object the scheduler reads, as the API server has it (``ksched simulate
        --from-cluster``'s listing). An API server that does not answer ends the case, not the run
        (seed 9507: a read that timed out in a case's cleanup ended a run with a traceback)."""
        try:
            return await list_cluster(str(self.plane.admin_kubeconfig))
        except ClusterReadError as exc:
            raise UpstreamError(f"reading the cluster back: {exc}") from exc

    # --- the scheduler's log -------------------------------------------------------------------------
    def _poll(self) -> None:
        self.entries.extend(self.log.read())

    async def wait_log(self, done: Callable[[], bool], what: str, timeout: float = SYNC_TIMEOUT) -> None:
        deadline = time.monotonic() + timeout
        while True:
            self._poll()
            if done():
                return
            if time.monotonic() > deadline:
                raise UpstreamError(f"kube-scheduler: {what} not seen in {timeout:.0f} s")
            await asyncio.sleep(0.02)

    def seen(self, msg: str, field: str, value: str) -> bool:
        return any(e.msg == msg and e.values.get(field) == value for e in self.entries)

    async def wait_seen(self, pairs: list[tuple[str, str, str]], timeout: float = SYNC_TIMEOUT) -> None:
        missing = list(pairs)

        def done() -> bool:
            missing[:] = [p for p in missing if not self.seen(*p)]
            return not missing

        await self.wait_log(done, f"{len(pairs)} informer event(s) ({missing[:1]} …)", timeout)

    # --- one case ------------------------------------------------------------------------------------
    async def play(self, case: Case) -> Played:
        self.log.skip_to_end()
        self.entries = []
        self.steps = []
        self.started = {}
        self.uids = {}
        try:
            return await self._play(case)
        finally:
            await self.cleanup(case)

    async def _play(self, case: Case) -> Played:
        expect: list[tuple[str, str, str]] = []
        pdbs: list[Obj] = []
        for obj in case.objects:
            created = await self.create(obj)
            if obj["kind"] == "Node":
                expect.append(("Add event for node", "node", key(obj)))
            elif obj["kind"] == "Pod":
                if "status" in obj:
                    await self.patch_status(obj)
                    expect.append(("Update event for scheduled pod", "pod", key(obj)))
                expect.append(("Add event for scheduled pod", "pod", key(obj)))
            elif obj["kind"] == "PodDisruptionBudget":
                pdbs.append(created)
        await self._synced(case, expect)
        for pdb in pdbs:
            await self._wait_pdb(pdb, case)
        if pdbs:
            await asyncio.sleep(0.3)  # the scheduler's PDB informer (no log line tells)
        await self._preplace(case)
        volumes = any(o["kind"] in ("PersistentVolume", "PersistentVolumeClaim") for o in case.objects)
        if volumes:
            await self._settle_volumes()
        objects = self._case_objects(await self.read_back(), case)
        provisioner = asyncio.create_task(self._provision()) if volumes else None
        try:
            answers = await self._decide(case, objects)
        finally:
            if provisioner is not None:
                await cancel_and_wait(provisioner)
        return Played(objects, answers, self.steps)

    async def _preplace(self, case: Case) -> None:
        """The case's pods to be placed by the scheduler itself before the pending ones; one that is
        not placed is deleted (the case goes on without it)."""
        for pod in case.preplaced:
            await self.create(pod)
            if (await self._attempt(pod))["node"] is None:
                await self._remove_pending(pod)
        if case.preplaced:
            await self._kubelet(case)
            await asyncio.sleep(BATCHING_WINDOW)

    async def _kubelet(self, case: Case) -> None:
        """What a kubelet would do, there being none: each pod of ``case`` the scheduler placed (the API
        server shows it bound, not being deleted) is made Running with a start time of its own, the
        next of :func:`start_time` (pods first seen in one listing by name), once, on both clusters.
        Upstream's preemption reads it (of victims of one priority, the one started last goes first;
        between candidates tied on the rest, the one whose earliest victim of the highest priority
        started latest wins); without one, ``GetPodStartTime`` returns ``time.Now()`` at each call, and
        such a tie goes the way the candidates were evaluated (seed 8001, case 100)."""
        wanted = {key(p) for p in [*case.preplaced, *case.pending]}
        status, body = await self.request("GET", "/api/v1/pods")
        new = sorted(
            key(pod)
            for pod in ((body or {}).get("items") or [] if status == 200 else [])
            if key(pod) in wanted
            and key(pod) not in self.started
            and pod["spec"].get("nodeName")
            and not pod["metadata"].get("deletionTimestamp")
        )
        if not new:
            return
        seen = {pod: self._updates(pod) for pod in new}
        for pod in new:
            self.started[pod] = start_time(len(self.started) + 1)
            ns, name = pod.split("/", 1)
            obj = {"kind": "Pod", "metadata": {"namespace": ns, "name": name}}
            await self.patch_status({**obj, "status": {"phase": "Running", "startTime": self.started[pod]}})
        await self._started_seen(seen)

    def _updates(self, pod: str) -> int:
        self._poll()
        return sum(1 for e in self.entries if e.msg == POD_UPDATE and e.values.get("pod") == pod)

    async def _started_seen(self, before: dict[str, int]) -> None:
        """Until the scheduler saw the pods' new status (``before``: each pod's update lines before)."""
        await self.wait_log(
            lambda: all(self._updates(p) > n for p, n in before.items()), "the pods' start times"
        )

    async def _generated(self, created: Obj) -> list[Obj]:
        """The ResourceClaims the resourceclaim controller made for the pod ``created`` from its
        templates, as it made them (no status), then ``created`` with the pod's
        ``resourceClaimStatuses`` naming them: what ``ksched simulate`` replays the pod on."""
        status, body = await self.request("GET", object_path(created))
        statuses = (
            ((body or {}).get("status") or {}).get("resourceClaimStatuses") or [] if status == 200 else []
        )
        out: list[Obj] = []
        for name in (s["resourceClaimName"] for s in statuses if s.get("resourceClaimName")):
            claim = {
                "kind": "ResourceClaim",
                "metadata": {"name": name, "namespace": created["metadata"]["namespace"]},
            }
            status, body = await self.request("GET", object_path(claim))
            if status == 200:
                out.append({k: v for k, v in body.items() if k != "status"})
        pod = copy.deepcopy(created)
        pod.setdefault("status", {})["resourceClaimStatuses"] = statuses
        return [*out, pod]

    async def _claims(self, pod: Obj, placed: bool) -> dict[str, Any]:
        """The allocation of each of ``pod``'s ResourceClaims (``ns/name`` -> {"node", "devices"}):
        those it names, those made from its templates and the one the scheduler made for its
        extended resources (under :func:`claim_alias`); ``{}`` when the pod was not placed."""
        if not placed:
            return {}
        out: dict[str, Any] = {}
        ns = pod["metadata"]["namespace"]
        status, body = await self.request("GET", object_path(pod))
        stored = ((body or {}).get("status") or {}) if status == 200 else {}
        names = [ref.get("resourceClaimName") for ref in pod["spec"].get("resourceClaims") or []]
        names += [s.get("resourceClaimName") for s in stored.get("resourceClaimStatuses") or []]
        names.append((stored.get("extendedResourceClaimStatus") or {}).get("resourceClaimName"))
        for name in names:
            if not name:
                continue
            claim = {"kind": "ResourceClaim", "metadata": {"name": name, "namespace": ns}}
            status, body = await self.request("GET", object_path(claim))
            allocation = ((body or {}).get("status") or {}).get("allocation") if status == 200 else None
            if not allocation:
                continue
            node = None
            for term in (allocation.get("nodeSelector") or {}).get("nodeSelectorTerms") or []:
                for req in term.get("matchFields") or []:
                    if req.get("key") == "metadata.name" and len(req.get("values") or []) == 1:
                        node = req["values"][0]
            results = (allocation.get("devices") or {}).get("results") or []
            devices = sorted(f"{r['driver']}/{r['pool']}/{r['device']}" for r in results)
            out[claim_alias(f"{ns}/{name}")] = {"node": node, "devices": devices}
        return out

    async def _decide(self, case: Case, objects: list[Obj]) -> list[dict[str, Any]]:
        """Create the pending pods one by one, each once the previous one is decided; their answers."""
        if case.groups:
            return await self._decide_groups(case, objects)
        if case.steps:
            firsts, self.steps = await self._decide_steps(case)
            return firsts
        answers: list[dict[str, Any]] = []
        for i, pod in enumerate(case.pending):
            if i:
                await asyncio.sleep(BATCHING_WINDOW)
            objects.append(await self.create(pod))
            decision = await self._attempt(pod)
            if any(r.get("resourceClaimTemplateName") for r in pod["spec"].get("resourceClaims") or []):
                *generated, objects[-1] = await self._generated(objects[-1])
                objects[-1:-1] = generated
            if pod["spec"].get("resourceClaims") or extended_resources(pod):
                decision["claims"] = await self._claims(pod, decision["node"] is not None)
            if decision["node"] is not None:
                await self._kubelet(case)
                decision["started"] = self.started.get(key(pod))
            answers.append(decision)
            if decision["node"] is None and decision.get("nominated") is None:
                await self._remove_pending(pod)
        return answers

    async def _decide_steps(self, case: Case) -> tuple[list[dict[str, Any]], list[Obj]]:
        """Play ``case.steps`` in order, each once the cluster is quiet after the one before; (an answer
        per pod tried, in the order of their first attempts, then the pods never tried, each with
        its ``final`` state once the last step is over; the steps as played: the objects as the API
        server returned them, and for a step that has a pod tried, every case pod's state ``before``,
        the pods being deleted then, ``terminating`` (a preemption's victims: no kubelet ends them),
        the start times given so far, ``started``, and whether another pod changed meanwhile, ``racy``:
        the pod's own victims, gone from the states as they turn terminating, do not count)."""
        pending = {key(p): p for p in case.pending}
        firsts: list[dict[str, Any]] = []
        played: list[Obj] = []
        for step in case.steps:
            op, done = step["op"], dict(step)
            if op in DECIDES:
                pod = pending[step["pod"]]
                done["before"] = await self._pod_states(case)
                done["terminating"] = await self._terminating(case)
                done["started"] = dict(self.started)
                if op == CREATE:
                    done["object"] = await self.create(pod)
                else:
                    done["object"] = await self._patch(pod, {"spec": {"schedulingGates": None}})
                if op == UNGATE or not pod["spec"].get("schedulingGates"):
                    firsts.append(await self._attempt(pod))
                    await self._kubelet(case)
                    after = await self._pod_states(case)
                    own = set(firsts[-1].get("victims") or [])  # gone from the states by the pod's doing
                    done["racy"] = any(
                        _placement(after.get(p)) != _placement(s)
                        for p, s in done["before"].items()
                        if p != step["pod"] and p not in own
                    )
            elif op == ADD_NODE:
                done["node"] = await self.create(step["node"])
            elif op in (CORDON, LABEL):
                node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": step["node"]}}
                change = (
                    {"spec": {"unschedulable": True}}
                    if op == CORDON
                    else {"metadata": {"labels": step["labels"]}}
                )
                done["object"] = await self._patch(node, change)
            elif op == DELETE:
                ns, name = step["pod"].split("/", 1)
                await self.delete(f"/api/v1/namespaces/{ns}/pods/{name}")
            played.append(done)
            await self._quiet(case)
        final = await self._pod_states(case)
        tried = [a["pod"] for a in firsts]
        untried = [{"pod": p, "node": None, "untried": True} for p in pending if p not in tried]
        answers = [*firsts, *untried]
        for a in answers:
            a["final"] = {**final.get(a["pod"], {"deleted": True}), **self._final_top(a["pod"])}
        return answers, played

    async def _patch(self, obj: Obj, change: Obj) -> Obj:
        status, out = await self.request("PATCH", object_path(obj), change, "application/merge-patch+json")
        if status != 200 or not isinstance(out, dict):
            raise UpstreamError(f"patch {obj['kind']} {key(obj)}: HTTP {status}: {_short(out)}")
        return {"apiVersion": obj["apiVersion"], "kind": obj["kind"], **out}

    async def _pod_states(self, case: Case) -> dict[str, dict[str, Any]]:
        """The state of every pending pod of ``case`` the API server has: ``node``, ``nominated``, the
        PodScheduled ``message`` (``gated`` while its gates hold it)."""
        wanted = {key(p) for p in case.pending}
        status, body = await self.request("GET", "/api/v1/pods")
        out: dict[str, dict[str, Any]] = {}
        for pod in (body or {}).get("items") or [] if status == 200 else []:
            k = key(pod)
            if k not in wanted or pod["metadata"].get("deletionTimestamp"):
                continue
            st = pod.get("status") or {}
            conditions: list[Obj] = st.get("conditions") or []
            cond: Obj = next((c for c in conditions if c.get("type") == "PodScheduled"), {})
            node = pod["spec"].get("nodeName") or None
            out[k] = {
                "node": node,
                "nominated": st.get("nominatedNodeName") or None,
                "message": None if node or cond.get("status") != "False" else cond.get("message"),
                "gated": bool(pod["spec"].get("schedulingGates")),
            }
        return out

    async def _terminating(self, case: Case) -> dict[str, str]:
        """The pods of ``case`` being deleted (``ns/name`` -> node): a preemption's victims, which no
        kubelet ends, so they stay on their node."""
        wanted = {key(o) for o in [*case.objects, *case.pending] if o["kind"] == "Pod"}
        status, body = await self.request("GET", "/api/v1/pods")
        return {
            key(pod): pod["spec"].get("nodeName") or ""
            for pod in ((body or {}).get("items") or [] if status == 200 else [])
            if key(pod) in wanted and pod["metadata"].get("deletionTimestamp")
        }

    async def _quiet(self, case: Case) -> None:
        """Until no pod of ``case`` has changed for :data:`QUIET` seconds."""
        deadline = time.monotonic() + DECISION_TIMEOUT
        last, since = await self._pod_states(case), time.monotonic()
        while time.monotonic() - since < QUIET:
            if time.monotonic() > deadline:
                raise UpstreamError(f"case {case.name}: its pods did not settle in {DECISION_TIMEOUT:.0f} s")
            await asyncio.sleep(0.1)
            await self._kubelet(case)
            now = await self._pod_states(case)
            if now != last:
                last, since = now, time.monotonic()

    def _final_top(self, pod: str) -> dict[str, Any]:
        """For a pod placed in a ``sequences`` case, the nodes of the best total of the attempt that
        placed it (``top_nodes``: upstream breaks ties at random)."""
        self._poll()
        placed = bound_attempt(self.entries, pod)
        return {"top_nodes": answer(placed)["top_nodes"]} if placed is not None else {}

    async def _decide_groups(self, case: Case, objects: list[Obj]) -> list[dict[str, Any]]:
        """Each of ``case.groups`` in turn (:meth:`_decide_group`), their answers one after another.
        Before the next group, the members placed are running (their start times) and the others are
        deleted: the next group meets the placed ones, and the victims still terminating."""
        answers: list[dict[str, Any]] = []
        groups = [(group, pods) for group in case.groups if (pods := members(case, group))]
        for i, (group, pods) in enumerate(groups):
            decided = await self._decide_group(case, group, pods, objects)
            answers += decided
            if i == len(groups) - 1:
                break
            placed = {a["pod"] for a in decided if (a.get("final") or a).get("node")}
            await self._bound(case, placed)
            await self._kubelet(case)
            for a in decided:
                if a["pod"] in placed:
                    a["started"] = self.started.get(a["pod"])
            for pod in pods:
                if key(pod) not in placed:
                    await self._remove_pending(pod)
            await asyncio.sleep(BATCHING_WINDOW)
        return answers

    async def _bound(self, case: Case, pods: set[str]) -> None:
        """Until the API server shows each of ``pods`` (pending pods of ``case``) bound."""
        deadline = time.monotonic() + SYNC_TIMEOUT
        while time.monotonic() < deadline:
            states = await self._pod_states(case)
            if all((states.get(p) or {}).get("node") for p in pods):
                return
            await asyncio.sleep(0.05)
        raise UpstreamError(f"case {case.name}: pods {sorted(pods)} not bound in {SYNC_TIMEOUT:.0f} s")

    async def _decide_group(
        self, case: Case, group: Obj, pods: list[Obj], objects: list[Obj]
    ) -> list[dict[str, Any]]:
        """Create every member (``pods``), then their PodGroup (so one pod group cycle takes them all);
        the members' answers in the order upstream tried them, each with the group's condition."""
        for pod in pods:
            objects.append(await self.create(pod))
        objects.append(await self.create(group))
        first = asyncio.create_task(self._group_outcome(group))  # before a retry can rewrite it
        try:
            answers = [await self._attempt(pod) for pod in pods]
        finally:
            if not first.done():
                await asyncio.wait([first], timeout=SYNC_TIMEOUT)
        await self._first_cycle_over(key(group))
        outcome = self._first_group_outcome(key(group), first.result())
        order = self._tried_order([a["pod"] for a in answers])
        for a in answers:
            a["podGroup"] = outcome
        if any(p["spec"].get("priorityClassName") for p in pods):
            await self._group_ends(case, group, answers)
        return sorted(answers, key=lambda a: order.index(a["pod"]))

    async def _group_ends(self, case: Case, group: Obj, answers: list[dict[str, Any]]) -> None:
        """Each member's ``final`` state once the case's pods settled: members that may preempt are
        tried again within milliseconds of their first cycle, and the API server shows where the
        retries left them (with the pods being deleted, ``terminating``, and the group's condition
        then, ``podGroup``), on either cluster alike."""
        await self._quiet(case)
        states = await self._pod_states(case)
        terminating = sorted(await self._terminating(case))
        condition = (await self._group_outcome(group))["condition"]
        for a in answers:
            state = states.get(a["pod"], {"deleted": True})
            a["final"] = {**state, "terminating": terminating, "podGroup": condition}

    async def _group_outcome(self, group: Obj) -> dict[str, Any]:
        """``{"name", "condition"}``: the PodGroup's ``PodGroupScheduled`` condition as first written
        (polled from the group's creation on: the members a cycle left pending are retried after a
        backoff, and that cycle writes the condition again)."""
        deadline = time.monotonic() + SYNC_TIMEOUT
        while time.monotonic() < deadline:
            status, body = await self.request("GET", object_path(group))
            for cond in ((body or {}).get("status") or {}).get("conditions") or [] if status == 200 else []:
                if cond.get("type") == POD_GROUP_SCHEDULED:
                    condition = {f: cond.get(f) or "" for f in ("status", "reason", "message")}
                    return {"name": key(group), "condition": condition}
            await asyncio.sleep(0.05)
        raise UpstreamError(f"PodGroup {key(group)}: no {POD_GROUP_SCHEDULED} condition")

    async def _first_cycle_over(self, group: str) -> None:
        """Until the log tells how the group's first cycle ended: its members' lines come before that
        line, and a retry's (which may write its condition over the first one's, from a lister that
        has not seen it yet) may be polled first (seed 4003, case 421)."""

        def ended() -> bool:
            return any(e.msg in GROUP_ENDS and e.values.get("podGroup") == group for e in self.entries)

        await self.wait_log(ended, f"the end of pod group {group}'s first cycle")

    def _first_group_outcome(self, group: str, polled: dict[str, Any]) -> dict[str, Any]:
        """``polled``, unless the log tells the first cycle ended otherwise (a retry's condition was
        read): then the condition that cycle wrote. The message counts too: a first cycle waiting for
        its preemption and a retry that found the group unschedulable write the same status and
        reason (gangs-s739958-13, the second group: the retry's was polled in one play of three)."""
        for e in self.entries:
            if e.values.get("podGroup") != group or e.msg not in GROUP_ENDS:
                continue
            status, reason, message = GROUP_ENDS[e.msg]
            cond = polled["condition"]
            other_end = cond["message"] != message and cond["message"] in GROUP_END_MESSAGES
            if (cond["status"], cond["reason"]) == (status, reason) and not other_end:
                return polled
            return {"name": group, "condition": {"status": status, "reason": reason, "message": message}}
        return polled

    def _tried_order(self, pods: list[str]) -> list[str]:
        """``pods`` in the order the log shows their first attempt (members of a pod group cycle are
        sorted by priority and first attempt, ties in no set order)."""
        first: dict[str, int] = {}
        for i, e in enumerate(self.entries):
            pod = e.values.get("pod")
            if e.msg in (ATTEMPT, GROUP_ATTEMPT) and pod in pods and pod not in first:
                first[pod] = i
        return sorted(pods, key=lambda p: (first.get(p, len(self.entries)), pods.index(p)))

    # --- what the scheduler's log tells (a subclass may learn it otherwise) ------------------------
    async def _synced(self, case: Case, expect: list[tuple[str, str, str]]) -> None:
        """Until the scheduler's informers have the case's nodes and bound pods (``expect``: the log
        lines that tell)."""
        await self.wait_seen(expect)

    async def _attempt(self, pod: Obj) -> dict[str, Any]:
        """The answer for ``pod``, once its first attempt is over."""
        pod_key = key(pod)
        attempt = Attempt(pod_key)
        waiting_since: float | None = None

        def decided() -> bool:
            nonlocal attempt, waiting_since
            attempt = first_attempt(self.entries, pod_key)
            if attempt.complete:
                return True
            if not attempt.maybe_no_goroutine:
                waiting_since = None
                return False
            waiting_since = waiting_since or time.monotonic()
            return time.monotonic() - waiting_since > NO_GOROUTINE_WAIT

        await self.wait_log(decided, f"a decision for pod {pod_key}", DECISION_TIMEOUT)
        return answer(attempt)

    async def _remove_pending(self, pod: Obj) -> None:
        """Delete a pod left pending, until the scheduler saw it go."""
        await self.delete(object_path(pod))
        await self.wait_seen([("Delete event for unscheduled pod", "pod", key(pod))])

    async def _seen_gone(self, case: Case) -> None:
        """Until the scheduler saw every node and pod of ``case`` go."""
        pods = {key(o) for o in [*case.objects, *case.preplaced, *case.pending] if o["kind"] == "Pod"}
        pods = {
            p for p in pods if self.seen("Add event for scheduled pod", "pod", p) or self._pending_known(p)
        }
        nodes = [o for o in case.objects if o["kind"] == "Node"]
        nodes += [s["node"] for s in case.steps if s["op"] == ADD_NODE]
        gone = [("Delete event for node", "node", key(o)) for o in nodes]
        await self.wait_seen(gone)
        await self.wait_log(lambda: all(self._pod_gone(p) for p in pods), "the deletion of every pod")

    async def _volume_state(self) -> tuple[list[tuple[str, str]], bool]:
        """(every volume's and claim's resource version, whether every volume made for a claim, with a
        ``claimRef`` to an existing one, is Bound; a claim naming a volume that does not suit it stays
        Pending, so a ``volumeName`` is no such sign)."""
        versions: list[tuple[str, str]] = []
        items: dict[str, list[Obj]] = {}
        for kind, path in (("pv", "/api/v1/persistentvolumes"), ("pvc", "/api/v1/persistentvolumeclaims")):
            status, body = await self.request("GET", path)
            items[kind] = (body.get("items") or []) if status == 200 and isinstance(body, dict) else []
            versions += [(key(o), o["metadata"]["resourceVersion"]) for o in items[kind]]
        claims = {key(c) for c in items["pvc"]}
        bound = True
        for pv in items["pv"]:
            ref = pv["spec"].get("claimRef") or {}
            if f"{ref.get('namespace')}/{ref.get('name')}" in claims:
                bound = bound and (pv.get("status") or {}).get("phase") == "Bound"
        return sorted(versions), bound

    async def _settle_volumes(self) -> None:
        """Until the PersistentVolume controller is done with the case's volumes and claims (every
        volume made for a claim Bound, and nothing changed for a second: on a busy machine the
        controller may take longer than that to start), then a moment for the scheduler's informers."""
        deadline = time.monotonic() + SYNC_TIMEOUT
        (last, bound), since = await self._volume_state(), time.monotonic()
        while (time.monotonic() - since < 1.0 or not bound) and time.monotonic() < deadline:
            await asyncio.sleep(0.2)
            now, bound = await self._volume_state()
            if now != last:
                last, since = now, time.monotonic()
        await asyncio.sleep(0.3)

    async def _provision(self) -> None:
        """A stand-in for a CSI provisioner: a claim the scheduler chose a node for (its PreBind set
        ``volume.kubernetes.io/selected-node`` and now waits) gets a volume on that node, so that the
        binding completes and the log says where the pod went."""
        done: set[str] = set()
        while True:
            status, body = await self.request("GET", "/api/v1/persistentvolumeclaims")
            for pvc in (body or {}).get("items") or [] if status == 200 else []:
                meta, spec = pvc["metadata"], pvc["spec"]
                annotations = meta.get("annotations") or {}
                node = annotations.get("volume.kubernetes.io/selected-node")
                if not node or spec.get("volumeName") or meta["uid"] in done:
                    continue
                done.add(meta["uid"])
                await self.create(_provisioned(pvc, node))
            await asyncio.sleep(0.1)

    async def _wait_pdb(self, pdb: Obj, case: Case) -> None:
        """Until the disruption controller has counted ``pdb``'s pods (every bound pod is healthy)."""
        ns = pdb["metadata"]["namespace"]
        selector = pdb["spec"]["selector"].get("matchLabels") or {}
        healthy = sum(
            1
            for o in case.objects
            if o["kind"] == "Pod"
            and o["metadata"]["namespace"] == ns
            and all((o["metadata"].get("labels") or {}).get(k) == v for k, v in selector.items())
        )
        deadline = time.monotonic() + SYNC_TIMEOUT
        while time.monotonic() < deadline:
            status, out = await self.request("GET", object_path(pdb))
            if status == 200 and isinstance(out, dict):
                st = out.get("status") or {}
                gen = (out.get("metadata") or {}).get("generation")
                if st.get("observedGeneration") == gen and st.get("currentHealthy", 0) == healthy:
                    return
            await asyncio.sleep(0.1)
        raise UpstreamError(f"PodDisruptionBudget {key(pdb)}: not counted by the disruption controller")

    def _case_objects(self, listed: list[Obj], case: Case) -> list[Obj]:
        """The listing without what the cluster has for itself (its namespaces, system priority
        classes, the ``kubernetes`` Service): the batch's namespaces and priority classes stay."""
        keep = {identity(o) for o in [*case.objects, *case.preplaced]}
        own = {("Namespace", n) for n in NAMESPACES} | {("PriorityClass", n) for n in PRIORITY_CLASSES}
        return [o for o in listed if identity(o) in keep or identity(o) in own]

    async def cleanup(self, case: Case) -> None:
        """Delete everything ``case`` made, and whatever else appeared since the batch started (volumes
        provisioned for it, claims made from templates); raises :class:`LeakError` if anything is left."""
        self._poll()
        for ns in NAMESPACES:
            base, resource = PATHS["Pod"].rsplit("/", 1)
            await self.delete(f"{base}/namespaces/{ns}/{resource}")
        for obj in [
            *case.objects,
            *case.groups,
            *(s["node"] for s in case.steps if s["op"] == ADD_NODE),
        ]:  # also what the listing may not show
            if obj["kind"] != "Pod":
                await self.delete(object_path(obj))
        for _ in range(3):
            left = [o for o in await self.read_back() if identity(o) not in self.baseline]
            if not left:
                break
            for obj in left:
                if obj["metadata"].get("finalizers"):  # pvc- and pv-protection: nothing to protect here
                    patch = {"metadata": {"finalizers": None}}
                    await self.request("PATCH", object_path(obj), patch, "application/merge-patch+json")
                await self.delete(object_path(obj))
        await self._seen_gone(case)
        left = [o for o in await self.read_back() if identity(o) not in self.baseline]
        if left:
            names = sorted(identity(o) for o in left)
            raise LeakError(f"case {case.name}: left in the cluster after cleanup: {names}")

    def _pending_known(self, pod: str) -> bool:
        return self.seen("Add event for unscheduled pod", "pod", pod) and not self.seen(
            "Delete event for unscheduled pod", "pod", pod
        )

    def _pod_gone(self, pod: str) -> bool:
        if self.seen("Add event for scheduled pod", "pod", pod):
            return self.seen("Delete event for scheduled pod", "pod", pod)
        return self.seen("Delete event for unscheduled pod", "pod", pod)


def _provisioned(pvc: Obj, node: str) -> Obj:
    """The volume a provisioner would make for ``pvc`` on ``node``, bound to it."""
    meta, spec = pvc["metadata"], pvc["spec"]
    driver = (meta.get("annotations") or {}).get(
        "volume.kubernetes.io/storage-provisioner", "csi.example.com"
    )
    name = f"pvc-{meta['uid']}"
    at_node = {"key": "kubernetes.io/hostname", "operator": "In", "values": [node]}
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": name, "annotations": {"pv.kubernetes.io/provisioned-by": driver}},
        "spec": {
            "capacity": {"storage": spec["resources"]["requests"]["storage"]},
            "accessModes": spec.get("accessModes") or ["ReadWriteOnce"],
            "storageClassName": spec.get("storageClassName") or "",
            "persistentVolumeReclaimPolicy": "Retain",
            "claimRef": {
                "apiVersion": "v1",
                "kind": "PersistentVolumeClaim",
                "namespace": meta["namespace"],
                "name": meta["name"],
                "uid": meta["uid"],
            },
            "csi": {"driver": driver, "volumeHandle": name},
            "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [at_node]}]}},
        },
    }


def _placement(state: dict[str, Any] | None) -> tuple[Any, ...]:
    """Where a pod is (node, nomination), None for a pod gone."""
    return (state.get("node"), state.get("nominated")) if state is not None else (None,)


def _short(out: Any) -> str:
    if isinstance(out, dict):
        return str(out.get("message") or out)[:300]
    return str(out)[:300]
