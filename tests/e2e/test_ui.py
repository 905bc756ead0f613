"""End to end in a real browser: ``ksched ui`` on a running stack (NATS, kubesim, every service and
the UI, each a process), driven by a headless Chromium (Debian's ``chromium`` + ``chromium-driver``
through selenium). The page loads without console errors, shows the nodes by zone, updates live
when pods are bound, lists the pending pod with the upstream reason, and its page names every node
with the plugin and reason that rejected it; a scheduled pod's page has per-plugin scores.

Skipped, naming the packages, where no browser is installed (``KSCHED_REQUIRE_BROWSER=1``, set by
``.ci/run``, makes that a failure). ``KSCHED_UI_SCREENSHOTS=DIR`` saves the page's screenshots."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from ksched.launcher.stack import Stack, StackOptions
from tests.e2e.testing import (
    api_for,
    create_nodes,
    create_pods,
    eventually,
    node,
    pod,
    pod_nodes,
    running_stack,
)
from tests.ui.browser import browser_paths, chromium, console_errors

pytestmark = pytest.mark.e2e

ZONE = "topology.kubernetes.io/zone"
REASON = "0/3 nodes are available: 3 Insufficient cpu."


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    browser_paths()  # skip (or fail under KSCHED_REQUIRE_BROWSER=1) before starting a stack
    with chromium() as session:
        yield session


@pytest.fixture(scope="module")
async def stack(browser: Any, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Stack]:
    options = StackOptions(
        workdir=tmp_path_factory.mktemp("ui-stack"), pod_start_delay=0.1, time_scale=0.01, ui=True
    )
    async with running_stack(options) as s:
        yield s


def wait_for(session: Any, check: Callable[[Any], Any], what: str, timeout: float = 30.0) -> Any:
    from selenium.common.exceptions import TimeoutException
    from selenium.webdriver.support.ui import WebDriverWait

    try:
        return WebDriverWait(session, timeout, poll_frequency=0.1).until(check)
    except TimeoutException:
        raise AssertionError(f"the page never showed {what}; it shows:\n{text(session, 'body')}") from None


def texts(session: Any, selector: str) -> list[str]:
    """The visible texts of what ``selector`` finds, read in one script run (the page re-renders
    whenever the server pushes, so elements found in one call may be gone in the next)."""
    script = "return [...document.querySelectorAll(arguments[0])].map((e) => e.innerText.trim())"
    return list(session.execute_script(script, selector))


def text(session: Any, selector: str) -> str:
    return "\n".join(texts(session, selector))


def attributes(session: Any, selector: str, name: str) -> list[str]:
    script = "return [...document.querySelectorAll(arguments[0])].map((e) => e.getAttribute(arguments[1]))"
    return list(session.execute_script(script, selector, name))


def cells(session: Any, selector: str) -> list[list[str]]:
    """The cells' texts of the table rows ``selector`` finds."""
    script = (
        "return [...document.querySelectorAll(arguments[0])]"
        ".map((r) => [...r.querySelectorAll('td')].map((td) => td.innerText.trim()))"
    )
    return [list(row) for row in session.execute_script(script, selector)]


def click(session: Any, selector: str) -> None:
    """A real click event on the element (found and clicked in one script run)."""
    assert session.execute_script(
        "const e = document.querySelector(arguments[0]); if (e) e.click(); return !!e", selector
    ), f"nothing to click at {selector}"


def screenshot(session: Any, name: str) -> None:
    directory = os.environ.get("KSCHED_UI_SCREENSHOTS")
    if directory:
        Path(directory).mkdir(parents=True, exist_ok=True)
        session.save_screenshot(str(Path(directory) / f"{name}.png"))


async def test_the_page_shows_the_cluster_live_and_why_a_pod_is_pending(stack: Stack, browser: Any) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    api = await api_for(stack.kubeconfig)
    try:
        zones = {"n-a1": "zone-a", "n-b1": "zone-b", "n-a2": "zone-a"}
        await create_nodes(api, [node(name, cpu="4", labels={ZONE: zone}) for name, zone in zones.items()])
        base = stack.http_url("ui") + "/"
        browser.get(base)
        wait_for(browser, lambda s: len(texts(s, ".node .name")) == 3, "three nodes")
        assert texts(browser, ".zone h3 > small") == ["2 node(s) · " + ZONE, "1 node(s) · " + ZONE]
        assert attributes(browser, ".zone", "data-zone") == ["zone-a", "zone-b"]
        assert texts(browser, ".zone[data-zone='zone-a'] .node .name") == ["n-a1", "n-a2"]
        wait_for(browser, lambda s: text(s, "#live") == "live", "the live stream connected")

        # live: pods bound after the page loaded show in the bars, without a reload
        browser.execute_script("window.loadedOnce = true")
        await create_pods(api, [pod(f"web-{i}", cpu="1") for i in range(3)])
        await eventually(lambda: _all_bound(api, 3))
        wait_for(browser, lambda s: "pods 3/330" in text(s, "#totals"), "the three bound pods in the totals")
        assert browser.execute_script("return window.loadedOnce") is True
        requested = [
            int(t.split()[1]) for t in attributes(browser, ".bar.cpu", "title")
        ]  # "cpu: 1 requested …"
        assert sum(requested) == 3 and max(requested) <= 4, requested
        screenshot(browser, "ui-overview")

        # a pod no node fits: the queue lists it with the upstream reason
        await create_pods(api, [pod("huge", cpu="8")])
        row = "#queue tr[data-pod='default/huge']"
        try:
            wait_for(browser, lambda s: REASON in text(s, row), "the pending pod's reason in the queue")
        except AssertionError as exc:  # say whether the page or the queue lacks it
            raise AssertionError(f"{exc}\n/api/queue now: {await _get_json(base + 'api/queue')}") from None
        assert "unschedulable" in text(browser, row)

        # its page: the reason, and every node with the plugin and reason that rejected it
        click(browser, row + " a")
        wait_for(browser, lambda s: REASON in text(s, "#pod-reason"), "the reason on the pod's page")
        assert text(browser, "#pod-title") == "default/huge"
        wait_for(browser, lambda s: len(texts(s, "#rejections tbody tr")) == 3, "the three rejected nodes")
        rows = cells(browser, "#rejections tbody tr")
        assert [r[0] for r in rows] == ["n-a1", "n-a2", "n-b1"]
        assert {r[1] for r in rows} == {"NodeResourcesFit"}
        assert all("Insufficient cpu" in r[2] for r in rows)
        click(browser, "#rejections th[data-key='node']")  # sortable: ascending, then descending
        assert attributes(browser, "#rejections th[data-key='node']", "class") == ["sorted-asc"]
        click(browser, "#rejections th[data-key='node']")
        assert texts(browser, "#rejections tbody td:first-child") == ["n-b1", "n-a2", "n-a1"]
        phases = texts(browser, "#timeline tr[data-phase] td:nth-child(3)")
        assert {"queued", "popped", "filter", "unschedulable", "requeued"} <= set(phases)
        screenshot(browser, "ui-pending-pod")

        # search by name, then a scheduled pod's page with per-plugin weighted scores
        box = browser.find_element(By.ID, "q")
        box.send_keys("web-1")
        wait_for(browser, lambda s: "default/web-1" in texts(s, "#suggest a"), "the search suggestion")
        box.send_keys(Keys.ENTER)
        wait_for(browser, lambda s: text(s, "#pod-title") == "default/web-1", "the scheduled pod's page")
        wait_for(browser, lambda s: len(texts(s, "#scores tbody tr")) == 3, "the three scored nodes")
        headers = texts(browser, "#scores th")
        assert headers[:2] == ["node", "total"] and "NodeResourcesFit" in headers
        placed = (await pod_nodes(api))["web-1"]
        assert placed in text(browser, "#scores tr.picked") and placed in text(browser, "#pod-state")
        click(browser, "#scores th[data-key='total']")
        totals = [int(t) for t in texts(browser, "#scores tbody td:nth-child(2)")]
        assert totals == sorted(totals, reverse=True)
        screenshot(browser, "ui-scheduled-pod")

        assert console_errors(browser) == []
    finally:
        await api.close()


async def _get_json(url: str) -> Any:
    import aiohttp

    async with aiohttp.ClientSession() as session, session.get(url) as response:
        return await response.json()


async def _all_bound(api: Any, count: int) -> bool:
    nodes = await pod_nodes(api)
    return len([n for n in nodes.values() if n]) >= count
