"""``ksched differential --pipeline``: the same cases on a second cluster, where ksched's whole pipeline
schedules (``ksched kube-scheduler``, the drop-in: an embedded nats-server, informer, queue, scheduler
and binder) instead of kube-scheduler.

The pipeline's decisions are read from the API server, as any client sees them: the pod's
``nodeName``, or its ``PodScheduled`` condition (the FailedScheduling text) and ``nominatedNodeName``,
and the victims, from their ``Preempted`` events. Its informers are known to be in step with a case
when a probe pod, created after the case's objects and pinned to its last node, is placed there, or
is refused with ``0/N nodes`` for the case's N nodes: the pod watch delivers in order, so the informer
has every earlier pod event then, and the node watch every node.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import aiohttp

from ksched.differential.generate import HOSTNAME
from ksched.differential.model import Case, Obj, key
from ksched.differential.upstream import (
    DECISION_TIMEOUT,
    GATED,
    START_TIMEOUT,
    SYNC_TIMEOUT,
    Upstream,
    UpstreamError,
    object_path,
)
from ksched.launcher.controlplane import GANG_GATES
from ksched.launcher.stack import free_port

_NODES = re.compile(r"^0/(\d+) nodes are available")
NO_VICTIMS_QUIET = 3.0
"""Seconds without a ``Preempted`` event that tell a nominated pod preempted none (its victims were
all being deleted already): a second is not enough on a loaded machine (preemption-s9525-276)."""


def gated(condition: dict[str, Any]) -> bool:
    """A PodScheduled condition its scheduling gates wrote (no attempt yet)."""
    return condition.get("reason") == GATED


STARTS = 3
"""How many times the drop-in is started before the run gives up on it."""


class Pipeline(Upstream):
    """A cluster without kube-scheduler, scheduled by ``ksched kube-scheduler`` under the batch's
    configuration (as ``system:masters``: the drop-in's own RBAC is another test's subject)."""

    def __init__(
        self,
        kube: Path,
        workdir: Path,
        profiles: Any = (),
        say: Any = print,
        gangs: bool = False,
        ignorable_binder: bool = False,
        verbosity: int | None = None,
    ) -> None:
        super().__init__(kube, workdir, profiles, say, gangs, ignorable_binder)
        self.verbosity = verbosity
        """The drop-in's ``--v`` (its services' log level; None: INFO), to trace a case played again."""
        self.plane.parts = ("controller-manager",)
        self.process: asyncio.subprocess.Process | None = None
        self.port = 0
        self._config: Path | None = None

    @property
    def scheduler_kubeconfig(self) -> Path:
        return self.plane.admin_kubeconfig

    def argv(self, config: Path) -> list[str]:
        """The drop-in's command line under ``config``, on :attr:`port`."""
        kubeconfig = self.plane.admin_kubeconfig
        return [
            sys.executable,
            "-m",
            "ksched.cli",
            "kube-scheduler",
            f"--config={config}",
            f"--authentication-kubeconfig={kubeconfig}",
            f"--authorization-kubeconfig={kubeconfig}",
            "--bind-address=127.0.0.1",
            f"--secure-port={self.port}",
            f"--workdir={self.workdir / 'pipeline'}",
            *([f"--feature-gates={GANG_GATES}"] if self.gangs else []),
            *([f"--v={self.verbosity}"] if self.verbosity is not None else []),
        ]

    async def _launch(self, config: Path) -> None:
        self._config = config
        self.port = free_port()
        with (self.workdir / "ksched.log").open("ab") as out:
            self.process = await asyncio.create_subprocess_exec(
                *self.argv(config),
                stdout=out,
                stderr=out,
                stdin=asyncio.subprocess.DEVNULL,
                start_new_session=True,
            )

    async def _scheduler_ready(self) -> None:
        """Until the drop-in's /readyz answers 200 (every service of the pipeline ready). A drop-in
        that exits or is not ready in time is started again, as a kubelet restarts a static pod: on
        a loaded machine its services can take longer than its 60 s to start (seed 8501: the binder
        printed its first line after 27 s), and one slow start is no reason to end the run."""
        for start in range(1, STARTS + 1):
            try:
                await self._ready_once()
                return
            except UpstreamError as exc:
                if start == STARTS or self._config is None:
                    raise
                self.say(f"{exc}; starting it again, as a kubelet would ({start + 1} of {STARTS})")
                await self._stop_dropin()
                await self._launch(self._config)

    async def _ready_once(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT
        url = f"https://127.0.0.1:{self.port}/readyz"
        async with aiohttp.ClientSession() as http:
            while time.monotonic() < deadline:
                if self.process is not None and self.process.returncode is not None:
                    raise UpstreamError(
                        f"ksched kube-scheduler exited {self.process.returncode}: see {self.workdir}"
                    )
                with contextlib.suppress(aiohttp.ClientError, TimeoutError):
                    async with http.get(url, ssl=False, timeout=aiohttp.ClientTimeout(total=2)) as r:
                        if r.status == 200:
                            return
                await asyncio.sleep(0.5)
        raise UpstreamError(f"ksched kube-scheduler not ready in {START_TIMEOUT:.0f} s: see {self.workdir}")

    async def stop(self) -> None:
        await self._stop_dropin()
        await super().stop()

    async def _stop_dropin(self) -> None:
        """Stop ``ksched kube-scheduler`` (the cluster stays up)."""
        if self.process is not None and self.process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self.process.send_signal(signal.SIGTERM)
            try:
                await asyncio.wait_for(self.process.wait(), 30)
            except TimeoutError:
                self.process.kill()
                await self.process.wait()

    # --- what the API server tells --------------------------------------------------------------------
    async def _synced(self, case: Case, expect: list[tuple[str, str, str]]) -> None:
        nodes = [o for o in case.objects if o["kind"] == "Node"]
        if not nodes:
            await asyncio.sleep(0.5)
            return
        last = nodes[-1]["metadata"]["name"]
        probe: Obj = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": f"probe-{case.seed}-{case.index}", "namespace": "default"},
            "spec": {
                "containers": [{"name": "c", "image": "probe"}],
                "tolerations": [{"operator": "Exists"}],
                "nodeSelector": {HOSTNAME: last},
            },
        }
        deadline = time.monotonic() + SYNC_TIMEOUT
        while time.monotonic() < deadline:
            await self.create(probe)
            seen = await self._observe(probe)
            await self.delete(object_path(probe))
            await self._gone(probe)
            counted = _NODES.match(seen.get("message") or "")
            if seen["node"] == last or (counted and int(counted.group(1)) == len(nodes)):
                return
            await asyncio.sleep(0.2)
        raise UpstreamError(f"ksched's informer did not catch up with case {case.name}")

    async def _gone(self, pod: Obj) -> None:
        deadline = time.monotonic() + SYNC_TIMEOUT
        while time.monotonic() < deadline:
            status, _ = await self.request("GET", object_path(pod))
            if status == 404:
                return
            await asyncio.sleep(0.05)

    async def _observe(self, pod: Obj) -> dict[str, Any]:
        """``pod`` once placed, or refused (its PodScheduled condition), as read from the API server."""
        deadline = time.monotonic() + DECISION_TIMEOUT
        while time.monotonic() < deadline:
            status, body = await self.request("GET", object_path(pod))
            if status == 200 and isinstance(body, dict):
                if body["spec"].get("nodeName"):
                    return {"pod": key(pod), "node": body["spec"]["nodeName"]}
                for cond in (body.get("status") or {}).get("conditions") or []:
                    if (
                        cond.get("type") == "PodScheduled"
                        and cond.get("status") == "False"
                        and not gated(cond)
                    ):
                        await asyncio.sleep(0.3)  # the nomination may come in a write of its own
                        status, body = await self.request("GET", object_path(pod))
                        st = (body or {}).get("status") or {}
                        for c in st.get("conditions") or []:
                            if c.get("type") == "PodScheduled":
                                cond = c
                        return {
                            "pod": key(pod),
                            "node": None,
                            "message": cond.get("message"),
                            "nominated": st.get("nominatedNodeName") or None,
                        }
            await asyncio.sleep(0.05)
        raise UpstreamError(f"ksched: no decision for pod {key(pod)} in {DECISION_TIMEOUT:.0f} s")

    async def _attempt(self, pod: Obj) -> dict[str, Any]:
        out = await self._observe(pod)
        if out["node"] is None:
            group_member = pod["spec"].get("schedulingGroup") and pod["spec"].get("priorityClassName")
            # a pod group member may preempt though not nominated: its group waits for no
            # preemption, and its victims go all the same, as upstream's
            nominated = bool(out.get("nominated"))
            out["victims"] = await self._preempted_for(pod, nominated) if nominated or group_member else []
        return out

    async def _preempted_for(self, pod: Obj, nominated: bool = False) -> list[str]:
        """The pods preempted for ``pod``, from their ``Preempted`` events (``Preempted by pod UID on
        node NODE``; not every pod being deleted: an earlier pod's victims stay terminating, no
        kubelet ends them, seed 8202 case 134), once that set has not changed for a second; for a
        ``nominated`` pod, none only once none came for :data:`NO_VICTIMS_QUIET` s (the preemption
        starts after the pod's status write, and its events are written after the deletions:
        preemption-s9525-276, on a machine at load 21, had none within the second)."""
        status, body = await self.request("GET", object_path(pod))
        uid = (body or {}).get("metadata", {}).get("uid") if status == 200 else None
        if not uid:
            return []
        return await self._settled(
            "/apis/events.k8s.io/v1/events",
            NO_VICTIMS_QUIET if nominated else 1.0,
            lambda e: (
                f"{e['regarding'].get('namespace')}/{e['regarding'].get('name')}"
                if e.get("reason") == "Preempted" and f"Preempted by pod {uid} " in (e.get("note") or "")
                else None
            ),
        )

    async def _settled(self, path: str, quiet_empty: float, pick: Callable[[Obj], str | None]) -> list[str]:
        """What ``pick`` names of the items listed at ``path`` (sorted), once that has not changed for
        a second (``quiet_empty`` seconds while it names nothing)."""
        last: list[str] = []
        since = time.monotonic()
        deadline = since + SYNC_TIMEOUT
        while time.monotonic() - since < (1.0 if last else quiet_empty) and time.monotonic() < deadline:
            status, body = await self.request("GET", path)
            items = (body or {}).get("items") or [] if status == 200 else []
            now = sorted(name for name in map(pick, items) if name is not None)
            if now != last:
                last, since = now, time.monotonic()
            await asyncio.sleep(0.1)
        return last

    def _updates(self, pod: str) -> int:
        return 0  # no log

    async def _started_seen(self, before: dict[str, int]) -> None:
        """No log: a moment for the informer (the status patch's watch event)."""
        await asyncio.sleep(0.3)

    async def _first_cycle_over(self, group: str) -> None:
        """No log: the condition polled is the first one written."""

    def _final_top(self, pod: str) -> dict[str, Any]:
        return {}  # no scores to tell

    async def _remove_pending(self, pod: Obj) -> None:
        await self.delete(object_path(pod))  # the next pod's events come after this deletion's

    async def _seen_gone(self, case: Case) -> None:
        """Nothing to wait for: the next case's probe pod comes after every deletion."""
