"""Validation of NodeAffinityArgs (upstream ``ValidateNodeAffinityArgs``)."""

from __future__ import annotations

from ksched.apimachinery.field import child
from ksched.apimachinery.nodeselector import NodeSelector, NodeSelectorError, PreferredSchedulingTerms
from ksched.plugins.args.types import NodeAffinityArgs


def validate_node_affinity_args(args: NodeAffinityArgs | None, path: str = "") -> list[str]:
    """Error messages for ``args`` (empty when valid), each prefixed by its field path under ``path``.

    ``addedAffinity`` must parse as upstream parses node selectors: label keys and values, operator
    names, value counts, and ``matchFields`` with exactly one value.
    """
    if args is None or args.added_affinity is None:
        return []
    affinity = args.added_affinity
    errors: list[str] = []
    required = affinity.required_during_scheduling_ignored_during_execution
    if required is not None:
        where = child(path, "addedAffinity", "requiredDuringSchedulingIgnoredDuringExecution")
        errors.extend(NodeSelector(required, where).errors)
    preferred = affinity.preferred_during_scheduling_ignored_during_execution
    if preferred:
        where = child(path, "addedAffinity", "preferredDuringSchedulingIgnoredDuringExecution")
        try:
            PreferredSchedulingTerms(preferred, where)
        except NodeSelectorError as exc:
            errors.extend(exc.errors)
    return list(dict.fromkeys(errors))
