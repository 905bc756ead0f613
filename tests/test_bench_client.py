"""``ksched bench client`` at a tiny size on kubesim (a child process): every operation of every
client it is asked for gives a figure, and the pods it bound are bound."""

from __future__ import annotations

import json

import pytest

from ksched.bench.client import main


def test_each_client_and_operation_has_a_figure(capsys: pytest.CaptureFixture[str]) -> None:
    clients = ["call_api", "aiohttp", "http1"]
    assert main(["--kubesim", "--requests", "20", "--rounds", "2", "--clients", *clients, "--json"]) == 0
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    for op in ("binding", "event", "list", "watch"):
        for client in clients:
            assert result[f"{op}.{client}.ms"] > 0, (op, client)
            low, high = map(float, result[f"{op}.{client}.range"].split("-"))
            assert low <= result[f"{op}.{client}.ms"] <= high
    assert not any(key.startswith(("binding.httpx", "event.httpx")) for key in result)
