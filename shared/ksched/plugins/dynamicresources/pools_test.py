"""PoolCache: a node's pools are gathered once while its node object and every slice stay the
same objects, and again after any of them is replaced."""

from __future__ import annotations

import msgspec

from ksched.plugins.dynamicresources.features import DRAFeatures
from ksched.plugins.dynamicresources.pools import PoolCache, gather_pools
from ksched.plugins.dynamicresources.testing import device, node, resource_slice

DRIVER = "gpu.example.com"


def test_pools_are_kept_while_the_slices_and_the_node_are_the_same_objects() -> None:
    features = DRAFeatures()
    worker = node("worker")
    slices = [resource_slice("s", "worker", "worker", DRIVER, device("gpu-0"))]
    cache = PoolCache()
    cache.sync(slices, features)
    first = cache.pools(worker)
    assert first == gather_pools(slices, worker, features, slices)
    cache.sync(list(slices), features)  # a new list of the same objects: kept
    assert cache.pools(worker) is first

    relabelled = msgspec.structs.replace(
        worker, metadata=msgspec.structs.replace(worker.metadata, labels={"a": "b"})
    )
    again = cache.pools(relabelled)  # another node object: gathered again
    assert again is not first and again == first

    changed = [resource_slice("s", "worker", "worker", DRIVER, device("gpu-0"), device("gpu-1"))]
    cache.sync(changed, features)  # a slice replaced: everything gathered again
    pools = cache.pools(relabelled)
    assert [d.name for d in pools[0].slices_targeting_node[0].spec.devices] == ["gpu-0", "gpu-1"]

    cache.sync(changed, DRAFeatures(partitionable_devices=False))  # other features: gathered again
    assert cache.pools(relabelled) is not pools
