"""Assume cache tests after upstream ``passive_assume_cache_test.go``: assume, restore, out-of-sync
assumptions, expiry when the informer delivers a newer version, listing with assumed objects."""

from __future__ import annotations

import msgspec
import pytest

from ksched.api.core import PersistentVolume
from ksched.plugins.helper.storage import NotFoundError
from ksched.plugins.helper.testing import make_pv
from ksched.plugins.volumebinding.assume_cache import AssumeCache, AssumeError


def with_rv(pv: PersistentVolume, rv: str, cls: str | None = None) -> PersistentVolume:
    spec = pv.spec if cls is None else msgspec.structs.replace(pv.spec, storage_class_name=cls)
    return msgspec.structs.replace(
        pv, metadata=msgspec.structs.replace(pv.metadata, resource_version=rv), spec=spec
    )


def cache_over(*pvs: PersistentVolume) -> tuple[AssumeCache[PersistentVolume], dict[str, PersistentVolume]]:
    store = {pv.metadata.name: pv for pv in pvs}
    return AssumeCache("persistentvolumes", lambda: store), store


def test_get_missing_is_not_found_in_api_words() -> None:
    cache, _ = cache_over()
    with pytest.raises(NotFoundError, match='persistentvolumes "pv1" not found'):
        cache.get("pv1")


@pytest.mark.parametrize(
    ("stored_rv", "assumed_rv", "ok"),
    [("5", "5", True), ("5", "4", False), ("5", "6", False)],
    ids=["same-version", "older-version", "newer-version"],
)
def test_assume(stored_rv: str, assumed_rv: str, ok: bool) -> None:
    old = make_pv("pv1", resource_version=stored_rv)
    cache, _ = cache_over(old)
    new = with_rv(old, assumed_rv, cls="assumed")
    if ok:
        cache.assume(new)
        assert cache.get("pv1") is new
        assert cache.get_api_obj("pv1") is old
    else:
        with pytest.raises(AssumeError, match=r'"pv1" is out of sync \(stored: 5, assume: '):
            cache.assume(new)
        assert cache.get("pv1") is old


def test_assume_missing_object_fails() -> None:
    cache, _ = cache_over()
    with pytest.raises(NotFoundError):
        cache.assume(make_pv("pv1"))


def test_restore_drops_only_the_matching_version() -> None:
    old = make_pv("pv1", resource_version="5")
    cache, _ = cache_over(old)
    assumed = with_rv(old, "5", cls="assumed")
    cache.assume(assumed)
    cache.restore(with_rv(old, "4"))  # another version: nothing happens
    assert cache.get("pv1") is assumed
    cache.restore(assumed)
    assert cache.get("pv1") is old


def test_newer_informed_object_expires_the_assumption() -> None:
    old = make_pv("pv1", resource_version="5")
    cache, store = cache_over(old)
    cache.assume(with_rv(old, "5", cls="assumed"))
    newer = with_rv(old, "6")
    store["pv1"] = newer
    assert cache.get("pv1") is newer
    store["pv1"] = old  # even if the old version came back, the assumption is gone
    assert cache.get("pv1") is old
    assert len(cache) == 0


def test_deleted_object_expires_the_assumption() -> None:
    old = make_pv("pv1", resource_version="5")
    cache, store = cache_over(old)
    cache.assume(with_rv(old, "5", cls="assumed"))
    del store["pv1"]
    assert list(cache.values()) == []
    assert cache.assumed_keys() == []


def test_values_serve_assumed_versions() -> None:
    pvs = [make_pv(f"pv{i}", resource_version="1") for i in range(3)]
    cache, _ = cache_over(*pvs)
    assumed = with_rv(pvs[1], "1", cls="assumed")
    cache.assume(assumed)
    assert list(cache.values()) == [pvs[0], assumed, pvs[2]]
