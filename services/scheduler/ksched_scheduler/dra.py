"""DynamicResources in the scheduler service: where PostFilter's claim deallocations go."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from kubernetes_asyncio.client import ApiClient

from ksched.api.resource import ResourceClaim
from ksched.framework.runtime import Framework
from ksched.plugins.dynamicresources import NAME as DRA_NAME
from ksched.plugins.dynamicresources import DynamicResources
from ksched.plugins.dynamicresources.binding import ClaimApi, PreBindError, deallocate

log = logging.getLogger(__name__)


def claims_writer(fw: Framework, api: ApiClient | None, spawn: Callable[[Any], object]) -> None:
    """DynamicResources' PostFilter deallocations go to the API in the background (never into the
    replica's snapshot, which only the informer feeds); without an API they are logged and dropped."""
    plugin = fw.plugin(DRA_NAME)
    if not isinstance(plugin, DynamicResources):
        return

    async def write(claim: ResourceClaim) -> None:
        assert api is not None
        try:
            await deallocate(ClaimApi(api), claim)
        except PreBindError as exc:
            log.warning("deallocating ResourceClaim %s failed: %s", claim.key, exc)

    def deallocator(claim: ResourceClaim) -> None:
        if api is None:
            log.warning("no API client: ResourceClaim %s is not deallocated", claim.key)
            return
        spawn(write(claim))

    plugin.deallocator = deallocator
