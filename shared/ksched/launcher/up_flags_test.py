"""``ksched up`` takes kube-scheduler's -v / --logging-format in Go syntax, and refuses unknown flags."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from ksched.flags.goflags import GoFlagParser
from ksched.launcher.cli import options_from, stack_arguments, up_main


def _parse(argv: list[str]) -> argparse.Namespace:
    p = GoFlagParser(prog="ksched up")
    stack_arguments(p)
    return p.parse_args(argv)


@pytest.mark.parametrize(
    ("argv", "level"), [([], "INFO"), (["-v=2"], "INFO"), (["--v=4"], "DEBUG"), (["-v", "5"], "DEBUG")]
)
def test_verbosity_reaches_every_service(argv: list[str], level: str, tmp_path: Path) -> None:
    assert options_from(_parse(argv), tmp_path).log_level == level


def test_logging_format(tmp_path: Path) -> None:
    assert options_from(_parse(["--logging-format=json"]), tmp_path).log_format == "json"


def test_unknown_flag(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        up_main(["--nodes=3", "--no-such-flag"])
    assert exc.value.code == 1
    assert "Error: unknown flag: --no-such-flag" in capsys.readouterr().err
