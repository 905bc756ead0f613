"""Fixtures for the extender tests: a real extender HTTP server per test."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.extenders.server import ExtenderServer


@pytest.fixture
def server() -> Iterator[ExtenderServer]:
    srv = ExtenderServer().start()
    try:
        yield srv
    finally:
        srv.stop()
