"""Device taints and tolerations (upstream ``resourceclaim.ToleratesTaint``, DRADeviceTaints)."""

from __future__ import annotations

from ksched.api.resource import DeviceTaint, DeviceToleration


def tolerates(toleration: DeviceToleration, taint: DeviceTaint) -> bool:
    """Whether ``toleration`` tolerates ``taint``: same effect and key when set, then the operator."""
    if toleration.effect and toleration.effect != taint.effect:
        return False
    if toleration.key and toleration.key != taint.key:
        return False
    if toleration.operator in ("", "Equal"):
        return toleration.value == taint.value
    return toleration.operator == "Exists"
