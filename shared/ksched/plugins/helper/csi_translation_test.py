"""In-tree to CSI translation tests after upstream ``csi-translation-lib`` (aws_ebs_test.go,
gce_pd_test.go, in_tree_volume_test.go): volume handles, topology rewriting, access modes."""

from __future__ import annotations

from collections.abc import Sequence

import msgspec
import pytest

from ksched.api.core import PersistentVolume, Volume
from ksched.plugins.helper import csi_translation as csi
from ksched.plugins.helper.testing import make_pv


@pytest.mark.parametrize(
    ("kubernetes_id", "want"),
    [
        ("vol-123", "vol-123"),
        ("aws:///vol-123", "vol-123"),
        ("aws://us-east-1a/vol-123", "vol-123"),
        ("aws://us-east-1a/not-a-volume", None),
        ("aws://us-east-1a/vol-1/extra", None),
    ],
)
def test_ebs_volume_id(kubernetes_id: str, want: str | None) -> None:
    if want is None:
        with pytest.raises(csi.TranslationError, match="Invalid format for AWS volume"):
            csi.ebs_volume_id(kubernetes_id)
    else:
        assert csi.ebs_volume_id(kubernetes_id) == want


def gce_pv(
    labels: dict[str, str], affinity: dict[str, list[str]] | None = None, modes: Sequence[str] = ()
) -> PersistentVolume:
    return make_pv(
        "pd",
        labels=labels,
        node_affinity=affinity,
        access_modes=modes,
        spec={"gcePersistentDisk": {"pdName": "disk"}},
    )


@pytest.mark.parametrize(
    ("labels", "handle"),
    [
        ({}, "projects/UNSPECIFIED/zones/UNSPECIFIED/disks/disk"),
        (
            {"topology.kubernetes.io/zone": "us-central1-a"},
            "projects/UNSPECIFIED/zones/us-central1-a/disks/disk",
        ),
        (
            {"failure-domain.beta.kubernetes.io/zone": "us-central1-a__us-central1-c"},
            "projects/UNSPECIFIED/regions/us-central1/disks/disk",
        ),
    ],
    ids=["unspecified", "zonal", "regional"],
)
def test_gce_pd_volume_handle(labels: dict[str, str], handle: str) -> None:
    translated = csi.translate_pv_to_csi(gce_pv(labels))
    assert translated.spec.csi is not None
    assert (translated.spec.csi.driver, translated.spec.csi.volume_handle) == (csi.GCE_PD_DRIVER, handle)
    assert translated.spec.gce_persistent_disk is None


def test_gce_pd_zone_labels_become_csi_topology() -> None:
    translated = csi.translate_pv_to_csi(
        gce_pv({"topology.kubernetes.io/zone": "us-central1-a__us-central1-b"})
    )
    aff = translated.spec.node_affinity
    assert aff is not None and aff.required is not None
    (term,) = aff.required.node_selector_terms
    assert [(r.key, r.values) for r in term.match_expressions] == [
        (csi.GCE_PD_TOPOLOGY_KEY, ["us-central1-a", "us-central1-b"])
    ]


def test_gce_pd_affinity_keys_are_replaced() -> None:
    pv = gce_pv(
        {},
        {
            "failure-domain.beta.kubernetes.io/zone": ["z1"],
            "failure-domain.beta.kubernetes.io/region": ["r1"],
        },
    )
    aff = csi.translate_pv_to_csi(pv).spec.node_affinity
    assert aff is not None and aff.required is not None
    keys = sorted(r.key for r in aff.required.node_selector_terms[0].match_expressions)
    assert keys == [csi.GCE_PD_TOPOLOGY_KEY, "topology.kubernetes.io/region"]


@pytest.mark.parametrize(
    ("modes", "want"),
    [
        (["ReadWriteMany"], ["ReadWriteOnce"]),
        (["ReadOnlyMany", "ReadWriteOnce"], ["ReadWriteOnce"]),
        (["ReadOnlyMany"], ["ReadOnlyMany"]),
        (["ReadWriteOncePod"], ["ReadWriteOnce"]),
    ],
)
def test_gce_pd_backward_compatible_access_modes(modes: list[str], want: list[str]) -> None:
    assert csi.translate_pv_to_csi(gce_pv({}, modes=modes)).spec.access_modes == want


def test_ebs_pv_translation() -> None:
    pv = make_pv(
        "ebs",
        labels={"topology.kubernetes.io/zone": "us-east-1a"},
        spec={"awsElasticBlockStore": {"volumeID": "aws://us-east-1a/vol-1"}},
    )
    translated = csi.translate_pv_to_csi(pv)
    assert translated.spec.csi is not None
    assert (translated.spec.csi.driver, translated.spec.csi.volume_handle) == (csi.AWS_EBS_DRIVER, "vol-1")
    aff = translated.spec.node_affinity
    assert aff is not None and aff.required is not None
    assert aff.required.node_selector_terms[0].match_expressions[0].key == csi.AWS_EBS_TOPOLOGY_KEY


def test_inline_translation_and_plugin_names() -> None:
    ebs = msgspec.convert({"name": "v", "awsElasticBlockStore": {"volumeID": "vol-9"}}, Volume)
    gce = msgspec.convert({"name": "v", "gcePersistentDisk": {"pdName": "d", "readOnly": True}}, Volume)
    rbd = msgspec.convert({"name": "v", "rbd": {"monitors": ["m"], "image": "i"}}, Volume)
    assert [csi.inline_plugin(v) for v in (ebs, gce, rbd)] == [
        csi.AWS_EBS_PLUGIN,
        csi.GCE_PD_PLUGIN,
        csi.RBD_PLUGIN,
    ]
    translated = csi.translate_inline_to_csi(ebs)
    assert translated.spec.csi is not None and translated.spec.csi.volume_handle == "vol-9"
    translated = csi.translate_inline_to_csi(gce)
    assert translated.spec.csi is not None
    assert translated.spec.csi.volume_handle == "projects/UNSPECIFIED/zones/UNSPECIFIED/disks/d"
    assert translated.spec.access_modes == ["ReadOnlyMany"]
    with pytest.raises(csi.TranslationError):
        csi.translate_inline_to_csi(rbd)
    assert csi.csi_driver_for(csi.AZURE_DISK_PLUGIN) == "disk.csi.azure.com"
    assert not csi.is_migratable_plugin("csi.example.com")
