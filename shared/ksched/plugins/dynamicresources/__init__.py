"""DynamicResources: ResourceClaims allocated from ResourceSlices as kube-scheduler 1.36 does
(structured parameters). See docs/dra.md."""

from ksched.plugins.dynamicresources.plugin import (
    MSG_NO_CLAIMS_TO_DEALLOCATE,
    MSG_STILL_NOT_SCHEDULABLE,
    NAME,
    DynamicResources,
    new,
)

__all__ = ["MSG_NO_CLAIMS_TO_DEALLOCATE", "MSG_STILL_NOT_SCHEDULABLE", "NAME", "DynamicResources", "new"]
