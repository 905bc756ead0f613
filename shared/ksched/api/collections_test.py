"""The collection table: the apiVersion and kind a listed object is written with."""

from __future__ import annotations

import pytest

from ksched.api.collections import (
    ALL,
    COSCHEDULING_POD_GROUPS,
    POD_GROUPS,
    Collection,
    pod_group_collections,
)
from ksched.api.kinds import decode_object


@pytest.mark.parametrize("collection", [*ALL, POD_GROUPS, COSCHEDULING_POD_GROUPS], ids=lambda c: c.kind)
def test_a_listed_object_decodes_back_into_the_collections_struct(collection: Collection) -> None:
    raw = {"apiVersion": collection.api_version, "kind": collection.object_kind, "metadata": {"name": "x"}}
    assert type(decode_object(raw)) is collection.struct


def test_coscheduling_pod_groups_keep_their_own_group() -> None:
    assert (COSCHEDULING_POD_GROUPS.api_version, COSCHEDULING_POD_GROUPS.object_kind) == (
        "scheduling.x-k8s.io/v1alpha1",
        "PodGroup",
    )
    assert (POD_GROUPS.api_version, POD_GROUPS.object_kind) == ("scheduling.k8s.io/v1alpha2", "PodGroup")


def test_pod_group_collections_follow_the_gates() -> None:
    assert pod_group_collections(False, True) == ()
    assert pod_group_collections(True, False) == (POD_GROUPS,)
    assert pod_group_collections(True, True) == (POD_GROUPS, COSCHEDULING_POD_GROUPS)


def test_only_the_alpha_and_custom_apis_are_optional() -> None:
    """The core collections are kube-scheduler's own: a refusal is a misconfiguration, never empty."""
    assert [c.kind for c in ALL if c.optional] == []
    assert POD_GROUPS.optional and COSCHEDULING_POD_GROUPS.optional
