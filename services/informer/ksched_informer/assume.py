"""The assume decision, pure (no bus, no I/O): whether the cache takes a scheduler's placement, and
the answer the scheduler gets. Accepting one changes the cache (the pod is assumed), so the next
placement checked sees it. Recording an accepted placement is :mod:`ksched_informer.ledger`'s."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass

import msgspec

from ksched.api.base import DECODE_ERRORS
from ksched.api.core import Pod
from ksched.bus.messages import AssumeRejectCode, AssumeReply, AssumeRequest, Placement
from ksched.cache.ledger import ClusterCache
from ksched.framework.runtime import Framework
from ksched_informer import metrics

log = logging.getLogger(__name__)


def decided_on_another_version(placement: Placement, pod: Pod) -> bool:
    """Whether the replica decided on a version of ``pod`` whose labels or spec differ from the
    pending one (the placement carries the pod it decided on)."""
    if placement.resource_version == pod.metadata.resource_version:
        return False
    try:
        decided = msgspec.json.decode(placement.pod, type=Pod)
    except DECODE_ERRORS:  # not JSON, not UTF-8, not a pod: whatever it was, not this version
        return True
    return decided.spec != pod.spec or decided.metadata.labels != pod.metadata.labels


def refuse_early(
    cache: ClusterCache, frameworks: Mapping[str, Framework], epoch: str, p: Placement, serving: bool
) -> AssumeReply | None:
    """The answer to a placement refused before its check: cache not ready (``serving`` False),
    another epoch, pod no longer pending, node gone, unknown profile."""
    code, reason = "", ""
    if not serving:
        return AssumeReply(accepted=False, code=AssumeRejectCode.NOT_READY, reason="cache is not synced yet")
    if p.epoch != epoch:
        code, reason = AssumeRejectCode.STALE_EPOCH, f"decision made in epoch {p.epoch}"
    elif p.pod_uid not in cache.pending:
        assumed = p.pod_uid in cache.assumed
        code = AssumeRejectCode.ALREADY_ASSUMED if assumed else AssumeRejectCode.POD_NOT_PENDING
        reason = "pod is no longer pending"
    elif p.node_name not in cache.snapshot.node_map:
        code, reason = AssumeRejectCode.NODE_NOT_FOUND, p.node_name
    elif p.profile not in frameworks:
        code, reason = AssumeRejectCode.DOES_NOT_FIT, f"no profile for schedulerName {p.profile!r}"
    if not code:
        return None
    return AssumeReply(accepted=False, code=code, reason=reason, epoch=epoch)


@dataclass(frozen=True)
class Verdict:
    """The answer to one placement; ``pod`` is the pending pod it assumed (None if refused)."""

    reply: AssumeReply
    pod: Pod | None = None


def decide(
    cache: ClusterCache, frameworks: Mapping[str, Framework], epoch: str, req: AssumeRequest, serving: bool
) -> Verdict:
    """Check ``req``'s placement on the cache's current state and assume it if it passes."""
    p = req.placement
    refused = refuse_early(cache, frameworks, epoch, p, serving)
    if refused is not None:
        metrics.ASSUMES_OF(refused.code).inc()
        cache.answers.answered(req.session, req.seq, accepted=False)
        return Verdict(refused)
    pod = cache.pending[p.pod_uid]
    verdict = cache.assume(
        pod,
        p.node_name,
        generation=p.snapshot_generation,
        scheduler_id=p.scheduler_id,
        profile=frameworks[p.profile],
        session=req.session,
        seq=req.seq,
        basis_from=req.basis_from,
        spread_slack=req.spread_slack,
        pod_changed=decided_on_another_version(p, pod),
        plugin_state=p.plugin_state,
    )
    if verdict.full_check:
        metrics.ASSUME_FULL_CHECKS.labels(verdict.full_check).inc()
    for plugin in verdict.rerun:
        metrics.ASSUME_PLUGIN_RECHECKS.labels(plugin).inc()
    if not verdict.accepted:
        log.debug("assume rejected: %s", verdict.reason)
        metrics.ASSUMES_OF(AssumeRejectCode.DOES_NOT_FIT).inc()
        reply = AssumeReply(
            accepted=False,
            code=AssumeRejectCode.DOES_NOT_FIT,
            reason=verdict.reason,
            epoch=epoch,
            generation=cache.generation,
        )
        return Verdict(reply)
    return Verdict(AssumeReply(accepted=True, epoch=epoch, generation=cache.generation), pod)
