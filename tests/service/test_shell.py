"""The one service shell (ksched.service.command): every service's flags map to its typed options
with the common ones embedded, keep their names and defaults, refuse a bad value naming it, and a
crashed background task ends the service with status 1 and its name in the log."""

from __future__ import annotations

import asyncio
import importlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from ksched_binder import cli as binder_cli
from ksched_binder.options import BinderOptions
from ksched_informer import cli as informer_cli
from ksched_informer.options import InformerOptions
from ksched_queue import cli as queue_cli
from ksched_queue.settings import QueueSettings
from ksched_scheduler import cli as scheduler_cli
from ksched_scheduler.options import SchedulerOptions

from ksched.config.types import KubeSchedulerConfiguration
from ksched.service import command
from ksched.service.lifecycle import FAILED_EXIT_CODE, serve
from ksched.service.options import CommonOptions
from ksched.service.tasks import TaskGroup

COMMON = ["--id", "svc-1", "--nats", "nats://nats.example:4222", "--subject-prefix", "p1", "--http-port", "0"]
EXPECTED_COMMON = CommonOptions(
    identity="svc-1", nats="nats://nats.example:4222", subject_prefix="p1", http_port=0
)


@pytest.fixture(autouse=True)
def no_ksched_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("KSCHED_NATS", "KSCHED_HTTP_TOKEN", "KSCHED_KUBECONFIG", "KSCHED_LEADER_ELECT", "KSCHED_ID"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)


def configure(cli: Any, argv: list[str]) -> Any:
    options, config = command.configure(cli.COMMAND, argv)
    assert isinstance(config, KubeSchedulerConfiguration)
    return options


def test_binder_options() -> None:
    options = configure(binder_cli, [*COMMON, "--workers", "4"])
    assert options == BinderOptions(common=EXPECTED_COMMON, workers=4)


def test_scheduler_options() -> None:
    options = configure(scheduler_cli, [*COMMON, "--batch", "3", "--pop-window", "0.02", "--seed", "7"])
    assert options == SchedulerOptions(common=EXPECTED_COMMON, batch=3, pop_window=0.02, seed=7)
    assert configure(scheduler_cli, COMMON) == SchedulerOptions(common=EXPECTED_COMMON)


def test_informer_options_without_and_with_an_election(tmp_path: Path) -> None:
    assert configure(informer_cli, [*COMMON, "--no-leader-elect"]) == InformerOptions(common=EXPECTED_COMMON)
    kubeconfig = str(tmp_path / "kubeconfig")
    options = configure(
        informer_cli,
        [*COMMON, "--kubeconfig", kubeconfig, "--lease-name", "inf", "--leader-elect-lease-duration", "20s"],
    )
    assert options.common.kubeconfig == kubeconfig
    election = options.election
    assert (election.name, election.namespace, election.lease_duration) == ("inf", "kube-system", 20.0)
    assert election.identity.startswith("svc-1_")


def test_queue_settings() -> None:
    settings = configure(
        queue_cli,
        [*COMMON, "--no-leader-elect", "--lease-duration", "45s", "--repair-interval", "2m"],
    )
    assert isinstance(settings, QueueSettings)
    assert settings.common == EXPECTED_COMMON
    assert (settings.lease_seconds, settings.repair_interval, settings.pod_max_in_unschedulable) == (
        45.0,
        120.0,
        300.0,
    )
    assert settings.election is None


@pytest.mark.parametrize(
    ("cli", "port"), [(scheduler_cli, 10259), (informer_cli, 10260), (queue_cli, 10261), (binder_cli, 10262)]
)
def test_defaults_are_unchanged(cli: Any, port: int) -> None:
    options = configure(cli, ["--no-leader-elect"] if cli.COMMAND.leader_election else [])
    common = options.common
    assert (common.nats, common.http_host, common.http_port, common.subject_prefix) == (
        "nats://127.0.0.1:4222",
        "127.0.0.1",
        port,
        "ksched",
    )
    assert common.identity.startswith(f"{cli.COMMAND.name}-")


@pytest.mark.parametrize(
    ("cli", "argv", "message"),
    [
        (binder_cli, ["--workers", "0"], "ksched binder: --workers must be at least 1, got 0"),
        (scheduler_cli, ["--batch", "-1"], "ksched scheduler: --batch must be at least 1, got -1"),
        (scheduler_cli, ["--pop-window", "0"], "ksched scheduler: --pop-window must be a positive number"),
        (queue_cli, ["--lease-duration", "0s", "--no-leader-elect"], "ksched queue: --lease-duration"),
        (informer_cli, ["--leader-elect"], "ksched informer: --leader-elect needs the Kubernetes API"),
    ],
)
def test_a_bad_value_exits_2_naming_its_flag(
    cli: Any, argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(argv) == 2
    assert message in capsys.readouterr().err


def test_an_invalid_configuration_names_its_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nnope: 1\n")
    assert binder_cli.main(["--config", str(bad)]) == 2
    assert f"ksched binder: {bad}: invalid configuration" in capsys.readouterr().err


class Crashing:
    """A service whose background task fails after it started."""

    def __init__(self, options: CommonOptions, config: KubeSchedulerConfiguration) -> None:
        self.tasks = TaskGroup()
        self.stopped = False

    async def start(self) -> None:
        async def boom() -> None:
            await asyncio.sleep(0.01)
            raise RuntimeError("a bug in the loop")

        self.tasks.spawn("watch-loop", boom)

    async def stop(self) -> None:
        await self.tasks.cancel_all()
        self.stopped = True


def crashing_command(
    service: Callable[[CommonOptions, KubeSchedulerConfiguration], Crashing], *, uvloop: bool = False
) -> command.ServiceCommand[CommonOptions]:
    """``ksched crashing``: a command whose service is :class:`Crashing`."""
    return command.ServiceCommand(
        name="crashing",
        description="a service that crashes",
        default_http_port=0,
        add_arguments=lambda parser: None,
        options=lambda ns, common, config: common,
        service=service,
        uvloop=uvloop,
    )


def test_a_crashing_background_task_ends_the_command_with_status_1(
    capsys: pytest.CaptureFixture[str],
) -> None:
    made: list[Crashing] = []

    def service(options: CommonOptions, config: KubeSchedulerConfiguration) -> Crashing:
        made.append(Crashing(options, config))
        return made[-1]

    assert command.main(crashing_command(service), ["--log-format", "text"]) == FAILED_EXIT_CODE
    assert made[0].stopped
    log = capsys.readouterr().err
    assert "task watch-loop failed; stopping the service" in log
    assert "RuntimeError: a bug in the loop" in log


def test_ksched_loop_cpu_writes_the_service_s_report_when_it_stops(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``KSCHED_LOOP_CPU=DIR``: the service's CPU by event-loop callback in DIR/<name>-<pid>.txt, on
    asyncio's loop even for a uvloop service; the loop is as before afterwards."""
    monkeypatch.setenv("KSCHED_LOOP_CPU", str(tmp_path))
    original = asyncio.events.Handle._run
    assert command.main(crashing_command(Crashing, uvloop=True), ["--log-format", "text"]) == FAILED_EXIT_CODE
    (report,) = tmp_path.glob("crashing-*.txt")
    text = report.read_text()
    assert "in event-loop callbacks" in text and "task:TaskGroup._guard[watch-loop]" in text
    assert asyncio.events.Handle._run is original


def test_a_uvloop_service_runs_on_uvloop() -> None:
    loops: list[str] = []

    class Recording(Crashing):
        async def start(self) -> None:
            loops.append(type(asyncio.get_running_loop()).__module__)
            await super().start()

    assert (
        command.main(crashing_command(Recording, uvloop=True), ["--log-format", "text"]) == FAILED_EXIT_CODE
    )
    assert command.main(crashing_command(Recording), ["--log-format", "text"]) == FAILED_EXIT_CODE
    assert loops == ["uvloop", "asyncio.unix_events"]


@pytest.mark.parametrize("service", ["informer", "queue", "scheduler", "binder"])
def test_the_pipeline_services_run_on_uvloop(service: str) -> None:
    """Their TLS and socket work costs less there: the binders' two HTTPS requests per pod 13-22 %
    less CPU (docs/benchmarks-history.md, "A faster machine")."""
    cli = importlib.import_module(f"ksched_{service}.cli")
    assert cli.COMMAND.uvloop


async def test_serve_returns_0_after_a_requested_stop() -> None:
    service = Crashing(EXPECTED_COMMON, KubeSchedulerConfiguration())
    service.start = lambda: asyncio.sleep(0)  # type: ignore[method-assign]
    stop = asyncio.Event()
    stop.set()
    assert await serve(service, stop) == 0 and service.stopped


def test_kubesim_flags_map_to_its_config() -> None:
    from ksched_kubesim import cli as kubesim_cli
    from ksched_kubesim import options as kubesim_options

    args = kubesim_cli.build_parser().parse_args(
        [
            "--listen",
            "127.0.0.1:8080",
            "--no-auth",
            "--nodes",
            "3",
            "--time-scale",
            "0.5",
            "--no-pv-controller",
        ]
    )
    config = kubesim_options.from_args(args)
    assert (config.host, config.port, config.token, config.nodes) == ("127.0.0.1", 8080, None, 3)
    assert (config.lifecycle.time_scale, config.lifecycle.pv_controller) == (0.5, False)
    assert kubesim_options.from_args(kubesim_cli.build_parser().parse_args([])).token  # a random one
