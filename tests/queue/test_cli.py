"""``ksched queue`` command line: options, configuration errors."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from ksched_queue import options
from ksched_queue.cli import COMMAND, main
from ksched_queue.settings import DEFAULT_HTTP_PORT, QueueSettings

from ksched.config import default_config, load_config
from ksched.service.command import build_parser
from ksched.service.options import common_options


def settings_of(argv: list[str]) -> QueueSettings:
    ns = build_parser(COMMAND).parse_args(argv)
    common = common_options(ns, "queue")
    config = load_config(common.config) if common.config else default_config()
    return options.from_args(ns, common, config)


def test_defaults_and_flags() -> None:
    settings = settings_of(
        ["--lease-duration", "1m30s", "--pod-max-in-unschedulable-pods-duration", "2m", "--no-leader-elect"]
    )
    assert settings.common.http_port == DEFAULT_HTTP_PORT
    assert settings.profile_names == ["default-scheduler"]
    assert (settings.pod_initial_backoff, settings.pod_max_backoff) == (1.0, 10.0)
    assert (settings.lease_seconds, settings.pod_max_in_unschedulable, settings.repair_interval) == (
        90.0,
        120.0,
        60.0,
    )
    assert settings.election is None


def test_backoffs_come_from_the_configuration(tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
        "podInitialBackoffSeconds: 2\npodMaxBackoffSeconds: 20\n"
    )
    settings = settings_of(["--config", str(config)])
    assert (settings.pod_initial_backoff, settings.pod_max_backoff) == (2.0, 20.0)


def test_bad_duration_is_rejected(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        build_parser(COMMAND).parse_args(["--lease-duration", "soon"])
    assert "--lease-duration" in capsys.readouterr().err


@pytest.mark.parametrize(
    "flag", ["--lease-duration", "--pod-max-in-unschedulable-pods-duration", "--repair-interval"]
)
def test_a_duration_that_is_not_positive_is_refused_naming_its_flag(
    flag: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([flag, "0s", "--no-leader-elect"]) == 2
    assert f"ksched queue: {flag} must be positive" in capsys.readouterr().err


def test_missing_config_file_fails_with_its_name(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "nope.yaml"
    assert main(["--config", str(missing)]) == 2
    assert str(missing) in capsys.readouterr().err


def test_help_through_the_ksched_dispatcher() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "ksched.cli", "queue", "--help"],
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0
    assert "--lease-duration" in out.stdout and "--nats" in out.stdout
