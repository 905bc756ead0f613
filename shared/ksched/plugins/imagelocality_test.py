"""ImageLocality table tests ported from upstream ``image_locality_test.go``, plus 1.36's image volumes
and batch/per-node agreement."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ksched.api.core import Node, Pod
from ksched.framework.cycle_state import CycleState
from ksched.framework.podinfo import PodInfo
from ksched.framework.testing import FakeHandle, container, make_node, make_pod, make_snapshot
from ksched.plugins.imagelocality import ImageLocality, calculate_priority, new, normalized_image_name

MB = 1024 * 1024
MAX = 100


def pod_with(
    images: list[str], init_images: tuple[str, ...] = (), volume_images: tuple[str, ...] = ()
) -> Pod:
    spec = {
        "volumes": [{"name": f"v{i}", "image": {"reference": ref}} for i, ref in enumerate(volume_images)]
    }
    return make_pod(
        "p",
        containers=[container(f"c{i}", image=img) for i, img in enumerate(images)],
        init_containers=[container(f"i{i}", image=img) for i, img in enumerate(init_images)],
        spec=spec if volume_images else None,
    )


NODE_40_300_2000 = [
    (["gcr.io/40:latest", "gcr.io/40:v1", "gcr.io/40:v1"], 40 * MB),
    (["gcr.io/300:latest", "gcr.io/300:v1"], 300 * MB),
    (["gcr.io/2000:latest"], 2000 * MB),
]
NODE_250_10 = [(["gcr.io/250:latest"], 250 * MB), (["gcr.io/10:latest", "gcr.io/10:v1"], 10 * MB)]
NODE_600_40_900 = [
    (["gcr.io/600:latest"], 600 * MB),
    (["gcr.io/40:latest"], 40 * MB),
    (["gcr.io/900:latest"], 900 * MB),
]
NODE_300_600_900 = [
    (["gcr.io/300:latest"], 300 * MB),
    (["gcr.io/600:latest"], 600 * MB),
    (["gcr.io/900:latest"], 900 * MB),
]
NODE_4000_30 = [(["gcr.io/4000:latest"], 4000 * MB), (["gcr.io/30:latest"], 30 * MB)]
NODE_20_30_40 = [
    (["gcr.io/20:latest"], 20 * MB),
    (["gcr.io/30:latest"], 30 * MB),
    (["gcr.io/40:latest"], 40 * MB),
]
NO_IMAGES: list[tuple[list[str], int]] = []

CASES: list[tuple[str, Pod, list[list[tuple[list[str], int]]], list[int]]] = [
    # 100 * (250M/2 - 23M) / (1000M * 2 - 23M) = 5
    (
        "two images spread on two nodes, prefer the larger image one",
        pod_with(["gcr.io/40", "gcr.io/250"]),
        [NODE_40_300_2000, NODE_250_10],
        [0, 5],
    ),
    # 100 * ((40M + 300M)/2 - 23M) / (1000M * 2 - 23M) = 7
    (
        "two images on one node, prefer this node",
        pod_with(["gcr.io/40", "gcr.io/300"]),
        [NODE_40_300_2000, NODE_250_10],
        [7, 0],
    ),
    (
        "if exceed limit, use limit",
        pod_with(["gcr.io/10", "gcr.io/4000"]),
        [NODE_4000_30, NODE_250_10],
        [MAX, 0],
    ),
    # 100 * (4000M/3 - 23M) / (1000M * 2 - 23M) = 66
    (
        "if exceed limit, use limit (with node which has no images present)",
        pod_with(["gcr.io/10", "gcr.io/4000"]),
        [NODE_4000_30, NODE_250_10, NO_IMAGES],
        [66, 0, 0],
    ),
    (
        "pod with multiple large images, node2 is preferred",
        pod_with(["gcr.io/300", "gcr.io/600", "gcr.io/900"]),
        [NODE_600_40_900, NODE_300_600_900, NO_IMAGES],
        [32, 36, 0],
    ),
    (
        "pod with multiple small images",
        pod_with(["gcr.io/30", "gcr.io/40"]),
        [NODE_20_30_40, NODE_4000_30],
        [1, 0],
    ),
    (
        "include InitContainers: two images spread on two nodes, prefer the larger image one",
        pod_with(["gcr.io/30"], init_images=("gcr.io/300",)),
        [NODE_40_300_2000, NODE_20_30_40],
        [6, 0],
    ),
    # 1.36.2 (not in the stored upstream table): image volumes add to the sum but not to the container count.
    # node1: 300M * 1/2 = 150M -> 100 * (150M - 23M) / (1000M - 23M) = 12
    (
        "include image volumes: the volume image counts, the threshold stays per container",
        pod_with(["gcr.io/30"], volume_images=("gcr.io/300",)),
        [NODE_40_300_2000, NODE_20_30_40],
        [12, 0],
    ),
]


def node(name: str, images: list[tuple[list[str], int]]) -> Node:
    return make_node(name, images=images)


@pytest.mark.parametrize(("pod", "nodes", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_image_locality_priority(
    pod: Pod, nodes: list[list[tuple[list[str], int]]], expected: list[int]
) -> None:
    snapshot = make_snapshot([node(f"node{i + 1}", imgs) for i, imgs in enumerate(nodes)])
    pl = new(None, FakeHandle(snapshot))
    pi = PodInfo(pod)
    state = CycleState()
    got = [pl.score(state, pi, ni) for ni in snapshot.nodes]
    assert got == expected
    assert pl.score_batch(state, pi, snapshot, np.arange(len(nodes), dtype=np.intp)).tolist() == expected


def fake_digest(content: str) -> str:
    return "sha256:" + hashlib.sha256(content.encode()).hexdigest()


@pytest.mark.parametrize(
    ("image", "want"),
    [
        ("root", "root:latest"),
        ("gcr.io:5000/root", "gcr.io:5000/root:latest"),
        ("root:tag", "root:tag"),
        ("root@" + fake_digest("root"), "root@" + fake_digest("root")),
    ],
    ids=["add :latest postfix 1", "add :latest postfix 2", "keep it as is 1", "keep it as is 2"],
)
def test_normalized_image_name(image: str, want: str) -> None:
    assert normalized_image_name(image) == want


def test_calculate_priority_bounds() -> None:
    assert calculate_priority(0, 1) == 0
    assert calculate_priority(10**15, 2) == MAX
    assert calculate_priority(23 * MB, 1) == 0


IMAGES = ["a", "a:v1", "b", "c:latest", "reg:5000/d"]
node_images_st = st.lists(
    st.tuples(
        st.lists(
            st.sampled_from([normalized_image_name(i) for i in IMAGES] + ["a:v1"]), min_size=1, max_size=2
        ),
        st.integers(0, 3000 * MB),
    ),
    max_size=3,
)


@settings(max_examples=150, deadline=None)
@given(
    nodes=st.lists(node_images_st, min_size=1, max_size=8),
    images=st.lists(st.sampled_from(IMAGES), min_size=1, max_size=3),
    init_images=st.lists(st.sampled_from(IMAGES), max_size=2),
    volume_images=st.lists(st.sampled_from(IMAGES), max_size=2),
)
def test_batch_score_agrees_with_per_node(
    nodes: list[list[tuple[list[str], int]]],
    images: list[str],
    init_images: list[str],
    volume_images: list[str],
) -> None:
    snapshot = make_snapshot([node(f"n{i}", imgs) for i, imgs in enumerate(nodes)])
    pl = ImageLocality(FakeHandle(snapshot))
    pi = PodInfo(pod_with(images, tuple(init_images), tuple(volume_images)))
    rows = np.arange(len(nodes), dtype=np.intp)[::-1].copy()
    state = CycleState()
    assert pl.score_batch(state, pi, snapshot, rows).tolist() == [
        pl.score(state, pi, snapshot.nodes[r]) for r in rows
    ]


def test_an_image_counts_the_size_of_the_first_node_that_reported_it() -> None:
    """Upstream's cache keeps one state per image name, made by the first node added with it: a node
    reporting another size for that name scores the first one's (found by ``ksched differential``)."""
    big, small = 860 * MB, 123 * MB
    snapshot = make_snapshot([node("a", [(["nginx:1.27"], big)]), node("b", [(["nginx:1.27"], small)])])
    assert snapshot.image_sizes == {"nginx:1.27": big}
    pl = ImageLocality(FakeHandle(snapshot))
    pi = PodInfo(pod_with(["nginx:1.27"], (), ()))
    state = CycleState()
    scores = [pl.score(state, pi, ni) for ni in snapshot.nodes]
    assert scores[0] == scores[1] == calculate_priority(big, 1)
    assert pl.score_batch(state, pi, snapshot, np.arange(2, dtype=np.intp)).tolist() == scores
    snapshot.remove_node("a")  # b still has it: the state and its size stay
    assert snapshot.image_sizes == {"nginx:1.27": big}
    snapshot.remove_node("b")
    assert snapshot.image_sizes == {}
