"""ImageLocality: favour nodes that already have the pod's images, weighted by image size and
scaled down by how widely each image has spread (upstream ``imagelocality``).

Names are matched verbatim after ``:latest`` is appended to untagged names; images of init
containers, containers and image volumes (``volumes[].image.reference``) all count. An image's size
is the one upstream's cache keeps for its name: that of the first node that reported it
(``Snapshot.image_sizes``), on every node that has it.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np

from ksched.api.core import Pod
from ksched.framework.cycle_state import CycleState
from ksched.framework.handle import Handle
from ksched.framework.interfaces import MAX_NODE_SCORE, BatchScorePlugin, Int64Array, Rows, ScorePlugin
from ksched.framework.nodeinfo import NodeInfo
from ksched.framework.podinfo import PodInfo
from ksched.framework.snapshot import Snapshot
from ksched.plugins.helper.nodeindex import node_index

NAME = "ImageLocality"
MB = 1024 * 1024
#: image sizes below this count as nothing; the per-container maximum caps the sum
MIN_THRESHOLD = 23 * MB
MAX_CONTAINER_THRESHOLD = 1000 * MB

_CACHE_KEY = NAME


def normalized_image_name(name: str) -> str:
    """Append ``:latest`` when the name has no tag (no ``:`` after the last ``/``)."""
    if name.rfind(":") <= name.rfind("/"):
        return name + ":latest"
    return name


class _PodImages:
    """A pod's normalized image names (in upstream's order) and its container count."""

    __slots__ = ("counts", "names", "num_containers")

    def __init__(self, pod: Pod) -> None:
        spec = pod.spec
        names = [normalized_image_name(c.image or "") for c in spec.init_containers]
        names += [normalized_image_name(c.image or "") for c in spec.containers]
        names += [normalized_image_name(v.image.reference or "") for v in spec.volumes if v.image is not None]
        self.names = tuple(names)
        self.counts = Counter(names)
        #: image volumes add to the sum but not to the threshold
        self.num_containers = len(spec.init_containers) + len(spec.containers)


def pod_images(pod: PodInfo) -> _PodImages:
    cached = pod.cache.get(_CACHE_KEY)
    if isinstance(cached, _PodImages):
        return cached
    images = _PodImages(pod.pod)
    pod.cache[_CACHE_KEY] = images
    return images


def scaled_image_score(size: int, num_nodes: int, total_nodes: int) -> int:
    """The image size scaled by the fraction of nodes that have it (float64 then truncated, as Go)."""
    spread = num_nodes / total_nodes
    return int(float(size) * spread)


def calculate_priority(sum_scores: int, num_containers: int) -> int:
    """Map the summed image scores into 0..100 between the min and (per container) max thresholds."""
    max_threshold = MAX_CONTAINER_THRESHOLD * num_containers
    if sum_scores < MIN_THRESHOLD:
        sum_scores = MIN_THRESHOLD
    elif sum_scores > max_threshold:
        sum_scores = max_threshold
    numerator = MAX_NODE_SCORE * (sum_scores - MIN_THRESHOLD)
    denominator = max_threshold - MIN_THRESHOLD
    quotient = abs(numerator) // abs(denominator)  # Go truncates toward zero
    return quotient if (numerator >= 0) == (denominator > 0) else -quotient


class ImageLocality:
    name = NAME

    def __init__(self, handle: Handle) -> None:
        self._handle = handle

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        snapshot = self._handle.snapshot
        images = pod_images(pod)
        total = len(snapshot.nodes)
        num_nodes = snapshot.image_num_nodes
        on_node = node.image_sizes
        summed = 0
        for name in images.names:
            if name in on_node:
                summed += scaled_image_score(snapshot.image_sizes[name], num_nodes.get(name, 0), total)
        return calculate_priority(summed, images.num_containers)

    def score_batch(self, state: CycleState, pod: PodInfo, snapshot: Snapshot, rows: Rows) -> Int64Array:
        images = pod_images(pod)
        present = {name: n for name, n in images.counts.items() if name in snapshot.image_num_nodes}
        if not present and images.num_containers > 0:
            return np.zeros(len(rows), dtype=np.int64)  # sum 0 -> clamped to the minimum -> 0
        index = node_index(snapshot)
        total = len(snapshot.nodes)
        summed = np.zeros(len(rows), dtype=np.int64)
        for name, repeats in present.items():
            spread = snapshot.image_num_nodes[name] / total
            scaled = int(float(snapshot.image_sizes[name]) * spread)
            summed += np.where(index.has_image(name)[rows], scaled, 0).astype(np.int64) * repeats
        if images.num_containers == 0:
            return np.array([calculate_priority(int(s), 0) for s in summed], dtype=np.int64)
        max_threshold = MAX_CONTAINER_THRESHOLD * images.num_containers
        clamped = np.clip(summed, MIN_THRESHOLD, max_threshold)
        return np.asarray((MAX_NODE_SCORE * (clamped - MIN_THRESHOLD)) // (max_threshold - MIN_THRESHOLD))


# The extension points ImageLocality implements, checked by mypy against ksched.framework.interfaces
# (upstream's ``var _ fwk.<Point>Plugin = &ImageLocality{}`` lines).
_SCORE: type[ScorePlugin] = ImageLocality
_BATCH_SCORE: type[BatchScorePlugin] = ImageLocality


def new(args: Any, handle: Handle) -> ImageLocality:
    return ImageLocality(handle)
