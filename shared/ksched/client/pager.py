"""Listing a collection page by page, as client-go's pager does.

Pages of ``page_size`` follow the server's ``continue`` token; when the token has expired (410
Gone) the list starts over, so the result is always one consistent list at its resourceVersion.
"""

from __future__ import annotations

from typing import Any, Generic, TypeVar

import msgspec

from ksched.api.collections import Collection
from ksched.api.kinds import decode_lenient
from ksched.api.meta import ListMeta
from ksched.client.rest import Client

T = TypeVar("T")


class ListError(RuntimeError):
    """The API server refused or failed a list; the message names the collection and the status."""

    def __init__(self, collection: Collection, status: int, body: bytes) -> None:
        super().__init__(f"list {collection.path}: HTTP {status}: {body[:300]!r}")
        self.status = status


class _List(msgspec.Struct, Generic[T]):
    metadata: ListMeta = msgspec.field(default_factory=ListMeta)
    items: list[T] | None = None


def selector_query(collection: Collection, **extra: Any) -> list[tuple[str, Any]]:
    """The query parameters of a list or watch of ``collection``: its selectors, then ``extra``
    (``None`` values left out)."""
    q: list[tuple[str, Any]] = []
    if collection.field_selector:
        q.append(("fieldSelector", collection.field_selector))
    if collection.label_selector:
        q.append(("labelSelector", collection.label_selector))
    q.extend((k, v) for k, v in extra.items() if v is not None)
    return q


async def list_all(
    api: Client, collection: Collection, item_type: type[T], page_size: int = 500
) -> tuple[list[T], str]:
    """Every item of ``collection`` decoded as ``item_type`` (its Struct, or ``msgspec.Raw``), and
    the list's resourceVersion."""
    decoder = msgspec.json.Decoder(_List[item_type])  # type: ignore[valid-type]
    items: list[T] = []
    cont: str | None = None
    while True:
        query = selector_query(collection, limit=page_size, **{"continue": cont})
        status, body = await api.request("GET", collection.path, timeout=60, query=query)
        if status == 410 and cont:
            cont, items = None, []  # the continue token expired: list again from the start
            continue
        if status != 200:
            raise ListError(collection, status, body)
        try:
            page = decoder.decode(body)
        except msgspec.ValidationError:  # a null where a list belongs: see decode_lenient
            page = decode_lenient(body, _List[item_type])  # type: ignore[valid-type]
        items.extend(page.items or [])
        cont = page.metadata.continue_
        if not cont:
            return items, page.metadata.resource_version
