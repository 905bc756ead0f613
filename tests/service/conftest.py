"""Shared by the service tests: the commands set up logging as a process does (the root logger's
handlers write to the stderr of the test that ran them); restore it after each test."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _root_logger_restored(restore_root_logger: None) -> None:
    """``restore_root_logger`` (tests/fixtures/logs.py) for every test here."""
