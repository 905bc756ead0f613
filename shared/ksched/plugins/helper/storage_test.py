"""Storage helper tests after upstream ``component-helpers/storage/volume`` (FindMatchingVolume,
CheckNodeAffinity, GetBindVolumeToClaim) and ``v1helper.MatchTopologySelectorTerms``."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from ksched.api.core import PersistentVolume
from ksched.api.storage import TopologySelectorTerm
from ksched.plugins.helper.storage import (
    ANN_BOUND_BY_CONTROLLER,
    StorageError,
    bind_volume_to_claim,
    check_node_affinity,
    claim_class,
    find_matching_volume,
    is_pvc_fully_bound,
    label_zones,
    match_topology_selector_terms,
)
from ksched.plugins.helper.testing import make_pv, make_pvc

LABELS = {"zone": "a", "kubernetes.io/hostname": "n1"}


def test_claim_class_prefers_the_beta_annotation() -> None:
    pvc = make_pvc("c", storage_class="new", annotations={"volume.beta.kubernetes.io/storage-class": "old"})
    assert claim_class(pvc) == "old"
    assert claim_class(make_pvc("c")) == ""


def test_fully_bound_needs_volume_name_and_annotation_of_any_value() -> None:
    assert is_pvc_fully_bound(
        make_pvc("c", volume_name="pv", annotations={"pv.kubernetes.io/bind-completed": ""})
    )
    assert not is_pvc_fully_bound(make_pvc("c", volume_name="pv"))
    assert not is_pvc_fully_bound(make_pvc("c", bound=True))


@pytest.mark.parametrize(
    ("affinity", "ok"),
    [
        (None, True),
        ({"zone": ["a"]}, True),
        ({"zone": ["b"]}, False),
        ({"zone": ["a"], "rack": ["r1"]}, False),
    ],
    ids=["no-affinity", "match", "mismatch", "and-of-requirements"],
)
def test_check_node_affinity(affinity: dict[str, list[str]] | None, ok: bool) -> None:
    assert check_node_affinity(make_pv("pv", node_affinity=affinity), LABELS) is ok


def pv(name: str, capacity: str, **kw: Any) -> PersistentVolume:
    kw.setdefault("storage_class", "sc")
    return make_pv(name, capacity=capacity, access_modes=["ReadWriteOnce"], **kw)


@pytest.mark.parametrize(
    ("claim_kw", "volumes", "want"),
    [
        ({"request": "1G"}, [pv("big", "10G"), pv("small", "2G"), pv("tiny", "500M")], "small"),
        ({"request": "1G"}, [pv("other-class", "2G", storage_class="x")], None),
        ({"request": "1G"}, [pv("released", "2G", phase="Released")], None),
        ({"request": "1G"}, [pv("elsewhere", "2G", node_affinity={"zone": ["b"]})], None),
        ({"request": "1G", "access_modes": ["ReadWriteMany"]}, [pv("rwo", "2G")], None),
        ({"request": "1G", "spec": {"volumeMode": "Block"}}, [pv("fs", "2G")], None),
        (
            {"request": "1G", "spec": {"selector": {"matchLabels": {"tier": "gold"}}}},
            [pv("plain", "2G"), pv("gold", "5G", labels={"tier": "gold"})],
            "gold",
        ),
    ],
    ids=["smallest-fit", "class", "phase", "node-affinity", "access-modes", "volume-mode", "selector"],
)
def test_find_matching_volume(
    claim_kw: dict[str, Any], volumes: list[PersistentVolume], want: str | None
) -> None:
    claim = make_pvc("c", storage_class="sc", **claim_kw)
    got = find_matching_volume(claim, volumes, LABELS, set(), True)
    assert (got.metadata.name if got else None) == want


def test_find_matching_volume_returns_prebound_even_if_not_smallest_or_available() -> None:
    claim = make_pvc("c", storage_class="sc", request="1G", uid="u1")
    prebound = make_pv("pre", storage_class="other", capacity="50G", phase="Bound", claim=claim)
    assert find_matching_volume(claim, [pv("small", "2G"), prebound], LABELS, set(), True) is prebound
    far = make_pv("pre", capacity="50G", claim=claim, node_affinity={"zone": ["b"]})
    assert find_matching_volume(claim, [pv("small", "2G"), far], LABELS, set(), True) is None


def test_find_matching_volume_skips_excluded_and_claimed_by_others() -> None:
    claim = make_pvc("c", storage_class="sc", request="1G")
    other = make_pvc("other", storage_class="sc")
    volumes = [pv("a", "2G"), make_pv("b", storage_class="sc", capacity="2G", claim=other)]
    assert find_matching_volume(claim, volumes, LABELS, {"a"}, True) is None


def test_invalid_claim_selector_is_an_error_naming_the_claim() -> None:
    claim = make_pvc("c", spec={"selector": {"matchExpressions": [{"key": "k", "operator": "In"}]}})
    with pytest.raises(StorageError, match="default/c"):
        find_matching_volume(claim, [], LABELS, set(), True)


def test_bind_volume_to_claim() -> None:
    claim = make_pvc("c", uid="u1", resource_version="3")
    bound, dirty = bind_volume_to_claim(make_pv("pv"), claim)
    assert dirty
    ref = bound.spec.claim_ref
    assert ref is not None
    assert (ref.kind, ref.namespace, ref.name, ref.uid, ref.resource_version) == (
        "PersistentVolumeClaim",
        "default",
        "c",
        "u1",
        "3",
    )
    assert bound.metadata.annotations[ANN_BOUND_BY_CONTROLLER] == "yes"
    again, dirty = bind_volume_to_claim(bound, claim)
    assert not dirty and again == bound


@pytest.mark.parametrize(
    ("terms", "ok"),
    [
        ([], True),
        ([{"matchLabelExpressions": []}], False),
        ([{"matchLabelExpressions": [{"key": "zone", "values": ["a", "c"]}]}], True),
        ([{"matchLabelExpressions": [{"key": "zone", "values": ["b"]}]}], False),
        ([{"matchLabelExpressions": [{"key": "zone", "values": []}]}], False),
        (
            [
                {"matchLabelExpressions": [{"key": "zone", "values": ["b"]}]},
                {"matchLabelExpressions": [{"key": "zone", "values": ["a"]}]},
            ],
            True,
        ),
    ],
    ids=["no-terms", "empty-term", "in", "not-in", "no-values", "ored-terms"],
)
def test_match_topology_selector_terms(terms: list[dict[str, object]], ok: bool) -> None:
    parsed = msgspec.convert(terms, list[TopologySelectorTerm])
    assert match_topology_selector_terms(parsed, LABELS) is ok


def test_label_zones() -> None:
    assert label_zones("a__b") == frozenset({"a", "b"})
    assert label_zones(" a ") == frozenset({"a"})
    assert label_zones("a____b") is None
