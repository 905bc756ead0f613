"""Per-service NATS users: the subjects each service may publish and subscribe to, and the
nats-server ``authorization`` block that enforces them.

Each service gets only the subjects it uses (docs/bus.md), so a compromised or misconfigured
process cannot, for example, publish a placement the informer did not accept: only the
``informer`` user may publish ``P.binder.placement``. JetStream is reached through its API
subjects (``$JS.API.…``), scoped to the streams and consumers the service uses; replies go to
``P._INBOX.>`` (the inbox prefix every ksched connection uses) and answering a request needs
``allow_responses``.

Passwords are never written into the block: each user's password is a nats-server variable
(``$KSCHED_NATS_INFORMER_PASSWORD`` …) resolved from the server's environment, so the generated
file can live in a ConfigMap or in git. Generate it with::

    python -m ksched.bus.auth --prefix ksched > auth.conf
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from ksched.bus.streams import (
    assumed_ledger_bucket,
    ended_placements_bucket,
    gang_commits_bucket,
    legacy_assumed_ledger_bucket,
)
from ksched.bus.subjects import DEFAULT_PREFIX, Subjects

SERVICES = ("informer", "queue", "scheduler", "binder", "ui")
"""The services that connect to NATS, each with its own user (the user name is the service)."""

OBSERVER = "observer"
"""A read-only user for operators and ``ksched trace`` (trace and health subjects)."""

JS_API = "$JS.API"


@dataclass(frozen=True)
class Permissions:
    """What one NATS user may do: subjects to publish to, subjects to subscribe to."""

    publish: tuple[str, ...]
    subscribe: tuple[str, ...]
    allow_responses: bool = True
    """May answer requests it received (publish once to each request's reply subject)."""


def password_variable(user: str) -> str:
    """The environment variable nats-server reads the user's password from."""
    return f"KSCHED_NATS_{user.upper()}_PASSWORD"


# --- JetStream API subjects -------------------------------------------------------------------------
def _manage_streams(streams: Iterable[str]) -> list[str]:
    """Create / update / inspect these streams (``ensure_stream``)."""
    return [f"{JS_API}.STREAM.{op}.{name}" for name in streams for op in ("INFO", "CREATE", "UPDATE")]


def _read_stream(stream: str) -> list[str]:
    """Inspect ``stream`` and get its messages by subject (``ksched trace``'s history)."""
    return [
        f"{JS_API}.STREAM.INFO.{stream}",
        f"{JS_API}.STREAM.MSG.GET.{stream}",
        f"{JS_API}.DIRECT.GET.{stream}",
        f"{JS_API}.DIRECT.GET.{stream}.>",
    ]


def _ordered_consumer(stream: str) -> list[str]:
    """An ephemeral ordered push consumer on ``stream`` (``subscribe_ordered``, KV keys and
    watches): create, inspect, recreate after a gap (delete the old one), answer flow control."""
    return [
        f"{JS_API}.CONSUMER.CREATE.{stream}",
        f"{JS_API}.CONSUMER.CREATE.{stream}.>",
        f"{JS_API}.CONSUMER.DELETE.{stream}.>",
        f"{JS_API}.CONSUMER.INFO.{stream}.>",
        f"$JS.FC.{stream}.>",
    ]


def _key_listing(stream: str) -> list[str]:
    """List a KV bucket's keys (``ksched.bus.kv_keys``): an ephemeral pull consumer on ``stream``,
    created, fetched from and deleted (its create and delete are in :func:`_ordered_consumer`)."""
    return [f"{JS_API}.CONSUMER.MSG.NEXT.{stream}.*"]


def _kv_bucket(bucket: str) -> list[str]:
    """Open (create), read, write, delete and list the keys of one KV bucket."""
    stream = f"KV_{bucket}"
    return [
        *_manage_streams([stream]),
        f"$KV.{bucket}.>",
        f"{JS_API}.DIRECT.GET.{stream}",
        f"{JS_API}.DIRECT.GET.{stream}.>",
        f"{JS_API}.STREAM.MSG.GET.{stream}",
        *_ordered_consumer(stream),
        *_key_listing(stream),
    ]


def _kv_bucket_migration(bucket: str) -> list[str]:
    """Read every key of an old KV bucket, then delete the bucket (``migrate_kv_bucket``)."""
    stream = f"KV_{bucket}"
    return [
        f"{JS_API}.STREAM.INFO.{stream}",
        f"{JS_API}.STREAM.DELETE.{stream}",
        f"{JS_API}.DIRECT.GET.{stream}",
        f"{JS_API}.DIRECT.GET.{stream}.>",
        f"{JS_API}.STREAM.MSG.GET.{stream}",
        *_ordered_consumer(stream),
        *_key_listing(stream),
    ]


def _durable_pull_consumer(stream: str, durable: str) -> list[str]:
    """Bind to (creating if needed) a durable pull consumer, fetch and acknowledge."""
    return [
        f"{JS_API}.CONSUMER.CREATE.{stream}.{durable}",
        f"{JS_API}.CONSUMER.CREATE.{stream}.{durable}.>",
        f"{JS_API}.CONSUMER.DURABLE.CREATE.{stream}.{durable}",
        f"{JS_API}.CONSUMER.INFO.{stream}.{durable}",
        f"{JS_API}.CONSUMER.MSG.NEXT.{stream}.{durable}",
        f"$JS.ACK.{stream}.{durable}.>",
    ]


# --- per service -----------------------------------------------------------------------------------
def service_permissions(subjects: Subjects) -> dict[str, Permissions]:
    """The permissions of each service's user (and of the read-only observer)."""
    s = subjects
    inbox = f"{s.inbox_prefix}.>"
    observability = [s.trace_all, s.health_all]  # every service traces (and creates P_trace if absent)
    every_stream = s.stream_names
    return {
        "informer": Permissions(
            publish=(
                s.snapshot_delta,
                s.feed_all,
                s.placements,
                inbox,  # bootstrap chunks go to the requester's inbox
                *observability,
                f"{JS_API}.INFO",
                *_manage_streams(every_stream),
                *_kv_bucket(assumed_ledger_bucket(s)),
                f"{JS_API}.STREAM.PURGE.KV_{assumed_ledger_bucket(s)}",  # closed entries (Ledger.flush_drops)
                *_kv_bucket_migration(legacy_assumed_ledger_bucket(s)),  # P_P_assumed of old releases
                *_kv_bucket(gang_commits_bucket(s)),
            ),
            subscribe=(
                s.snapshot_bootstrap,
                s.pending_bootstrap,
                s.assume,
                s.assume_batch,
                s.assume_group,
                s.forget,
                inbox,
            ),
        ),
        "queue": Permissions(
            publish=(
                s.pending_bootstrap,
                *observability,
                *_manage_streams([s.feed_stream, s.trace_stream]),
                *_ordered_consumer(s.feed_stream),
            ),
            subscribe=(
                s.queue_pop,
                s.queue_done,
                s.queue_done_batch,
                s.queue_renew,
                s.queue_requeue,
                s.queue_list,
                inbox,
            ),
        ),
        "scheduler": Permissions(
            publish=(
                s.queue_pop,
                s.queue_done,
                s.queue_done_batch,
                s.queue_renew,
                s.assume,
                s.assume_group,
                s.assume_batch,
                s.snapshot_bootstrap,
                s.pending_bootstrap,  # nominations: the pending pods, then their feed
                s.permit_all,
                *observability,
                *_manage_streams([s.trace_stream]),
                *_ordered_consumer(s.snapshot_stream),
                *_ordered_consumer(s.feed_stream),
            ),
            subscribe=(f"{s.prefix}.scheduler.*.unreserve", inbox),
        ),
        "binder": Permissions(
            publish=(
                s.forget,
                s.queue_requeue,
                f"{s.prefix}.scheduler.*.unreserve",
                *observability,
                *_manage_streams(every_stream),
                *_durable_pull_consumer(s.placement_stream, s.placement_consumer),
                *_kv_bucket(ended_placements_bucket(s)),
            ),
            subscribe=(s.permit_all, inbox),
        ),
        "ui": Permissions(  # ksched ui: reads the snapshot, the queue's listing and the traces
            publish=(
                s.snapshot_bootstrap,
                s.queue_list,
                *_read_stream(s.trace_stream),
                *_ordered_consumer(s.snapshot_stream),
                *_ordered_consumer(s.trace_stream),
            ),
            subscribe=(inbox,),
            allow_responses=False,
        ),
        OBSERVER: Permissions(
            publish=(*_read_stream(s.trace_stream), *_ordered_consumer(s.trace_stream)),
            subscribe=(*observability, inbox),
            allow_responses=False,
        ),
    }


# --- rendering -------------------------------------------------------------------------------------
def _strings(values: Sequence[str], indent: str) -> str:
    return "[\n" + "".join(f"{indent}  {json.dumps(v)}\n" for v in values) + f"{indent}]"


def _user(name: str, perms: Permissions, password: str) -> str:
    pad = "      "
    lines = [
        "    {",
        f"{pad}user: {json.dumps(name)}",
        f"{pad}password: {password}",
        f"{pad}permissions: {{",
        f"{pad}  publish: {{ allow: {_strings(perms.publish, pad + '  ')} }}",
        f"{pad}  subscribe: {{ allow: {_strings(perms.subscribe, pad + '  ')} }}",
    ]
    if perms.allow_responses:
        lines.append(f"{pad}  allow_responses: true")
    lines += [f"{pad}}}", "    }"]
    return "\n".join(lines)


def authorization_block(
    subjects: Subjects,
    passwords: Mapping[str, str] | None = None,
    *,
    users: Sequence[str] = (*SERVICES, OBSERVER),
) -> str:
    """The nats-server ``authorization { users: [...] }`` block for ``users``.

    ``passwords`` maps a user to its literal password; a user not in it gets the variable
    ``$KSCHED_NATS_<USER>_PASSWORD``, which nats-server resolves from its environment.
    """
    perms = service_permissions(subjects)
    unknown = [u for u in users if u not in perms]
    if unknown:
        raise ValueError(f"unknown NATS user(s) {unknown}: expected some of {sorted(perms)}")
    given = passwords or {}
    entries = [
        _user(u, perms[u], json.dumps(given[u]) if u in given else f"${password_variable(u)}") for u in users
    ]
    header = (
        f"# ksched NATS users for subject prefix {subjects.prefix!r}; generated by\n"
        f"# `python -m ksched.bus.auth --prefix {subjects.prefix}`: do not edit by hand.\n"
    )
    return header + "authorization {\n  users: [\n" + "\n".join(entries) + "\n  ]\n}\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m ksched.bus.auth",
        description="Print the nats-server authorization block with one user per ksched service.",
    )
    parser.add_argument("--prefix", default=DEFAULT_PREFIX, help="subject prefix (default %(default)s)")
    parser.add_argument(
        "--users",
        default=",".join((*SERVICES, OBSERVER)),
        help="comma-separated users to include (default: every service and the observer)",
    )
    args = parser.parse_args(argv)
    users = [u.strip() for u in args.users.split(",") if u.strip()]
    try:
        sys.stdout.write(authorization_block(Subjects(args.prefix), users=users))
    except ValueError as exc:
        print(f"{parser.prog}: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
