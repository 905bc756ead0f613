"""The informer's ledger bucket is ``P_assumed``; older releases named it ``P_P_assumed``.
``migrate_kv_bucket`` moves the old bucket's keys into the new one (on a real nats-server)."""

from __future__ import annotations

import msgspec

from ksched.bus.codec import encode
from ksched.bus.connect import Bus
from ksched.bus.jetstream import TypedKV, migrate_kv_bucket
from ksched.bus.messages import Placement
from ksched.bus.streams import ASSUMED_LEDGER, assumed_ledger_bucket, legacy_assumed_ledger_bucket
from ksched.bus.subjects import Subjects
from tests.bus.samples import sample


def placement(uid: str, node: str) -> Placement:
    return msgspec.structs.replace(sample(Placement), pod_uid=uid, placement_id=f"{uid}:1", node_name=node)


def test_ledger_names_apply_the_prefix_once() -> None:
    assert assumed_ledger_bucket(Subjects()) == "ksched_assumed"
    assert assumed_ledger_bucket(Subjects("prod.ksched")) == "prod_ksched_assumed"
    assert legacy_assumed_ledger_bucket(Subjects()) == "ksched_ksched_assumed"


async def test_the_ledger_opens_under_its_new_name(bus: Bus) -> None:
    ledger = await TypedKV.open(bus, ASSUMED_LEDGER, Placement)
    assert ledger.bucket == assumed_ledger_bucket(bus.subjects) == f"{bus.subjects.prefix}_assumed"
    assert (await bus.js.stream_info(f"KV_{ledger.bucket}")).config.name == f"KV_{ledger.bucket}"


async def test_an_old_ledger_is_moved_into_the_new_bucket_and_deleted(bus: Bus) -> None:
    legacy_name = legacy_assumed_ledger_bucket(bus.subjects)
    legacy = await bus.js.create_key_value(bucket=legacy_name)  # as an older informer left it
    await legacy.put("uid-1", encode(placement("uid-1", "node-a")))
    await legacy.put("uid-2", encode(placement("uid-2", "node-b")))
    await legacy.put("uid-3", encode(placement("uid-3", "node-c")))
    await legacy.delete("uid-3")  # bound meanwhile: a tombstone, not a key
    ledger = await TypedKV.open(bus, ASSUMED_LEDGER, Placement)
    await ledger.put("uid-2", placement("uid-2", "node-new"))  # the new ledger's value is newer

    assert await migrate_kv_bucket(bus, legacy_name, ledger) == 1

    assert sorted(await ledger.keys()) == ["uid-1", "uid-2"]
    moved, kept = await ledger.get("uid-1"), await ledger.get("uid-2")
    assert moved is not None and moved.value == placement("uid-1", "node-a")
    assert kept is not None and kept.value.node_name == "node-new"
    names = [info.config.name for info in await bus.js.streams_info()]
    assert f"KV_{legacy_name}" not in names and f"KV_{ledger.bucket}" in names
    assert await migrate_kv_bucket(bus, legacy_name, ledger) == 0  # nothing left: a no-op


async def test_no_old_ledger_is_the_usual_case(bus: Bus) -> None:
    ledger = await TypedKV.open(bus, ASSUMED_LEDGER, Placement)
    assert await migrate_kv_bucket(bus, legacy_assumed_ledger_bucket(bus.subjects), ledger) == 0
    assert await ledger.keys() == []
