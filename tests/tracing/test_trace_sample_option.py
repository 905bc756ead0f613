"""``--trace-sample`` / ``KSCHED_TRACE_SAMPLE``: flag beats environment beats default (1), a bad
fraction is refused naming the option, and the service's tracer takes it."""

from __future__ import annotations

import argparse

import pytest

from ksched.service.options import add_common_arguments, common_options
from ksched.tracing.export import service_tracer


def _parse(argv: list[str], env: dict[str, str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="ksched test")
    add_common_arguments(parser, 10000, env)
    return parser.parse_args(argv)


def test_flag_beats_environment_beats_default() -> None:
    assert common_options(_parse([], {}), "queue").trace_sample == 1.0
    assert common_options(_parse([], {"KSCHED_TRACE_SAMPLE": "0.1"}), "queue").trace_sample == 0.1
    flagged = common_options(_parse(["--trace-sample", "0.25"], {"KSCHED_TRACE_SAMPLE": "0.1"}), "queue")
    assert flagged.trace_sample == 0.25
    tracer = service_tracer("queue", flagged)
    assert tracer.sample == 0.25
    assert (
        service_tracer("queue", common_options(_parse(["--trace-sample", "0"], {}), "queue")).enabled is False
    )


@pytest.mark.parametrize("bad", ["1.5", "-0.1", "nan", "half"])
def test_a_bad_fraction_is_refused_naming_the_option(bad: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        _parse(["--trace-sample", bad], {})
    err = capsys.readouterr().err
    assert "--trace-sample" in err and "is not a fraction of pods from 0 to 1" in err
