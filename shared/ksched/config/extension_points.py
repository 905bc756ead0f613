"""The configurable extension points, in upstream ``getExtensionPoints`` order.

Each has its ``Plugins`` field (snake_case, also the ``PluginsByPoint`` field), its YAML name, and
the Protocol a plugin must implement there (whose name upstream's errors print, e.g.
``ScorePlugin "Foo" does not exist``).
"""

from __future__ import annotations

from dataclasses import dataclass

from ksched.framework import interfaces as ifc


@dataclass(frozen=True, slots=True)
class ExtensionPoint:
    field: str
    wire: str
    protocol: type

    @property
    def type_name(self) -> str:
        return self.protocol.__name__


EXTENSION_POINTS: tuple[ExtensionPoint, ...] = (
    ExtensionPoint("pre_filter", "preFilter", ifc.PreFilterPlugin),
    ExtensionPoint("filter", "filter", ifc.FilterPlugin),
    ExtensionPoint("post_filter", "postFilter", ifc.PostFilterPlugin),
    ExtensionPoint("reserve", "reserve", ifc.ReservePlugin),
    ExtensionPoint("pre_score", "preScore", ifc.PreScorePlugin),
    ExtensionPoint("score", "score", ifc.ScorePlugin),
    ExtensionPoint("pre_bind", "preBind", ifc.PreBindPlugin),
    ExtensionPoint("bind", "bind", ifc.BindPlugin),
    ExtensionPoint("post_bind", "postBind", ifc.PostBindPlugin),
    ExtensionPoint("permit", "permit", ifc.PermitPlugin),
    ExtensionPoint("pre_enqueue", "preEnqueue", ifc.PreEnqueuePlugin),
    ExtensionPoint("queue_sort", "queueSort", ifc.QueueSortPlugin),
)

#: upstream validation's stage names, in the order ksched reports them
VALIDATED_STAGES: tuple[str, ...] = (
    "pre_enqueue",
    "queue_sort",
    "pre_filter",
    "filter",
    "post_filter",
    "pre_score",
    "score",
    "reserve",
    "permit",
    "pre_bind",
    "bind",
    "post_bind",
)

#: v1 API points for pod-group placement (TopologyAwareWorkloadScheduling, alpha): not supported
PLACEMENT_POINTS: tuple[tuple[str, str], ...] = (
    ("placement_generate", "placementGenerate"),
    ("placement_score", "placementScore"),
)

WIRE_NAMES: dict[str, str] = {p.field: p.wire for p in EXTENSION_POINTS}
