"""List-watch of one resource through the API client (:mod:`ksched.client`), decoded with msgspec
(upstream's Reflector).

Lists page by page, then watches from the list's resourceVersion with bookmarks; resumes a
dropped watch from the last resourceVersion seen, relists on ``410 Gone``, and backs off with
jitter on API errors. Events reach ``on_event``; a (re)list reaches ``on_list`` as the full set.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Awaitable, Callable
from typing import Any

import msgspec

from ksched.api.base import DECODE_ERRORS
from ksched.api.collections import Collection
from ksched.api.kinds import decode_lenient
from ksched.client.pager import ListError, list_all, selector_query
from ksched.client.rest import Client

log = logging.getLogger(__name__)
DELETED = "DELETED"


class _Event(msgspec.Struct):
    type: str
    object: msgspec.Raw


_SPECIAL = ("BOOKMARK", "ERROR")
"""Event types whose object is not of the watched resource's type."""


def typed_event(struct: type[Any]) -> type[Any]:
    """A watch event whose object decodes as ``struct`` in the same pass."""
    return msgspec.defstruct(f"{struct.__name__}Event", [("type", str), ("object", struct)])


class _Status(msgspec.Struct):
    code: int = 0
    reason: str = ""
    message: str = ""


class _Meta(msgspec.Struct, rename="camel"):
    resource_version: str = ""


class _Bookmark(msgspec.Struct):
    metadata: _Meta = msgspec.field(default_factory=_Meta)


class Gone(Exception):
    """The resourceVersion we asked for is too old: relist."""


OPTIONAL_RETRY = 30.0
"""Seconds before listing an optional resource that was not served (or refused) again."""


class NotServed(Exception):
    """The API server does not serve an optional resource (404), or refuses it to us (403)."""


OnList = Callable[[list[Any]], Awaitable[None]]
OnEvent = Callable[[str, Any], Awaitable[None]]


class Reflector:
    """Keeps one resource in sync; ``synced`` is set once the first list has been delivered."""

    def __init__(
        self,
        api: Client,
        resource: Collection,
        on_list: OnList,
        on_event: OnEvent,
        *,
        page_size: int = 500,
        watch_timeout: int = 300,
        max_backoff: float = 30.0,
    ) -> None:
        self.api = api
        self.resource = resource
        self.on_list = on_list
        self.on_event = on_event
        self.page_size = page_size
        self.watch_timeout = watch_timeout
        self.max_backoff = max_backoff
        self.synced = asyncio.Event()
        self.resource_version = ""
        #: the status (403, 404) an optional resource was last left empty for (logged once per change)
        self.unavailable: int | None = None
        self._event_decoder = msgspec.json.Decoder(_Event)
        self._object_decoder = msgspec.json.Decoder(resource.struct)
        #: an event and its object in one pass (what nearly every line is)
        self._typed_decoder = msgspec.json.Decoder(typed_event(resource.struct))

    async def run(self) -> None:
        """List and watch until cancelled."""
        backoff = 0.5
        need_list = True
        while True:
            try:
                if need_list:
                    await self._list()
                    need_list = False
                await self._watch()
                backoff = 0.5
            except NotServed:
                await asyncio.sleep(OPTIONAL_RETRY)
            except Gone:
                log.info(
                    "%s: resourceVersion %s is too old, relisting", self.resource.kind, self.resource_version
                )
                need_list = True
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                delay = min(backoff, self.max_backoff) * random.uniform(0.8, 1.2)
                log.warning("%s: list/watch failed (%s); retrying in %.1fs", self.resource.kind, exc, delay)
                await asyncio.sleep(delay)
                backoff = min(backoff * 2, self.max_backoff)

    async def _list(self) -> None:
        try:
            items, self.resource_version = await list_all(
                self.api, self.resource, self.resource.struct, self.page_size
            )
        except ListError as exc:
            if exc.status in (403, 404) and self.resource.optional:
                await self._not_served(exc.status)
            raise
        if self.unavailable is not None:
            log.info("%s: %s is listed now", self.resource.kind, self.resource.path)
            self.unavailable = None
        await self.on_list(items)
        self.synced.set()

    async def _not_served(self, status: int) -> None:
        """An optional resource is not served (404) or not granted to us (403): it holds nothing
        (for now), said once; the caller tries again every :data:`OPTIONAL_RETRY` seconds."""
        if status != self.unavailable:
            kind, path = self.resource.kind, self.resource.path
            if status == 403:
                log.warning(
                    "%s: list %s is forbidden to this scheduler's user (HTTP 403); going on without "
                    "%ss (grant list and watch on it to use them; checked again every %.0f s)",
                    kind,
                    path,
                    kind,
                    OPTIONAL_RETRY,
                )
            else:
                log.info("%s: %s is not served; treating it as empty", kind, path)
            self.unavailable = status
        await self.on_list([])
        self.synced.set()
        raise NotServed()

    async def _watch(self) -> None:
        timeout = int(self.watch_timeout * random.uniform(1.0, 2.0))
        query = selector_query(
            self.resource,
            watch="true",
            resourceVersion=self.resource_version,
            allowWatchBookmarks="true",
            timeoutSeconds=timeout,
        )
        async with self.api.stream(self.resource.path, query, timeout + 30) as resp:
            if resp.status == 410:
                raise Gone()
            if resp.status != 200:
                body = await resp.read()
                raise RuntimeError(f"watch {self.resource.path}: HTTP {resp.status}: {body[:300]!r}")
            async for line in resp.lines():
                await self._handle(line)

    async def _handle(self, line: bytes) -> None:
        try:
            typed = self._typed_decoder.decode(line)
        except DECODE_ERRORS:
            typed = None  # an ERROR's Status, or an object that does not decode: said below
        if typed is None or typed.type in _SPECIAL:
            await self._handle_in_two_steps(line)
            return
        obj = typed.object
        rv = obj.metadata.resource_version
        if rv:
            self.resource_version = rv
        await self.on_event(typed.type, obj)

    async def _handle_in_two_steps(self, line: bytes) -> None:
        """The event first, its object as its type says (bookmarks, errors, undecodable objects)."""
        event = self._event_decoder.decode(line)
        if event.type == "BOOKMARK":
            rv = msgspec.json.decode(event.object, type=_Bookmark).metadata.resource_version
            if rv:
                self.resource_version = rv
            return
        if event.type == "ERROR":
            status = msgspec.json.decode(event.object, type=_Status)
            if status.code == 410:
                raise Gone()
            raise RuntimeError(f"watch {self.resource.path}: {status.code} {status.reason}: {status.message}")
        try:
            obj = self._object_decoder.decode(event.object)
        except msgspec.ValidationError:  # a null where a list belongs (CSINode drivers …)
            obj = decode_lenient(event.object, self.resource.struct)
        rv = obj.metadata.resource_version  # type: ignore[attr-defined]
        if rv:
            self.resource_version = rv
        await self.on_event(event.type, obj)
