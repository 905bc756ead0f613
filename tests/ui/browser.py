"""A real headless Chromium driven by selenium: Debian's ``chromium`` and ``chromium-driver``
(``apt-get install -y chromium chromium-driver``). Without them the browser tests skip, naming the
packages; with ``KSCHED_REQUIRE_BROWSER=1`` (set by ``.ci/run``) they fail instead."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

BROWSERS = ("chromium", "chromium-browser", "google-chrome")
DRIVERS = ("chromedriver",)
INSTALL = "apt-get install -y chromium chromium-driver"


def _find(names: tuple[str, ...], env: str) -> str | None:
    given = os.environ.get(env)
    if given:
        return given
    return next((path for name in names if (path := shutil.which(name))), None)


def browser_paths() -> tuple[str, str]:
    """``(browser, driver)`` executables, or skip (fail under ``KSCHED_REQUIRE_BROWSER=1``)."""
    browser = _find(BROWSERS, "KSCHED_CHROMIUM")
    driver = _find(DRIVERS, "KSCHED_CHROMEDRIVER")
    if browser and driver:
        return browser, driver
    missing = " and ".join(n for n, p in (("chromium", browser), ("chromedriver", driver)) if not p)
    message = f"no headless browser: {missing} not found (install them with `{INSTALL}`)"
    if os.environ.get("KSCHED_REQUIRE_BROWSER") == "1":
        pytest.fail(message + "; KSCHED_REQUIRE_BROWSER=1 makes that a failure")
    pytest.skip(message)


@contextmanager
def chromium(width: int = 1280, height: int = 900) -> Iterator[Any]:
    """A headless Chromium session (selenium ``WebDriver``) that records the console."""
    browser, driver = browser_paths()
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = browser
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"):
        options.add_argument(arg)
    options.add_argument(f"--window-size={width},{height}")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    session = webdriver.Chrome(options=options, service=Service(executable_path=driver))
    try:
        yield session
    finally:
        session.quit()


def console_errors(session: Any) -> list[str]:
    """The console's errors (and failed loads) since the last call."""
    return [entry["message"] for entry in session.get_log("browser") if entry["level"] == "SEVERE"]
