"""Real control planes started at once on a fresh machine: ``cluster.sh`` unpacks its binaries on
first use through one temporary folder for every caller, so two first starts at once used to unpack
into each other's folder and fail (``mv: cannot stat …tmp``). ``ControlPlane.up`` lets the first
start unpack alone (``ksched.launcher.controlplane.unpacking``)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from ksched.launcher.controlplane import ControlPlane
from tests.fixtures.kube136 import kube_folder

pytestmark = pytest.mark.e2e


def test_first_starts_at_once_unpack_the_binaries_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "cache"  # nothing unpacked yet, as on a fresh machine
    monkeypatch.setenv("KUBE136_CACHE", str(cache))
    planes = [ControlPlane(kube=kube_folder(), dir=tmp_path / f"plane{i}") for i in range(2)]
    try:
        with ThreadPoolExecutor(len(planes)) as pool:
            for up in [pool.submit(plane.up) for plane in planes]:
                up.result()
        for plane in planes:
            assert plane.env["KUBE136_APISERVER"].startswith("https://127.0.0.1:")
        (unpacked,) = [p for p in cache.iterdir() if p.is_dir()]
        assert (unpacked / "kube-apiserver").is_file()
    finally:
        for plane in planes:
            plane.down()
