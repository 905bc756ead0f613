"""kube-scheduler's command line on every service (issue 25 item 1): Go flag syntax, upstream's flags and
their resolution against the configuration file, and kube-scheduler's unknown-flag failure."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from ksched_binder import cli as binder_cli
from ksched_informer import cli as informer_cli
from ksched_queue import cli as queue_cli
from ksched_scheduler import cli as scheduler_cli

from ksched.config import load_config
from ksched.service import command

CLIS = [informer_cli, queue_cli, scheduler_cli, binder_cli]
CONFIG = """\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection: {kubeconfig: /from/file, qps: 7, burst: 9}
"""


@pytest.fixture(autouse=True)
def no_ksched_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("KSCHED_KUBECONFIG", "KSCHED_LEADER_ELECT", "KSCHED_LOG_LEVEL", "KSCHED_LOG_FORMAT"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)


def configure(cli: Any, argv: list[str]) -> tuple[Any, Any]:
    return command.configure(cli.COMMAND, ["--http-port=0", *argv])


@pytest.mark.parametrize("cli", CLIS, ids=lambda c: c.COMMAND.name)
@pytest.mark.parametrize(("verbosity", "level"), [("--v=4", "DEBUG"), ("-v=2", "INFO"), ("-v4", "DEBUG")])
def test_klog_verbosity_and_logging_format(cli: Any, verbosity: str, level: str) -> None:
    options, _ = configure(cli, [verbosity, "--logging-format=json"])
    assert (options.common.log_level, options.common.log_format) == (level, "json")


@pytest.mark.parametrize("cli", CLIS, ids=lambda c: c.COMMAND.name)
def test_master_and_deprecated_client_flags(cli: Any) -> None:
    options, config = configure(
        cli, ["--kubeconfig=/k", "--master=https://api:6443", "--kube-api-qps=12", "--kube-api-burst=24"]
    )
    assert (options.common.kubeconfig, options.common.master) == ("/k", "https://api:6443")
    assert (config.client_connection.kubeconfig, config.client_connection.qps) == ("/k", 12.0)
    assert config.client_connection.burst == 24


@pytest.mark.parametrize("cli", CLIS, ids=lambda c: c.COMMAND.name)
def test_with_config_its_client_connection_holds(cli: Any, tmp_path: Path) -> None:
    """As upstream: with --config the deprecated flags are ignored and clientConnection.kubeconfig is used."""
    path = tmp_path / "config.yaml"
    path.write_text(CONFIG)
    options, config = configure(
        cli,
        [f"--config={path}", "--kubeconfig=/flag", "--kube-api-qps=1", "--leader-elect=false"][
            : 4 if cli.COMMAND.leader_election else 3
        ],
    )
    assert options.common.kubeconfig == "/from/file"
    assert (config.client_connection.qps, config.client_connection.burst) == (7.0, 9)


def test_a_config_without_a_kubeconfig_takes_the_flag(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n")
    options, _ = configure(binder_cli, [f"--config={path}", "--kubeconfig=/flag"])
    assert options.common.kubeconfig == "/flag"


@pytest.mark.parametrize("cli", [informer_cli, queue_cli], ids=lambda c: c.COMMAND.name)
def test_singletons_take_leader_elect_as_kube_scheduler(cli: Any) -> None:
    options, _ = configure(
        cli, ["--kubeconfig=/k", "--leader-elect=true", "--leader-elect-lease-duration=20s"]
    )
    election = options.election
    assert election is not None and election.lease_duration == 20.0
    off, _ = configure(cli, ["--kubeconfig=/k", "--leader-elect=false"])
    assert off.election is None


@pytest.mark.parametrize("cli", CLIS, ids=lambda c: c.COMMAND.name)
@pytest.mark.parametrize(
    ("flag", "named"), [("--foo", "--foo"), ("--foo=1", "--foo"), ("--kubecon=/k", "--kubecon")]
)
def test_an_unknown_flag_fails_as_kube_scheduler(
    cli: Any, flag: str, named: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exc:
        configure(cli, [flag])
    assert exc.value.code == 1
    assert f"Error: unknown flag: {named}" in capsys.readouterr().err


@pytest.mark.parametrize("cli", CLIS, ids=lambda c: c.COMMAND.name)
def test_write_config_to_writes_the_effective_configuration_and_exits_0(cli: Any, tmp_path: Path) -> None:
    out = tmp_path / "effective.yaml"
    assert cli.main([f"--write-config-to={out}", "--kube-api-burst=33", "--http-port=0"]) == 0
    doc = yaml.safe_load(out.read_text())
    assert (doc["kind"], doc["clientConnection"]["burst"]) == ("KubeSchedulerConfiguration", 33)
    assert load_config(str(out)).client_connection.burst == 33


def test_a_negative_burst_names_the_field(capsys: pytest.CaptureFixture[str]) -> None:
    assert binder_cli.main(["--kube-api-burst=-1", "--http-port=0"]) == command.INVALID_EXIT_CODE
    assert "clientConnection.burst: Invalid value: -1: must be non-negative" in capsys.readouterr().err


def _option_strings() -> dict[str, set[str]]:
    """Letter of docs/operations.md's table -> the options that command takes."""
    from ksched.flags.goflags import GoFlagParser
    from ksched.launcher.cli import stack_arguments
    from ksched.launcher.dropin_options import build_parser as dropin_parser

    def of(parser: Any) -> set[str]:
        return {o for a in parser._actions for o in a.option_strings}

    up = GoFlagParser(prog="ksched up")
    stack_arguments(up)
    letters = dict(zip("IQSB", CLIS, strict=True))
    found = {k: of(command.build_parser(cli.COMMAND)) for k, cli in letters.items()}
    return {**found, "up": of(up), "K": of(dropin_parser())}


def test_the_operations_flag_table_is_true() -> None:
    """Each row's flags are taken by exactly the commands its services column names."""
    import re

    text = (Path(__file__).parents[2] / "docs" / "operations.md").read_text()
    table = text.split("### The table", 1)[1].split("\n## ", 1)[0]
    options = _option_strings()
    rows = [line.split("|") for line in table.splitlines() if line.startswith("| `")]
    assert len(rows) > 15
    problems = []
    for row in rows:
        flags = re.findall(r"`(--?[a-z0-9-]+\*?)`", row[1])
        services = set(row[2].split()) - {"none"}
        assert flags, row
        for letter, taken in options.items():
            for flag in flags:
                accepted = (
                    any(o.startswith(flag[:-1]) for o in taken) if flag.endswith("*") else flag in taken
                )
                if accepted != (letter in services):
                    problems.append(f"{flag}: {letter} {'takes' if accepted else 'lacks'} it")
    assert not problems, problems
