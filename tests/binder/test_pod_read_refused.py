"""A binder whose read of a pod the API server refuses for good (403: its ServiceAccount may not ``get``
pods). The read checks a placement whose binding cycle failed and that may have been bound by an
earlier delivery (a Binding refused, as a restarted API server refuses while it loads its RBAC):
without an answer the binder may neither bind it again nor forget it, so it keeps it and tries again.
It says so clearly (an error naming the pod, the verb and the permission, at most once a minute; the
counter ``ksched_binder_pod_reads_failed_total{code}``) and tries again with a growing delay, and the
placement is bound once the binder may read and bind. kubesim grants a ServiceAccount's token no
resource verb (ksched_kubesim.access): its Binding is refused too, then the read. A real nats-server,
kubesim over HTTP."""

from __future__ import annotations

import logging
import time
from pathlib import Path

import msgspec
import pytest
import yaml
from ksched_kubesim import KubeSim
from prometheus_client import REGISTRY

from ksched.bus.connect import connect
from ksched.bus.embedded import EmbeddedNats
from ksched.bus.endpoints import PLACEMENTS
from ksched.bus.jetstream import TypedKV, publish
from ksched.bus.messages import EndedPlacement, Placement
from ksched.bus.streams import ENDED_PLACEMENTS
from ksched.bus.subjects import Subjects
from ksched.bus.tokens import encode_token
from ksched.framework.testing import make_pod
from tests.binder.harness import BinderHarness
from tests.binder.test_ended_elsewhere import PREFIX, binder, close
from tests.fixtures.kubesim import client_for, fast_config
from tests.informer.test_service import node, pod
from tests.polling import until

READS = "ksched_binder_pod_reads_failed_total"


def refused_reads() -> float:
    return REGISTRY.get_sample_value(READS, {"code": "403"}) or 0.0


def account_kubeconfig(kube: KubeSim, admin: Path, path: Path) -> Path:
    """``admin``'s kubeconfig with the token of ServiceAccount ksched/ksched-binder instead."""
    config = yaml.safe_load(admin.read_text())
    config["users"][0]["user"] = {"token": kube.access.service_account_token("ksched", "ksched-binder")}
    path.write_text(yaml.safe_dump(config))
    return path


async def test_a_pod_read_refused_for_good_is_logged_backed_off_and_loses_nothing(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="ksched_binder.service")
    async with KubeSim(fast_config()) as kube, EmbeddedNats() as server:
        admin = kube.write_kubeconfig(tmp_path / "admin")
        kube.create(node("n1"))
        uid = kube.create(pod("a"))["metadata"]["uid"]
        decided = await BinderHarness.placement(make_pod("a", "default", uid=uid), "n1")
        placement: Placement = msgspec.structs.replace(decided, assumed_at=time.time())
        service = binder(server.url, account_kubeconfig(kube, admin, tmp_path / "binder"), "b1")
        informer = await connect(server.url, name="informer", subjects=Subjects(PREFIX))
        try:
            await service.start()
            before = refused_reads()
            await publish(informer, PLACEMENTS, placement, msg_id=placement.placement_id)

            def reads() -> list[float]:
                """When the binder's reads of pod a were refused (each one logged: an error, then debug)."""
                return [
                    r.created
                    for r in caplog.records
                    if r.name == "ksched_binder.service"
                    and (
                        "cannot read pod default/a" in r.getMessage()
                        or "pod default/a not read" in r.getMessage()
                    )
                ]

            seen = await until(lambda: (t := reads())[2:] and t, timeout=10, what="3 refused reads of pod a")
            first, second = seen[1] - seen[0], seen[2] - seen[1]
            assert second > 1.8 and second > 1.4 * first, seen  # 1 s, then 2 s: a growing delay
            assert refused_reads() - before >= 3

            errors = [
                r.getMessage()
                for r in caplog.records
                if r.name == "ksched_binder.service" and r.levelno == logging.ERROR
            ]
            assert len(errors) == 1, errors  # once a minute, not once a delivery
            for named in ("pod default/a", "GET pods/a", "HTTP 403", '"get" "pods"', "ksched-binder"):
                assert named in errors[0]
            # kept: not bound, not ended (no record, nothing forgotten), still in the work queue
            assert (kube.get("Pod", "a", "default") or {})["spec"].get("nodeName") is None
            assert placement.placement_id not in service._ended
            ended = await TypedKV.open(informer, ENDED_PLACEMENTS, EndedPlacement)
            assert await ended.get(encode_token(placement.placement_id)) is None

            # the binder may read and bind again (its RBAC fixed): the next delivery binds the pod
            assert service.api is not None
            refused_api = service.api
            service.use_api(await client_for(admin))
            await refused_api.close()
            await until(
                lambda: (kube.get("Pod", "a", "default") or {})["spec"].get("nodeName") == "n1",
                timeout=10,
                what="pod a bound",
            )
        finally:
            await informer.close(drain=False)
            await close(service)
