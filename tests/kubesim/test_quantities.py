"""Quantities as kubesim stores them: one implementation (ksched.apimachinery.quantity), the real API
server's normal form, and no exponent large enough to stall the server."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from ksched_kubesim import KubeSim, KubeSimConfig, LifecycleSettings

CAPTURES = Path(__file__).parent / "captures"


def capture(name: str) -> dict[str, Any]:
    [path] = CAPTURES.glob(f"{name}-*.json")
    data: dict[str, Any] = json.loads(path.read_text())
    return data


@pytest.fixture
async def api() -> AsyncIterator[tuple[aiohttp.ClientSession, KubeSim]]:
    config = KubeSimConfig(lifecycle=LifecycleSettings(enabled=False))
    async with KubeSim(config) as sim:
        headers = {"Authorization": f"Bearer {sim.token}"}
        async with aiohttp.ClientSession(headers=headers) as session:
            namespace = {"metadata": {"name": "times"}}
            async with session.post(f"{sim.url}/api/v1/namespaces", json=namespace) as resp:
                assert resp.status == 201
            yield session, sim


def _pod(name: str, requests: dict[str, Any]) -> dict[str, Any]:
    container = {"name": "c", "image": "x", "resources": {"requests": requests}}
    spec = {"containers": [container]}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}


async def _create(api: tuple[aiohttp.ClientSession, KubeSim], body: dict[str, Any]) -> tuple[int, Any]:
    session, sim = api
    async with session.post(f"{sim.url}/api/v1/namespaces/times/pods", json=body) as resp:
        return resp.status, await resp.json()


async def test_a_32_bit_exponent_overflow_is_stored_as_the_real_server_stores_it(
    api: tuple[aiohttp.ClientSession, KubeSim],
) -> None:
    cap = capture("17f")
    status, body = await _create(api, cap["request"]["body"])
    assert status == cap["status"] == 201
    requests = body["spec"]["containers"][0]["resources"]["requests"]
    assert requests == cap["body"]["spec"]["containers"][0]["resources"]["requests"] == {"cpu": "10"}
    assert body["status"]["qosClass"] == cap["body"]["status"]["qosClass"]


async def test_a_malformed_quantity_is_the_real_servers_400(
    api: tuple[aiohttp.ClientSession, KubeSim],
) -> None:
    cap = capture("17g")
    status, body = await _create(api, cap["request"]["body"])
    assert status == cap["status"] == 400
    assert body["message"] == cap["body"]["message"]


@pytest.mark.parametrize(
    ("given", "stored"),
    [
        ("01", "01"),  # canonical enough for upstream's parser: the text is kept
        ("1.500", "1.500"),
        ("1000E", "1"),  # 1.36.2 drops the suffix of DecimalSI exponents above 18
        ("Ki", "0"),
        (".", "0"),
        ("0.5", "500m"),
        ("2048Ki", "2Mi"),
        (" 1 ", "1"),  # JSON decoding trims whitespace
        (3, "3"),  # a bare JSON number is read from its text
    ],
)
async def test_quantities_are_normalized_as_the_real_server_does(
    api: tuple[aiohttp.ClientSession, KubeSim], given: Any, stored: str
) -> None:
    status, body = await _create(api, _pod("q", {"memory": given}))
    assert status == 201, body
    assert body["spec"]["containers"][0]["resources"]["requests"] == {"memory": stored}


def test_huge_exponents_answer_at_once() -> None:
    """Canonicalizing ``1e4294967297`` or ``1e4000000`` must not build 10**n (a separate process, so
    that a regression fails on the timeout instead of stalling the test run)."""
    script = (
        "from ksched_kubesim.pods import canonicalize_quantities, malformed_quantity\n"
        "for text in ('1e4294967297', '1e4000000', '1e-4000000', '-1e2147483647'):\n"
        "    spec = {'containers': [{'name': 'c', 'resources': {'requests': {'cpu': text}}}]}\n"
        "    assert malformed_quantity(spec) is None\n"
        "    canonicalize_quantities(spec)\n"
        "    print(spec['containers'][0]['resources']['requests']['cpu'])\n"
    )
    command = [sys.executable, "-c", script]
    done = subprocess.run(command, capture_output=True, text=True, timeout=30, check=True)
    assert done.stdout.split() == ["10", "10e3999999", "1e-9", "-10e2147483646"]
