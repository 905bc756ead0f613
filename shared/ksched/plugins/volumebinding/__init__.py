"""VolumeBinding: PVC/PV binding and dynamic provisioning decisions (upstream ``volumebinding``).

``storage`` and ``csi_translation`` hold the storage helpers VolumeZone, VolumeRestrictions and
NodeVolumeLimits share; ``state`` documents how the cycle state reaches the binder process.
"""

from ksched.plugins.volumebinding.plugin import NAME, VolumeBinding, VolumeBindingFeatures, new

__all__ = ["NAME", "VolumeBinding", "VolumeBindingFeatures", "new"]
