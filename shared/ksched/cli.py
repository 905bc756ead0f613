"""The ``ksched`` console script: a thin dispatcher to each subcommand's own ``main``.

Subcommands are imported lazily so that ``ksched --help`` stays fast and a service's
dependencies load only when that service runs.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Sequence
from typing import Protocol

from ksched import UPSTREAM_VERSION, __version__


class _Main(Protocol):
    def __call__(self, argv: Sequence[str]) -> int: ...


#: subcommand -> ("module:function", one-line help)
SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "simulate": ("ksched.simulate.cli:main", "schedule the pending pods of a cluster file offline"),
    "kubesim": ("ksched_kubesim.cli:main", "run the Kubernetes API emulator"),
    "informer": ("ksched_informer.cli:main", "run the informer/cache service"),
    "queue": ("ksched_queue.cli:main", "run the scheduling queue service"),
    "scheduler": ("ksched_scheduler.cli:main", "run a scheduling-cycle service replica"),
    "binder": ("ksched_binder.cli:main", "run the binder service"),
    "ui": ("ksched_ui.cli:main", "serve the live web page: nodes by zone, the queue, why a pod is pending"),
    "kube-scheduler": (
        "ksched.launcher.dropin:main",
        "kube-scheduler's command line: the whole pipeline in one container, elected as kube-scheduler",
    ),
    "up": ("ksched.launcher.cli:up_main", "start NATS, kubesim and every service; keep running"),
    "demo": ("ksched.launcher.cli:demo_main", "the `make run` demo: start everything, run a workload"),
    "trace": ("ksched.tracing.cli:main", "print a pod's scheduling timeline across services"),
    "bench": ("ksched.bench.cli:main", "performance benchmarks (figures, not pass/fail)"),
    "differential": (
        "ksched.differential.cli:main",
        "random cases decided by the real kube-scheduler and by `ksched simulate`, compared",
    ),
}


def _usage() -> str:
    width = max(len(name) for name in SUBCOMMANDS)
    lines = [
        "usage: ksched [--version] <command> [args...]",
        "",
        "commands:",
        *(f"  {name.ljust(width)}  {text}" for name, (_, text) in SUBCOMMANDS.items()),
        "",
        "Run `ksched <command> --help` for a command's options.",
    ]
    return "\n".join(lines)


def _module_and_packages(target: str) -> set[str]:
    """``"a.b.c:main"`` -> ``{"a", "a.b", "a.b.c"}``: the names whose absence means the subcommand's
    own module is not installed."""
    parts = target.partition(":")[0].split(".")
    return {".".join(parts[: i + 1]) for i in range(len(parts))}


def _load(target: str) -> _Main:
    module_name, _, func_name = target.partition(":")
    module = importlib.import_module(module_name)
    func: _Main = getattr(module, func_name)
    return func


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help", "help"):
        print(_usage())
        return 0
    if args[0] == "--version":
        print(f"ksched {__version__} (kube-scheduler {UPSTREAM_VERSION} semantics)")
        return 0
    name, rest = args[0], args[1:]
    entry = SUBCOMMANDS.get(name)
    if entry is None:
        print(f"ksched: unknown command {name!r}\n\n{_usage()}", file=sys.stderr)
        return 2
    try:
        func = _load(entry[0])
    except ModuleNotFoundError as exc:
        if exc.name not in _module_and_packages(entry[0]):
            raise  # something the subcommand's module imports is missing: a real error
        print(f"ksched {name}: not yet available in this build ({exc.name} is missing)", file=sys.stderr)
        return 2
    profile_dir = os.environ.get("KSCHED_PROFILE")
    only = os.environ.get("KSCHED_PROFILE_ONLY", "")  # subcommands to profile, comma-separated: all if ""
    if profile_dir and (not only or name in only.split(",")):
        return _profiled(func, rest, name, profile_dir)
    return func(rest)


def _profiled(func: _Main, argv: list[str], name: str, directory: str) -> int:
    """Run a subcommand under cProfile (``KSCHED_PROFILE=DIR``, and ``KSCHED_PROFILE_ONLY=a,b`` to
    profile only those subcommands): stats land in DIR/<cmd>-<pid>.prof.
    The clock is the process's CPU time: with wall time a call charges the time the process waited
    for a core (on a busy machine, a socket send that wakes its reader is preempted there)."""
    import cProfile
    import time

    profiler = cProfile.Profile(time.process_time)
    try:
        return int(profiler.runcall(func, argv))
    finally:
        os.makedirs(directory, exist_ok=True)
        profiler.dump_stats(os.path.join(directory, f"{name}-{os.getpid()}.prof"))


if __name__ == "__main__":
    sys.exit(main())
