"""An in-process harness for a binder, like the queue's :class:`QueueCore` tests: the binding
cycle (WaitOnPermit, PreBind, Bind, PostBind) of one placement, wired as the service wires it
(:meth:`BinderService.use_api`) against kubesim over HTTP, without NATS or processes. What the
binder would send on a failure (forget to the informer, Unreserve to the deciding replica, requeue
to the queue) is recorded by :class:`Outbox`."""

from __future__ import annotations

from typing import Any, TypeVar, cast

from ksched_binder.options import BinderOptions
from ksched_binder.service import BinderService

from ksched.api.core import Pod
from ksched.bus.messages import Ack, AssumeRequest, Message, PermitDecision, Placement
from ksched.bus.subjects import Subjects
from ksched.client.rest import Client
from ksched.config import default_config
from ksched.framework.cycle_state import CycleState
from ksched.framework.podinfo import PodInfo
from ksched.framework.status import Code, Status
from ksched.framework.testing import make_node
from ksched.service.options import CommonOptions
from tests.scheduler.harness import SchedulerHarness

M = TypeVar("M", bound=Message)
SCHEDULER = "replica-h"
"""The identity of the harness's scheduler replica."""


class Waiting:
    """A Permit plugin that makes every pod wait (as a gang scheduler would)."""

    name = "Gang"

    def __init__(self, timeout: float) -> None:
        self.timeout = timeout

    def permit(self, state: CycleState, pod: PodInfo, node_name: str) -> tuple[Status | None, float]:
        return Status(Code.WAIT, "waiting for the gang"), self.timeout


class Outbox:
    """Stands in for the bus: keeps every request (subject, message) and answers with an Ack."""

    def __init__(self) -> None:
        self.subjects = Subjects("h")
        self.sent: list[tuple[str, Message]] = []

    async def request(self, endpoint: Any, message: Message, **_: Any) -> Any:
        """``Bus.request``: an endpoint and its request, answered with an Ack."""
        self.sent.append((endpoint.subject(self.subjects), message))
        return Ack()

    def of(self, kind: type[M]) -> list[M]:
        return [m for _, m in self.sent if isinstance(m, kind)]


class BinderHarness:
    """A binder binding through ``api``; its messages go to :attr:`outbox`."""

    def __init__(self, api: Client) -> None:
        options = BinderOptions(common=CommonOptions(identity="binder-h", subject_prefix="h"))
        self.service = BinderService(options, default_config())
        self.outbox = Outbox()
        self.service.bus = cast(Any, self.outbox)
        self.service.use_api(api)

    @staticmethod
    async def placement(pod: Pod, node: str, *, permit_wait: float = 0.0) -> Placement:
        """The placement a scheduler replica decides for ``pod`` when ``node`` is the only node (its
        cycle runs in :class:`~tests.scheduler.harness.SchedulerHarness`: the placement carries the
        plugins' state for PreBind, and a Permit wait of ``permit_wait`` seconds if given)."""
        scheduler = SchedulerHarness(
            [make_node(node, allocatable={"cpu": "4", "memory": "8Gi", "pods": "110"})]
        )
        if permit_wait:
            scheduler.cycle.frameworks[pod.spec.scheduler_name].plugins.permit.append(Waiting(permit_wait))
        [assume] = [m for m in await scheduler.schedule(pod) if isinstance(m, AssumeRequest)]
        return assume.placement

    async def bind(self, placement: Placement) -> str:
        """The binding cycle of ``placement``: 'bound', 'gone', 'failed' or 'retry'."""
        result = await self.service.bind(placement)
        await self.service.tasks.drain(5.0)  # the events it reports
        assert not self.service.tasks.failed.is_set(), self.service.tasks.failure
        return result

    async def decide(self, placement: Placement, *, allow: bool, plugin: str, message: str = "") -> None:
        """A Permit plugin's decision about the waiting pod (as published on ``P.permit.<uid>``)."""
        decision = PermitDecision(
            pod_uid=placement.pod_uid,
            namespace=placement.namespace,
            name=placement.name,
            plugin=plugin,
            allow=allow,
            message=message,
        )
        await self.service.on_permit(decision, cast(Any, None))

    async def close(self) -> None:
        await self.service.tasks.cancel_all(drain=5.0)
