"""Binder metrics as upstream's: labels, buckets, scheduler_pod_scheduled_after_flush_total."""

from __future__ import annotations

import msgspec
import pytest
from ksched_binder import metrics
from ksched_binder.metrics import attempts_label
from ksched_binder.options import BinderOptions
from ksched_binder.service import BinderService
from prometheus_client import REGISTRY

from ksched.bus.messages import Placement
from ksched.config import default_config
from ksched.framework.cycle_state import CycleState
from ksched.framework.podinfo import PodInfo
from ksched.framework.runtime import Framework, PluginsByPoint
from ksched.framework.snapshot import Snapshot
from ksched.framework.status import Status
from ksched.framework.testing import make_pod
from ksched.service.options import CommonOptions


@pytest.mark.parametrize(("attempts", "label"), [(1, "1"), (14, "14"), (15, "15+"), (40, "15+")])
def test_attempts_label_is_capped_like_upstream(attempts: int, label: str) -> None:
    assert attempts_label(attempts) == label


class Binds:
    """A Bind plugin that binds every pod (no API)."""

    name = "Binds"

    async def bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        return None


def binder() -> BinderService:
    options = BinderOptions(
        common=CommonOptions(identity="b1", nats="nats://127.0.0.1:1", kubeconfig=None, subject_prefix="t")
    )
    service = BinderService(options, default_config())
    fw = Framework("default-scheduler", Snapshot())
    fw.set_plugins(PluginsByPoint(bind=[Binds()]))
    service.frameworks = {"default-scheduler": fw}
    return service


def placement(name: str, *, flushed: bool) -> Placement:
    pod = make_pod(name, uid=f"uid-{name}")
    return Placement(
        placement_id=f"uid-{name}:1",
        pod_uid=f"uid-{name}",
        namespace="default",
        name=name,
        node_name="n1",
        scheduler_id="s1",
        profile="default-scheduler",
        epoch="e1",
        snapshot_generation=1,
        attempt=2,
        pod=msgspec.json.encode(pod),
        flushed_from_unschedulable=flushed,
    )


def after_flush() -> float:
    return REGISTRY.get_sample_value("scheduler_pod_scheduled_after_flush_total") or 0.0


async def test_a_bound_pod_flushed_from_unschedulable_counts_once() -> None:
    service = binder()
    before = after_flush()
    assert await service.bind(placement("plain", flushed=False)) == "bound"
    assert after_flush() == before
    assert await service.bind(placement("flushed", flushed=True)) == "bound"
    assert after_flush() == before + 1


def test_upstream_buckets() -> None:
    def bounds(name: str) -> list[float]:
        return [
            float(s.labels["le"])
            for m in REGISTRY.collect()
            if m.name == name
            for s in m.samples
            if s.name.endswith("_bucket") and s.labels["le"] != "+Inf"
        ]

    # prometheus_client exports a labelled histogram's buckets only once a series exists
    metrics.PERMIT_WAIT.labels("allowed")
    metrics.SLI_DURATION.labels("1")
    assert bounds("scheduler_permit_wait_duration_seconds")[:3] == [0.001, 0.002, 0.004]
    assert len(set(bounds("scheduler_permit_wait_duration_seconds"))) == 15
    assert bounds("scheduler_pod_scheduling_sli_duration_seconds")[0] == 0.01
    assert max(bounds("scheduler_pod_scheduling_sli_duration_seconds")) == 0.01 * 2**19
    assert bounds("scheduler_pod_scheduling_attempts") == [1, 2, 4, 8, 16]
