"""The extenders' proxy policy is the API client's (:mod:`ksched.client.proxy`, Go's
``ProxyFromEnvironment``): the environment's proxy for an extender elsewhere, none for a loopback
extender, and never credentials from netrc (aiohttp's ``trust_env`` would add them)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ksched.framework.testing import make_node
from tests.extenders.server import ExtenderServer, FakeExtender, true_predicate
from tests.extenders.test_scheduling import TrueFilter, framework, schedule, with_extenders


async def test_an_extender_elsewhere_goes_through_the_environment_proxy(
    server: ExtenderServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The server here plays the proxy: it is asked for the extender's absolute URL."""
    monkeypatch.setenv("HTTP_PROXY", server.url)
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    fake = FakeExtender(predicates=[true_predicate])
    server.serve("ext", fake)
    fw = framework([make_node("node1")], filters=[TrueFilter()])
    async with with_extenders(fw, [fake.config("http://extender.invalid/ext")]):
        result = await schedule(fw)
    assert result.feasible_nodes == 1
    assert [r.path for r in server.requests] == ["/ext/filter"]
    assert server.requests[0].headers.get("Host") == "extender.invalid"


async def test_a_loopback_extender_is_not_proxied_and_netrc_is_not_read(
    server: ExtenderServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    netrc = tmp_path / "netrc"
    netrc.write_text("machine 127.0.0.1 login someone password secret\n")
    netrc.chmod(0o600)
    monkeypatch.setenv("NETRC", str(netrc))
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")  # nothing listens there
    fake = FakeExtender(predicates=[true_predicate])
    fw = framework([make_node("node1")], filters=[TrueFilter()])
    async with with_extenders(fw, [fake.config(server.serve("ext", fake))]):
        result = await schedule(fw)
    assert result.feasible_nodes == 1
    assert [r.path for r in server.requests] == ["/ext/filter"]
    assert "Authorization" not in server.requests[0].headers
