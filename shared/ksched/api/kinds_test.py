"""The registry of kinds: one entry per group and kind, each Struct writing its kind's apiVersion and
kind, upstream's event-resource spelling, and decoding by kind as before the registry."""

from __future__ import annotations

import pytest

from ksched.api.core import Event
from ksched.api.coscheduling import CoschedulingPodGroup
from ksched.api.kinds import KINDS, Kind, UnsupportedKind, decode_object, decoding, lookup
from ksched.api.scheduling import PodGroup


def test_one_entry_per_group_and_kind_and_per_resource() -> None:
    assert len({(k.group, k.kind) for k in KINDS}) == len(KINDS)
    assert len({(k.group, k.version, k.plural) for k in KINDS}) == len(KINDS)


@pytest.mark.parametrize("kind", [k for k in KINDS if k.struct is not None], ids=lambda k: k.key)
def test_a_struct_writes_its_kinds_api_version_and_kind(kind: Kind) -> None:
    assert kind.struct is not None
    obj = kind.struct()
    assert (getattr(obj, "api_version", None), getattr(obj, "kind", None)) == (kind.api_version, kind.kind)


@pytest.mark.parametrize("kind", [k for k in KINDS if k.event_resource], ids=lambda k: k.key)
def test_event_resources_are_spelled_as_upstream(kind: Kind) -> None:
    """kube-scheduler's ``fwk.EventResource``: the kind in the core group, ``group/Kind`` elsewhere."""
    assert kind.event_resource == (f"{kind.group}/{kind.kind}" if kind.group else kind.kind)


@pytest.mark.parametrize(
    ("kind", "path", "namespaced_path", "list_kind"),
    [
        (lookup("", "Pod"), "/api/v1/pods", "/api/v1/namespaces/ns/pods", "PodList"),
        (
            lookup("events.k8s.io", "Event"),
            "/apis/events.k8s.io/v1/events",
            "/apis/events.k8s.io/v1/namespaces/ns/events",
            "EventList",
        ),
    ],
    ids=["core", "group"],
)
def test_paths_and_list_kinds(kind: Kind, path: str, namespaced_path: str, list_kind: str) -> None:
    assert (kind.path(), kind.path("ns"), kind.list_kind) == (path, namespaced_path, list_kind)


@pytest.mark.parametrize(
    ("api_version", "kind", "struct"),
    [
        ("scheduling.k8s.io/v1alpha2", "PodGroup", PodGroup),
        ("scheduling.x-k8s.io/v1alpha1", "PodGroup", CoschedulingPodGroup),
        ("v1", "PodGroup", PodGroup),  # a group that has no such kind: the first registered
        (None, "PodGroup", PodGroup),
        ("events.k8s.io/v1", "Event", Event),  # a group whose kind ksched does not decode
        ("v1", "Deployment", None),
        ("v1", "ConfigMap", None),
    ],
)
def test_decoding_reads_the_kind_and_the_group_where_two_share_a_name(
    api_version: str | None, kind: str, struct: type | None
) -> None:
    found = decoding(api_version, kind)
    assert (found.struct if found is not None else None) is struct


def test_an_unsupported_kind_names_the_kinds_read_once_each() -> None:
    with pytest.raises(UnsupportedKind) as info:
        decode_object({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}}, "f.yaml")
    message = str(info.value)
    assert message.startswith("f.yaml: Deployment d: unsupported kind 'Deployment' (supported: CSIDriver, ")
    supported = message.split("(supported: ")[1].rstrip(")").split(", ")
    assert supported == sorted(set(supported)) and "PodGroup" in supported and "Deployment" not in supported
