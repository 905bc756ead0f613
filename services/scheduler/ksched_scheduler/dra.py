"""DynamicResources in the scheduler service: where PostFilter's claim deallocations and deletions
(of a left-over extended-resource claim) go."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from ksched.api.resource import ResourceClaim
from ksched.client.rest import Client
from ksched.framework.runtime import Framework
from ksched.plugins.dynamicresources import NAME as DRA_NAME
from ksched.plugins.dynamicresources import DynamicResources
from ksched.plugins.dynamicresources.binding import ClaimApi, PreBindError, deallocate, delete_claim

log = logging.getLogger(__name__)


def claims_writer(fw: Framework, api: Client | None, spawn: Callable[[Any], object]) -> None:
    """DynamicResources' PostFilter deallocations and deletions go to the API in the background (never
    into the replica's snapshot, which only the informer feeds); without an API they are logged and
    dropped."""
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

    async def delete(claim: ResourceClaim) -> None:
        assert api is not None
        try:
            await delete_claim(ClaimApi(api), claim)
        except PreBindError as exc:
            log.warning("deleting ResourceClaim %s failed: %s", claim.key, exc)

    def deleter(claim: ResourceClaim) -> None:
        if api is None:
            log.warning("no API client: ResourceClaim %s is not deleted", claim.key)
            return
        spawn(delete(claim))

    plugin.deallocator = deallocator
    plugin.claim_deleter = deleter
