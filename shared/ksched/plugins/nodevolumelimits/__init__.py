"""NodeVolumeLimits: CSI attach limits per node (upstream ``nodevolumelimits``)."""

from ksched.plugins.nodevolumelimits.csi import (
    ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED,
    NAME,
    CSILimits,
    NodeVolumeLimitsFeatures,
    new,
)

__all__ = ["ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED", "NAME", "CSILimits", "NodeVolumeLimitsFeatures", "new"]
