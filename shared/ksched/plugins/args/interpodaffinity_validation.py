"""Validation of InterPodAffinityArgs (upstream ``ValidateInterPodAffinityArgs``), in upstream's words."""

from __future__ import annotations

from ksched.apimachinery import field as fe
from ksched.plugins.args.types import InterPodAffinityArgs

MIN_HARD_POD_AFFINITY_WEIGHT = 0
MAX_HARD_POD_AFFINITY_WEIGHT = 100


def validate_inter_pod_affinity_args(args: InterPodAffinityArgs, path: str) -> list[str]:
    """Field errors for ``args`` under ``path`` (``""`` for the args themselves); empty when valid."""
    weight = args.hard_pod_affinity_weight
    if not MIN_HARD_POD_AFFINITY_WEIGHT <= weight <= MAX_HARD_POD_AFFINITY_WEIGHT:
        detail = f"not in valid range [{MIN_HARD_POD_AFFINITY_WEIGHT}, {MAX_HARD_POD_AFFINITY_WEIGHT}]"
        return [str(fe.invalid(fe.child(path, "hardPodAffinityWeight"), weight, detail))]
    return []
