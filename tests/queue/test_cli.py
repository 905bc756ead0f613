"""``ksched queue`` command line: options, configuration errors."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from ksched_queue.cli import build_parser, main
from ksched_queue.settings import DEFAULT_HTTP_PORT, QueueSettings

from ksched.service.options import common_options


def test_defaults_and_flags() -> None:
    ns = build_parser().parse_args(
        ["--lease-duration", "1m30s", "--pod-max-in-unschedulable-pods-duration", "2m"]
    )
    assert ns.lease_duration == 90.0
    assert ns.pod_max_in_unschedulable_pods_duration == 120.0
    assert ns.http_port == DEFAULT_HTTP_PORT
    settings = QueueSettings.from_options(
        common_options(ns, "queue"), lease_seconds=ns.lease_duration, pod_max_in_unschedulable=120.0
    )
    assert settings.profile_names == ["default-scheduler"]
    assert (settings.pod_initial_backoff, settings.pod_max_backoff) == (1.0, 10.0)
    assert settings.lease_seconds == 90.0


def test_backoffs_come_from_the_configuration(tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
        "podInitialBackoffSeconds: 2\npodMaxBackoffSeconds: 20\n"
    )
    ns = build_parser().parse_args(["--config", str(config)])
    settings = QueueSettings.from_options(common_options(ns, "queue"))
    assert (settings.pod_initial_backoff, settings.pod_max_backoff) == (2.0, 20.0)


def test_bad_duration_is_rejected(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        build_parser().parse_args(["--lease-duration", "soon"])
    assert "--lease-duration" in capsys.readouterr().err


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
