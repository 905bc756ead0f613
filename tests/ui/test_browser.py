"""Where no browser is installed the browser tests skip naming the packages; CI makes it a failure."""

from __future__ import annotations

import pytest

from tests.ui.browser import INSTALL, browser_paths


def test_no_browser_skips_naming_the_packages(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("KSCHED_CHROMIUM", "KSCHED_CHROMEDRIVER", "KSCHED_REQUIRE_BROWSER"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(pytest.skip.Exception, match="chromium and chromedriver not found") as skipped:
        browser_paths()
    assert INSTALL in str(skipped.value)
    monkeypatch.setenv("KSCHED_REQUIRE_BROWSER", "1")
    with pytest.raises(pytest.fail.Exception, match="KSCHED_REQUIRE_BROWSER=1 makes that a failure"):
        browser_paths()


def test_explicit_paths_win(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KSCHED_CHROMIUM", "/opt/chrome/chrome")
    monkeypatch.setenv("KSCHED_CHROMEDRIVER", "/opt/chrome/chromedriver")
    assert browser_paths() == ("/opt/chrome/chrome", "/opt/chrome/chromedriver")
