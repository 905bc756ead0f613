"""kubernetes_asyncio as the tests use it, typed: manifests sent as request bodies and the undecoded
responses of ``_preload_content=False`` calls.

The client sends a dict body as it is (``sanitize_for_serialization``) and hands back the aiohttp
response when asked not to preload content; its stubs type both as model classes (``V1Pod`` ...),
which the tests avoid on purpose, to send and read the exact JSON.
"""

from __future__ import annotations

from collections.abc import Awaitable, Mapping
from typing import Any, cast

import aiohttp


def body(manifest: Mapping[str, Any]) -> Any:
    """``manifest`` as the body of a create call, whose stub asks for the model class."""
    return manifest


async def undecoded(call: Awaitable[object]) -> aiohttp.ClientResponse:
    """The undecoded response of a ``_preload_content=False`` call, whose stub says the model class."""
    return cast(aiohttp.ClientResponse, await call)
