"""VolumeBinding: PVC/PV binding and dynamic provisioning decisions (upstream ``volumebinding``).

The storage helpers it shares with VolumeZone, VolumeRestrictions and NodeVolumeLimits are in
:mod:`ksched.plugins.helper`; ``state`` documents how the cycle state reaches the binder process.
"""

from ksched.plugins.volumebinding.plugin import NAME, VolumeBinding, VolumeBindingFeatures, new

__all__ = ["NAME", "VolumeBinding", "VolumeBindingFeatures", "new"]
