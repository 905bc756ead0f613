"""The one shell of every service command: flags → options → typed config → :func:`serve`.

A service describes itself with a :class:`ServiceCommand` (its name, its own flags, how its
options are made from the parsed flags and the KubeSchedulerConfiguration, and how its service is
built); :func:`main` does the rest the same way for all: the common flags
(:mod:`ksched.service.options`), leader election's (:mod:`ksched.service.election`) for the
singletons, logging, loading and checking ``--config``, and running the service until a signal or
a crashed task (exit status 1). A bad value exits with status 2 and a message naming it."""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Generic, NoReturn, TypeVar

from ksched.aio import cancel_and_wait
from ksched.config import ConfigError, KubeSchedulerConfiguration
from ksched.extenders import ExtenderConfigError, HTTPExtenders
from ksched.flags.upstream_flags import apply_to, write_config
from ksched.metrics import loop_cpu
from ksched.service.election import add_leader_election_arguments
from ksched.service.lifecycle import Service, serve
from ksched.service.logs import setup_logging
from ksched.service.options import (
    CommonOptions,
    add_common_arguments,
    common_options,
    new_parser,
    scheduler_config,
)

OptionsT = TypeVar("OptionsT")

INVALID_EXIT_CODE = 2


@dataclass(frozen=True)
class ServiceCommand(Generic[OptionsT]):
    """What makes ``ksched <name>`` (see the module docstring)."""

    name: str
    description: str
    default_http_port: int
    add_arguments: Callable[[argparse.ArgumentParser], None]
    """Adds the service's own flags (in its ``options.py``)."""
    options: Callable[[argparse.Namespace, CommonOptions, KubeSchedulerConfiguration], OptionsT]
    """The service's options from the parsed flags; raises ValueError naming a bad flag."""
    service: Callable[[OptionsT, KubeSchedulerConfiguration], Service]
    leader_election: bool = False
    """A singleton: takes the leader-election flags."""
    uvloop: bool = False
    """Run on uvloop's event loop."""


def build_parser(command: ServiceCommand[OptionsT]) -> argparse.ArgumentParser:
    parser = new_parser(f"ksched {command.name}", command.description)
    add_common_arguments(parser, command.default_http_port)
    if command.leader_election:
        add_leader_election_arguments(parser)
    command.add_arguments(parser)
    return parser


def configure(
    command: ServiceCommand[OptionsT], argv: Sequence[str]
) -> tuple[OptionsT, KubeSchedulerConfiguration]:
    """Options and configuration of ``argv``; SystemExit(2) with a message naming what is invalid."""
    ns = build_parser(command).parse_args(list(argv))
    common = common_options(ns, command.name)
    setup_logging(command.name, common.log_format, common.log_level)
    prog = f"ksched {command.name}"
    try:
        config = scheduler_config(common)
    except ConfigError as exc:
        _exit(f"{prog}: {common.config}: invalid configuration:\n{exc}")
    try:
        apply_to(ns, config, common.config)
    except ValueError as exc:
        _exit(f"{prog}: {exc}")
    common = dataclasses.replace(common, kubeconfig=config.client_connection.kubeconfig or None)
    if ns.write_config_to:
        write_config(config, ns.write_config_to)
        raise SystemExit(0)
    try:
        HTTPExtenders(config.extenders)  # TLS settings and files usable (upstream refuses to start)
    except ExtenderConfigError as exc:
        _exit(f"{prog}: {common.config}: invalid configuration: {exc}")
    try:
        return command.options(ns, common, config), config
    except ValueError as exc:
        _exit(f"{prog}: {exc}")


def main(command: ServiceCommand[OptionsT], argv: Sequence[str]) -> int:
    """Run ``ksched <name> ARGV`` to its end; the process's exit status."""
    try:
        options, config = configure(command, argv)
    except SystemExit as exc:
        if isinstance(exc.code, str):
            print(exc.code, file=sys.stderr)
            return INVALID_EXIT_CODE
        if exc.code == 0:
            return 0  # --write-config-to (or --help) done
        raise
    service = command.service(options, config)
    loop_cpu_dir = loop_cpu.directory()
    # the accounting times asyncio's own loop (see ksched.metrics.loop_cpu)
    runner = asyncio.Runner(loop_factory=_uvloop() if command.uvloop and loop_cpu_dir is None else None)
    with runner:
        try:
            if loop_cpu_dir is not None:
                return runner.run(_serve_accounted(service, loop_cpu_dir, command.name))
            return runner.run(serve(service))
        except KeyboardInterrupt:
            return 130


async def _serve_accounted(service: Service, directory: Path, name: str) -> int:
    """:func:`serve` with its CPU accounted by event-loop callback (``KSCHED_LOOP_CPU``)."""
    accounting = loop_cpu.LoopCpu()
    accounting.install()
    writer = asyncio.create_task(accounting.write_every(directory, name), name="loop-cpu-report")
    try:
        return await serve(service)
    finally:
        await cancel_and_wait(writer)
        accounting.write(directory, name)
        accounting.uninstall()


def _exit(message: str) -> NoReturn:
    raise SystemExit(message)


def _uvloop() -> Callable[[], asyncio.AbstractEventLoop] | None:
    try:
        import uvloop
    except ImportError:  # pragma: no cover - uvloop is a dependency on Linux
        return None
    factory: Callable[[], asyncio.AbstractEventLoop] = uvloop.new_event_loop
    return factory
