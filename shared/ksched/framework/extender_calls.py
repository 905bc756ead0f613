"""Calling the configured extenders at their points of the cycle, as upstream's scheduler does:

- :func:`find_nodes_that_pass_extenders` after the in-tree filters (``findNodesThatPassExtenders``):
  extenders run one after another on the nodes the previous one kept; rejected nodes get an
  Unschedulable / UnschedulableAndUnresolvable status with the extender's message (no plugin name);
- :func:`prioritize_with_extenders` after the in-tree scores (``prioritizeNodes``): concurrently,
  errors ignored, each score scaled by ``weight * MAX_NODE_SCORE / MAX_EXTENDER_PRIORITY``;
- :func:`bind_with_extenders` before the bind plugins (``extendersBinding``);
- :func:`process_preemption_with_extenders` when preemption finalizes its candidates
  (``Evaluator.callExtenders``).

A failing extender that is ignorable is skipped (logged); otherwise the caller gets an error.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence

from ksched.api.core import Pod
from ksched.framework.events import ActionType, ClusterEvent, ClusterEventWithHint, EventResource
from ksched.framework.extender import (
    EXTENDER_NAME,
    MAX_EXTENDER_PRIORITY,
    Extender,
    ExtenderError,
    Victims,
)
from ksched.framework.interfaces import MAX_NODE_SCORE
from ksched.framework.nodeinfo import NodeInfo
from ksched.framework.results import Diagnosis
from ksched.framework.status import Code, Status

log = logging.getLogger(__name__)

#: an extender score of s counts as s * weight * SCORE_SCALE (integer division, as upstream)
SCORE_SCALE = MAX_NODE_SCORE // MAX_EXTENDER_PRIORITY


class ExtenderEnqueueExtension:
    """Extenders have no queueing hints: a pod they rejected is worth retrying on any cluster event
    (upstream registers a default enqueue extension under :data:`EXTENDER_NAME`)."""

    name = EXTENDER_NAME

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [ClusterEventWithHint(ClusterEvent(EventResource.WILDCARD, int(ActionType.ALL)))]


def call_error(ext: Extender, verb: str, exc: BaseException) -> ExtenderError:
    """The error an extender call ends with; an :class:`ExtenderError` already names the extender."""
    if isinstance(exc, ExtenderError):
        return exc
    return ExtenderError(f"extender {ext.name} {verb}: {exc!r}")


def has_extender_filters(extenders: Sequence[Extender], pod: Pod | None = None) -> bool:
    """Whether an extender filters (with ``pod``: one interested in that pod)."""
    return any(ext.is_filter() and (pod is None or ext.is_interested(pod)) for ext in extenders)


def has_extender_prioritizers(extenders: Sequence[Extender]) -> bool:
    return any(ext.is_prioritizer() for ext in extenders)


async def find_nodes_that_pass_extenders(
    extenders: Sequence[Extender], pod: Pod, nodes: list[NodeInfo], diagnosis: Diagnosis
) -> list[NodeInfo]:
    """The nodes every interested extender keeps; rejections are recorded in ``diagnosis``.

    Raises :class:`ExtenderError` when a non-ignorable extender fails.
    """
    statuses = diagnosis.node_to_status
    for ext in extenders:
        if not nodes:
            break
        if not ext.is_interested(pod):
            continue
        try:
            verdict = await ext.filter(pod, nodes)
        except Exception as exc:
            if ext.is_ignorable():
                log.info(
                    "Skipping extender %s as it returned error and has ignorable flag set: %s", ext.name, exc
                )
                continue
            raise call_error(ext, "filter", exc) from exc
        unresolvable = verdict.failed_and_unresolvable
        for node_name, message in unresolvable.items():
            statuses.set(node_name, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, message))
            diagnosis.extender_rejections[node_name] = ext.name
        for node_name, message in verdict.failed.items():
            if node_name in unresolvable:
                continue  # failedAndUnresolvableNodes takes precedence
            statuses.set(node_name, Status(Code.UNSCHEDULABLE, message))
            diagnosis.extender_rejections[node_name] = ext.name
        nodes = verdict.nodes
    return nodes


async def prioritize_with_extenders(
    extenders: Sequence[Extender], pod: Pod, nodes: Sequence[NodeInfo]
) -> dict[str, dict[str, int]]:
    """Extender name -> node name -> weighted, scaled score, from every interested extender (as
    upstream's prioritizeNodes: one without a prioritize verb scores every node 0, with weight 0,
    calling nothing).

    The calls run concurrently; a failing extender gives no scores (upstream ignores the error).
    """
    callers = [ext for ext in extenders if ext.is_interested(pod)]
    if not callers or not nodes:
        return {}
    replies = await asyncio.gather(*(ext.prioritize(pod, nodes) for ext in callers), return_exceptions=True)
    out: dict[str, dict[str, int]] = {}
    for ext, reply in zip(callers, replies, strict=True):
        if isinstance(reply, BaseException):
            if not isinstance(reply, Exception):
                raise reply
            log.debug("Failed to run extender's priority function, no score given by %s: %s", ext.name, reply)
            continue
        host_scores, weight = reply
        by_node = out.setdefault(ext.name, {})
        for node_name, score in host_scores:
            by_node[node_name] = by_node.get(node_name, 0) + score * weight * SCORE_SCALE
    return out


async def bind_with_extenders(
    extenders: Sequence[Extender], pod: Pod, node_name: str
) -> tuple[bool, Status | None]:
    """(whether an extender handled the binding, its error status). The first interested binder binds;
    an ignorable one that fails passes the pod on to the next binder, then to the bind plugins."""
    for ext in extenders:
        if not ext.is_binder() or not ext.is_interested(pod):
            continue
        try:
            await ext.bind(pod, node_name)
        except Exception as exc:
            if ext.is_ignorable():
                log.info(
                    "Skipping extender %s in bind as it returned error and has ignorable flag set: %s",
                    ext.name,
                    exc,
                )
                continue
            return True, Status.as_error(call_error(ext, "bind", exc))
        return True, None
    return False, None


async def process_preemption_with_extenders(
    extenders: Sequence[Extender],
    pod: Pod,
    victims: dict[str, Victims],
    nodes: Mapping[str, NodeInfo],
) -> tuple[dict[str, Victims], Status | None]:
    """Let every interested extender that supports preemption narrow the candidates (node name ->
    victims), each seeing the previous one's answer; an Error status when a non-ignorable one fails."""
    for ext in extenders:
        if not victims:
            break
        if not ext.supports_preemption() or not ext.is_interested(pod):
            continue
        try:
            answer = await ext.process_preemption(pod, victims, nodes)
        except Exception as exc:
            if ext.is_ignorable():
                log.info(
                    "Skipped extender %s as it returned error and has ignorable flag set: %s", ext.name, exc
                )
                continue
            return {}, Status.as_error(call_error(ext, "preempt", exc))
        for node_name in list(answer):
            if answer[node_name].pods:
                continue
            if ext.is_ignorable():
                log.info("Ignored node %s for which extender %s didn't report victims", node_name, ext.name)
                del answer[node_name]
                continue
            return {}, Status.as_error(
                ExtenderError(f'expected at least one victim pod on node "{node_name}"')
            )
        victims = answer
    return victims, None
