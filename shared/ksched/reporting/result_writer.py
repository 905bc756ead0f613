"""Writes kube-scheduler-simulator's result annotations on pods (``--record-results``), in the
background: GET the pod, append the results to its ``result-history``, PATCH ``metadata.annotations``
with the resourceVersion read as precondition, again from the GET on a conflict. A pod deleted or
recreated meanwhile (another uid) is left alone; a failure is logged, never raised."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Mapping
from typing import Any

from ksched.api.kinds import POD
from ksched.client.rest import Client
from ksched.reporting.simulator_results import with_history

log = logging.getLogger(__name__)

MERGE_PATCH = "application/merge-patch+json"


class ResultWriter:
    """One write per pod attempt, at most ``concurrency`` at a time, ``attempts`` tries on conflicts."""

    def __init__(self, api: Client, concurrency: int = 8, attempts: int = 5) -> None:
        self.api = api
        self.attempts = attempts
        self._sem = asyncio.Semaphore(concurrency)
        self._tasks: set[asyncio.Task[bool]] = set()
        self.failures = 0

    def write(self, namespace: str, name: str, uid: str, results: Mapping[str, str]) -> None:
        """Write ``results`` on the pod in the background."""
        task = asyncio.create_task(self.write_now(namespace, name, uid, results), name=f"results-{name}")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def drain(self, timeout: float = 5.0) -> None:
        """Wait for the writes under way (graceful shutdown)."""
        if self._tasks:
            await asyncio.wait(set(self._tasks), timeout=timeout)

    async def write_now(self, namespace: str, name: str, uid: str, results: Mapping[str, str]) -> bool:
        """Write ``results``; True once the API server took them."""
        path = POD.object_path(namespace, name)
        async with self._sem:
            try:
                for _ in range(self.attempts):
                    status, pod = await self._call("GET", path, None)
                    if status != 200:
                        return self._failed(namespace, name, f"GET: HTTP {status}")
                    meta = pod.get("metadata") or {}
                    if uid and meta.get("uid") != uid:
                        return self._failed(namespace, name, "the pod was recreated")
                    annotations = with_history(results, meta.get("annotations") or {})
                    patch = {
                        "metadata": {
                            "resourceVersion": meta.get("resourceVersion"),
                            "annotations": annotations,
                        }
                    }
                    status, _ = await self._call("PATCH", path, patch)
                    if status == 200:
                        return True
                    if status != 409:
                        return self._failed(namespace, name, f"PATCH: HTTP {status}")
                return self._failed(namespace, name, f"still conflicting after {self.attempts} attempts")
            except Exception as exc:
                return self._failed(namespace, name, str(exc))

    async def _call(self, method: str, path: str, body: Any) -> tuple[int, Any]:
        status, data = await self.api.request(method, path, body, MERGE_PATCH)
        return status, json.loads(data) if status == 200 else None

    def _failed(self, namespace: str, name: str, reason: str) -> bool:
        self.failures += 1
        log.warning("recording the scheduling results on pod %s/%s failed: %s", namespace, name, reason)
        return False
