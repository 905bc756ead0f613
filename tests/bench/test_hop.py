"""``ksched bench hop`` at a tiny size: the three round trips are timed, through a real nats-server and
a child process that echoes, and reported in order of their percentiles."""

from __future__ import annotations

import json

import pytest

from ksched.bench.hop import main


def test_every_round_trip_has_figures(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--rate", "200", "--count", "20", "--json"]) == 0
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert (result["rate"], result["count"]) == (200, 20)
    for how in ("tcp", "raw", "nats"):
        figures = result[how]
        assert 0 < figures["p50"] <= figures["p90"] <= figures["p99"] <= figures["max"], (how, figures)


def test_a_rate_must_be_positive(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["--rate", "0"])
    assert "--rate and --count must be positive" in capsys.readouterr().err
