"""``ksched trace NAMESPACE/NAME``: a pod's scheduling timeline across every service.

Exit status: 0 events shown (or a follow ended by Ctrl-C), 1 nothing found, 2 bad arguments or
NATS unreachable.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import sys
import time
from collections.abc import Sequence
from typing import TextIO

from ksched.aio import cancel_and_wait
from ksched.apimachinery.duration import DurationError, seconds
from ksched.bus.connect import Bus, BusConnectError, connect
from ksched.bus.credentials import CredentialsError, NatsCredentials
from ksched.bus.subjects import DEFAULT_PREFIX, SubjectError, Subjects
from ksched.service.options import add_nats_security_arguments, nats_credentials
from ksched.tracing import reader, timeline

DEFAULT_NATS = "nats://127.0.0.1:4222"


def parse_duration(text: str) -> float:
    """``90`` (seconds) or a Go duration (``30s``, ``5m``, ``1h30m``, ``500ms``) -> seconds, not negative.

    Raises ValueError otherwise.
    """
    text = text.strip()
    with contextlib.suppress(ValueError):
        value = float(text)
        if value >= 0:
            return value
    try:
        value = seconds(text)
    except DurationError:
        value = -1.0
    if value < 0:
        raise ValueError(f"{text!r} is not a duration (examples: 90, 30s, 5m, 1h30m, 500ms)")
    return value


def parse_pod(text: str) -> tuple[str, str]:
    """``namespace/name`` (or ``name`` in namespace ``default``)."""
    namespace, sep, name = text.partition("/")
    if not sep:
        namespace, name = "default", text
    if not namespace or not name or "/" in name:
        raise ValueError(f"{text!r} is not NAMESPACE/NAME")
    return namespace, name


def build_parser() -> argparse.ArgumentParser:
    env = os.environ
    parser = argparse.ArgumentParser(
        prog="ksched trace",
        description="Print a pod's scheduling timeline across services, grouped by attempt "
        "(trace id), from the JetStream stream P_trace.",
    )
    parser.add_argument(
        "pod", nargs="?", metavar="NAMESPACE/NAME", help="the pod (namespace default if omitted)"
    )
    parser.add_argument(
        "--nats",
        metavar="URL",
        default=env.get("KSCHED_NATS") or DEFAULT_NATS,
        help="NATS server URL(s) (default $KSCHED_NATS or %(default)s)",
    )
    parser.add_argument(
        "--subject-prefix",
        metavar="P",
        default=env.get("KSCHED_SUBJECT_PREFIX") or DEFAULT_PREFIX,
        help="the installation's subject prefix (default $KSCHED_SUBJECT_PREFIX or %(default)s)",
    )
    parser.add_argument("-f", "--follow", action="store_true", help="stream new events as they happen")
    parser.add_argument("--all", action="store_true", help="follow every pod (no NAMESPACE/NAME)")
    parser.add_argument("--json", action="store_true", help="one JSON object per event")
    parser.add_argument("--since", metavar="DURATION", help="only events of the last DURATION (30s, 5m, 1h)")
    add_nats_security_arguments(parser, env)  # the read-only "observer" user may run ksched trace
    return parser


def main(argv: Sequence[str]) -> int:
    parser = build_parser()
    args = parser.parse_args(list(argv))
    since: float | None = None
    if args.since is not None:
        try:
            since = time.time() - parse_duration(args.since)
        except ValueError as exc:
            parser.error(f"--since: {exc}")
    if args.all and args.pod:
        parser.error("give either NAMESPACE/NAME or --all, not both")
    if not args.all and not args.pod:
        parser.error("NAMESPACE/NAME is required (or --all to follow every pod)")
    pod: tuple[str, str] | None = None
    if args.pod:
        try:
            pod = parse_pod(args.pod)
        except ValueError as exc:
            parser.error(str(exc))
    try:
        subjects = Subjects(args.subject_prefix)
    except SubjectError as exc:
        parser.error(f"--subject-prefix: {exc}")
    try:
        credentials = nats_credentials(args)
    except CredentialsError as exc:
        parser.error(str(exc))
    try:
        return asyncio.run(_run(args, subjects, credentials, pod, since, sys.stdout))
    except KeyboardInterrupt:
        return 0


async def _run(
    args: argparse.Namespace,
    subjects: Subjects,
    credentials: NatsCredentials,
    pod: tuple[str, str] | None,
    since: float | None,
    out: TextIO,
) -> int:
    try:
        bus = await connect(
            args.nats,
            name="ksched-trace",
            subjects=subjects,
            initial_timeout=5.0,
            **credentials.connect_kwargs(),
        )
    except (BusConnectError, OSError) as exc:
        print(f"ksched trace: cannot reach NATS at {args.nats}: {exc}", file=sys.stderr)
        return 2
    try:
        try:
            await reader.stream_state(bus)
        except reader.NoTraceStream:
            print(
                f"ksched trace: no trace stream {subjects.trace_stream} on {args.nats}: no service with "
                f"subject prefix {subjects.prefix!r} has published trace events (wrong --subject-prefix?)",
                file=sys.stderr,
            )
            return 1
        if pod is None:
            await _follow(
                bus, subjects.trace_all, since, args.json, out, with_pod=True, new_only=since is None
            )
            return 0
        namespace, name = pod
        if args.follow:
            await _follow(
                bus,
                reader.pod_subjects(subjects, namespace, name),
                since,
                args.json,
                out,
                with_pod=False,
                pod=pod,
            )
            return 0
        return await _show(bus, namespace, name, since, args.json, out)
    finally:
        await bus.close()


async def _show(bus: Bus, namespace: str, name: str, since: float | None, as_json: bool, out: TextIO) -> int:
    history = await reader.pod_history(bus, namespace, name, since)
    if not history:
        window = " in that time" if since is not None else ""
        print(
            f"ksched trace: no trace events for pod {namespace}/{name}{window} in stream "
            f"{bus.subjects.trace_stream} (it keeps about the last hour)",
            file=sys.stderr,
        )
        others = await reader.traced_pods(bus, namespace)
        if others:
            print(f"pods of namespace {namespace} with traces: {', '.join(others)}", file=sys.stderr)
        return 1
    if as_json:
        for item in sorted(history, key=lambda t: (t.event.ts, t.seq)):
            print(timeline.to_json(item.event, item.seq), file=out)
    else:
        print(timeline.render(namespace, name, [t.event for t in history]), file=out)
    return 0


async def _follow(
    bus: Bus,
    subject: str | list[str],
    since: float | None,
    as_json: bool,
    out: TextIO,
    *,
    with_pod: bool,
    new_only: bool = False,
    pod: tuple[str, str] | None = None,
) -> None:
    live = timeline.LiveRenderer(with_pod=with_pod)
    held = reader.Reorder()

    def emit(items: list[reader.Traced]) -> None:
        for item in items:
            if as_json:
                print(timeline.to_json(item.event, item.seq), file=out)
            else:
                for line in live.lines(item.event):
                    print(line, file=out)
        out.flush()

    async def pump() -> None:
        async for item in reader.follow(bus, subject, since=since, new_only=new_only, pod=pod):
            held.add(item)

    task = asyncio.create_task(pump())
    try:
        while not task.done():
            await asyncio.sleep(0.1)
            emit(held.due())
        task.result()
    finally:
        await cancel_and_wait(task)
        emit(held.due(now=float("inf")))
