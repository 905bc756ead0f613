"""The plugin registry: a plain mapping from plugin name to its registration.

In-tree plugins are listed here; out-of-tree plugins register through the Python entry-point
group ``ksched.plugins`` whose objects are :class:`Registration` values (or factories). The in-tree
plugins that read feature gates get the registry's :class:`Features` as a third constructor
argument (upstream ``runtime.FactoryAdapter``); build the registry with ``Registry(features=...)``.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator, Mapping
from functools import partial
from importlib.metadata import EntryPoint, entry_points

from ksched.framework.registration import PluginFactory, Registration
from ksched.plugins.feature import DEFAULT_FEATURES, Features

ENTRY_POINT_GROUP = "ksched.plugins"

Loader = Callable[[Features], Registration]


def _lazy(
    module: str, factory: str = "new", args_type: str | None = None, *, features: bool = False
) -> Loader:
    """A loader of an in-tree registration; ``features``: the factory takes the plugins' features."""

    def load(fts: Features) -> Registration:
        mod = importlib.import_module(f"ksched.plugins.{module}")
        args = getattr(importlib.import_module("ksched.plugins.args.types"), args_type) if args_type else None
        new = getattr(mod, factory)
        return Registration(partial(new, features=fts) if features else new, args)

    return load


#: name -> loader of the in-tree registration (modules import lazily)
IN_TREE: dict[str, Loader] = {
    "PrioritySort": _lazy("queuesort"),
    "SchedulingGates": _lazy("schedulinggates"),
    "NodeUnschedulable": _lazy("nodeunschedulable"),
    "NodeName": _lazy("nodename"),
    "TaintToleration": _lazy("tainttoleration"),
    "NodeAffinity": _lazy("nodeaffinity", args_type="NodeAffinityArgs"),
    "NodePorts": _lazy("nodeports"),
    "NodeResourcesFit": _lazy("noderesources.fit", args_type="NodeResourcesFitArgs", features=True),
    "NodeResourcesBalancedAllocation": _lazy(
        "noderesources.balanced_allocation", args_type="NodeResourcesBalancedAllocationArgs", features=True
    ),
    "ImageLocality": _lazy("imagelocality"),
    "DefaultBinder": _lazy("defaultbinder"),
    "DynamicResources": _lazy("dynamicresources", args_type="DynamicResourcesArgs", features=True),
    "PodTopologySpread": _lazy("podtopologyspread", args_type="PodTopologySpreadArgs"),
    "InterPodAffinity": _lazy("interpodaffinity", args_type="InterPodAffinityArgs"),
    "VolumeRestrictions": _lazy("volumerestrictions"),
    "NodeVolumeLimits": _lazy("nodevolumelimits"),
    "VolumeBinding": _lazy("volumebinding", args_type="VolumeBindingArgs"),
    "VolumeZone": _lazy("volumezone"),
    "DefaultPreemption": _lazy("defaultpreemption", args_type="DefaultPreemptionArgs"),
    "NodeDeclaredFeatures": _lazy("nodedeclaredfeatures"),
    "GangScheduling": _lazy("gangscheduling"),
    "PodGroupPodsCount": _lazy("podgrouppodscount"),
    "TopologyPlacementGenerator": _lazy("topologyplacementgenerator"),  # not implemented yet
}


class Registry(Mapping[str, Registration]):
    """In-tree plugins plus out-of-tree ones from entry points, resolved on first use; the in-tree
    plugins that read feature gates are built with ``features`` (upstream ``NewInTreeRegistry``)."""

    def __init__(
        self,
        extra: Mapping[str, Registration | PluginFactory] | None = None,
        *,
        features: Features = DEFAULT_FEATURES,
    ) -> None:
        self.features = features
        self._loaders: dict[str, Callable[[], Registration]] = {
            name: partial(load, features) for name, load in IN_TREE.items()
        }
        for ep in entry_points(group=ENTRY_POINT_GROUP):
            self._loaders[ep.name] = partial(_load_entry_point, ep)
        for name, reg in (extra or {}).items():
            self._loaders[name] = partial(_as_registration, reg)
        self._resolved: dict[str, Registration] = {}

    def __getitem__(self, name: str) -> Registration:
        reg = self._resolved.get(name)
        if reg is None:
            reg = self._loaders[name]()
            self._resolved[name] = reg
        return reg

    def __iter__(self) -> Iterator[str]:
        return iter(self._loaders)

    def __len__(self) -> int:
        return len(self._loaders)

    def __contains__(self, name: object) -> bool:
        return name in self._loaders


def _load_entry_point(ep: EntryPoint) -> Registration:
    return _as_registration(ep.load())


def _as_registration(obj: object) -> Registration:
    if isinstance(obj, Registration):
        return obj
    if callable(obj):
        return Registration(obj)
    raise TypeError(f"plugin registration must be a Registration or a factory, got {type(obj).__name__}")
