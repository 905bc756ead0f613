"""Fixtures shared by the end-to-end tests; each module provides its own ``stack``."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from kubernetes_asyncio.client import ApiClient

from ksched.launcher.stack import Stack
from tests.e2e.testing import kube_api


@pytest.fixture
async def api(stack: Stack) -> AsyncIterator[ApiClient]:
    """A client of the module's stack's API server."""
    async with kube_api(stack.kubeconfig) as a:
        yield a
