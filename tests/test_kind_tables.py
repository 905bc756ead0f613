"""The tables of kinds agree with the registry (``ksched.api.kinds.KINDS``): what the informer
list-watches, what kubesim serves, the snapshot's object tables, the cluster-event resources and the
queue's decoding of event objects."""

from __future__ import annotations

import pytest
from ksched_kubesim import resources as kubesim
from ksched_kubesim.resources import ResourceType
from ksched_queue.objects import RESOURCE_TYPES

from ksched.api.collections import ALL, COSCHEDULING_POD_GROUPS, POD_GROUPS, Collection
from ksched.api.kinds import KINDS, lookup
from ksched.framework.events import EventResource
from ksched.framework.objects import TABLES

COLLECTIONS = [*ALL, POD_GROUPS, COSCHEDULING_POD_GROUPS]
SERVED = [
    *kubesim.RESOURCES,
    kubesim.BINDINGS,
    kubesim.EVICTIONS,
    kubesim.TOKEN_REVIEWS,
    kubesim.SUBJECT_ACCESS_REVIEWS,
]


@pytest.mark.parametrize("served", SERVED, ids=lambda r: r.key)
def test_every_kind_kubesim_serves_is_registered_as_served(served: ResourceType) -> None:
    kind = lookup(served.group, served.kind)
    assert served.api is kind
    assert (served.version, served.plural, served.namespaced, served.singular) == (
        kind.version,
        kind.plural,
        kind.namespaced,
        kind.singular,
    )
    assert (served.api_version, served.list_kind, served.key) == (kind.api_version, kind.list_kind, kind.key)


def test_every_registered_kind_is_served_by_kubesim() -> None:
    assert {(r.group, r.kind) for r in SERVED} == {(k.group, k.kind) for k in KINDS}


@pytest.mark.parametrize("collection", COLLECTIONS, ids=lambda c: c.kind)
def test_every_collection_the_informer_lists_is_registered_and_served(collection: Collection) -> None:
    kind = lookup(collection.resource.group, collection.object_kind)
    assert collection.resource is kind
    assert (collection.path, collection.struct) == (kind.path(), kind.struct)
    served = kubesim.BY_PATH[(kind.group, kind.version, kind.plural)]
    assert (served.kind, served.namespaced) == (kind.kind, kind.namespaced)


@pytest.mark.parametrize("collection", [*ALL[2:], POD_GROUPS], ids=lambda c: c.kind)
def test_every_object_the_informer_lists_has_a_snapshot_table(collection: Collection) -> None:
    """``ClusterObjects.put`` files an object by kind and Struct, and silently refuses others."""
    assert TABLES[collection.kind][1] is collection.struct


def test_every_snapshot_table_is_a_registered_kind() -> None:
    decoded = {k.kind: k.struct for k in KINDS if k.struct is not None and k.group != "scheduling.x-k8s.io"}
    assert {kind: struct for kind, (_, struct) in TABLES.items()} == {kind: decoded[kind] for kind in TABLES}


def test_the_event_resources_are_the_registrys() -> None:
    constants = {v for k, v in vars(EventResource).items() if k.isupper()}
    own = {EventResource.ASSIGNED_POD, EventResource.UNSCHEDULED_POD, EventResource.WILDCARD}
    assert constants - own == {k.event_resource for k in KINDS if k.event_resource}


def test_the_queue_decodes_the_objects_of_every_event_resource_with_a_struct() -> None:
    """Hint functions get typed objects; a VolumeAttachment (no Struct in ksched) stays a dict."""
    constants = {v for k, v in vars(EventResource).items() if k.isupper()}
    assert set(RESOURCE_TYPES) == constants - {EventResource.WILDCARD, EventResource.VOLUME_ATTACHMENT}
    assert RESOURCE_TYPES[EventResource.CSI_NODE] is lookup("storage.k8s.io", "CSINode").struct


@pytest.mark.parametrize(
    ("group", "kind", "namespace", "name", "sub", "path"),
    [
        ("", "Pod", "ns", "p-1", "binding", "/api/v1/namespaces/ns/pods/p-1/binding"),
        ("", "Node", "", "n.1", "", "/api/v1/nodes/n.1"),
        ("events.k8s.io", "Event", "ns", "e", "", "/apis/events.k8s.io/v1/namespaces/ns/events/e"),
        ("", "Pod", "a/b", "x?y", "status", "/api/v1/namespaces/a%2Fb/pods/x%3Fy/status"),
        ("", "Pod", "ns", "../nodes", "", "/api/v1/namespaces/ns/pods/..%2Fnodes"),
    ],
)
def test_an_objects_path_quotes_its_segments(
    group: str, kind: str, namespace: str, name: str, sub: str, path: str
) -> None:
    assert lookup(group, kind).object_path(namespace, name, sub) == path
