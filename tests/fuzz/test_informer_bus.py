"""Fuzzing the informer's subjects over a real nats-server, with kubesim over HTTP behind it:
``P.snapshot.bootstrap``, ``P.cache.pending`` (bootstraps: chunks go to the request's ``deliver``),
``P.cache.assume`` and ``P.cache.forget``. Each example starts from a fresh pending pod and a valid
request about it, so mutations reach the cache's checks; afterwards the informer still answers a
bootstrap and a valid assume, and never published a chunk anywhere but an inbox."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ksched.bus import endpoints
from ksched.bus.bootstrap import fetch_bootstrap
from ksched.bus.messages import (
    AssumeRejectCode,
    AssumeRequest,
    PendingPod,
    PendingPodsRequest,
    SnapshotBootstrapRequest,
)
from tests.fuzz.bus_checks import check_request, crashes
from tests.fuzz.cluster import Cluster, stream_subjects
from tests.fuzz.payloads import payloads
from tests.fuzz.profiles import fuzz_settings

SUBJECTS = ["bootstrap", "pending", "assume", "forget"]


async def serves(cluster: Cluster, obj: dict[str, Any]) -> None:
    """The informer still bootstraps a requester and judges a valid assume."""
    bus = cluster.bus
    reply, items = await fetch_bootstrap(
        bus,
        endpoints.PENDING_BOOTSTRAP,
        lambda inbox: PendingPodsRequest(requester="liveness", deliver=inbox),
        PendingPod,
        timeout=5,
    )
    assert reply.epoch == cluster.service.epoch and len(items) == reply.items
    answer = await bus.request(endpoints.ASSUME, AssumeRequest(placement=cluster.placement(obj)))
    assert answer.accepted or answer.code in (
        AssumeRejectCode.ALREADY_ASSUMED,
        AssumeRejectCode.POD_NOT_PENDING,
    )


@fuzz_settings(30)
@given(data=st.data(), which=st.sampled_from(SUBJECTS))
async def test_informer_subjects(
    cluster: Cluster, caplog: pytest.LogCaptureFixture, data: st.DataObject, which: str
) -> None:
    caplog.clear()
    obj = await cluster.fresh_pod()
    endpoint, valid = cluster.requests(obj)[which]
    texts = [cluster.inbox, *stream_subjects(cluster.bus.subjects)]
    payload = data.draw(payloads(valid, texts=texts), label="payload")
    await check_request(cluster.bus, endpoint, payload)
    await serves(cluster, obj)
    await cluster.bus.nc.flush()
    assert cluster.misdelivered == []
    assert crashes(caplog) == []


async def test_bootstrap_chunks_go_to_inboxes_only(cluster: Cluster) -> None:
    """Found while writing this fuzzer: ``deliver`` was any subject, so whoever may request a bootstrap could
    make the informer publish chunks into its own streams (the feed, the deltas, the binder's work
    queue), which the consumers then had to drop. The informer now answers with an error instead."""
    bus = cluster.bus
    for deliver in [*stream_subjects(bus.subjects), "", "a b", f"{bus.subjects.prefix}._INBOX"]:
        replies = [
            await bus.request(
                endpoints.PENDING_BOOTSTRAP, PendingPodsRequest(requester="t", deliver=deliver)
            ),
            await bus.request(
                endpoints.SNAPSHOT_BOOTSTRAP, SnapshotBootstrapRequest(replica_id="t", deliver=deliver)
            ),
        ]
        for reply in replies:
            assert reply.chunks == 0 and "deliver" in reply.error and "inbox" in reply.error, reply
    await bus.nc.flush()
    assert cluster.misdelivered == []
    await serves(cluster, await cluster.fresh_pod())
