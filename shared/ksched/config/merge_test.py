"""Default plugins and ``mergePlugins``: cases of upstream ``default_plugins_test.go``."""

from __future__ import annotations

from typing import Any

import pytest

from ksched.config.defaults import default_plugins, merge_plugins
from ksched.config.types import Plugin, Plugins, PluginSet

Item = str | tuple[str, int]


def ps(enabled: list[Item] | None = None, disabled: list[str] | None = None) -> PluginSet:
    def plugin(item: Item) -> Plugin:
        return Plugin(name=item) if isinstance(item, str) else Plugin(name=item[0], weight=item[1])

    return PluginSet(
        enabled=[plugin(i) for i in enabled or []], disabled=[Plugin(name=n) for n in disabled or []]
    )


def plugins(**sets: PluginSet) -> Plugins:
    return Plugins(**sets)


def test_default_plugins_of_1_36() -> None:
    """``TestApplyFeatureGates`` with 1.36's default gates: DynamicResources (weight 2) before
    DefaultPreemption, NodeDeclaredFeatures last; the removed in-tree volume limits plugins are gone."""
    assert default_plugins() == plugins(
        multi_point=ps(
            [
                "SchedulingGates",
                "PrioritySort",
                "NodeUnschedulable",
                "NodeName",
                ("TaintToleration", 3),
                ("NodeAffinity", 2),
                "NodePorts",
                ("NodeResourcesFit", 1),
                "VolumeRestrictions",
                "NodeVolumeLimits",
                "VolumeBinding",
                "VolumeZone",
                ("PodTopologySpread", 2),
                ("InterPodAffinity", 2),
                ("DynamicResources", 2),
                "DefaultPreemption",
                ("NodeResourcesBalancedAllocation", 1),
                ("ImageLocality", 1),
                "DefaultBinder",
                "NodeDeclaredFeatures",
            ]
        )
    )


def test_default_plugins_are_fresh_objects() -> None:
    first = default_plugins()
    first.multi_point.enabled.clear()
    assert len(default_plugins().multi_point.enabled) == 20


MERGE_CASES: list[tuple[str, Plugins | None, Plugins, Plugins]] = [
    (
        "AppendCustomPlugin",
        plugins(filter=ps(["CustomPlugin"])),
        plugins(filter=ps(["DefaultPlugin1", "DefaultPlugin2"])),
        plugins(filter=ps(["DefaultPlugin1", "DefaultPlugin2", "CustomPlugin"])),
    ),
    (
        "InsertAfterDefaultPlugins2",
        plugins(filter=ps(["CustomPlugin", "DefaultPlugin2"], ["DefaultPlugin2"])),
        plugins(filter=ps(["DefaultPlugin1", "DefaultPlugin2"])),
        plugins(filter=ps(["DefaultPlugin1", "CustomPlugin", "DefaultPlugin2"], ["DefaultPlugin2"])),
    ),
    (
        "InsertBeforeAllPlugins",
        plugins(filter=ps(["CustomPlugin", "DefaultPlugin1", "DefaultPlugin2"], ["*"])),
        plugins(filter=ps(["DefaultPlugin1", "DefaultPlugin2"])),
        plugins(filter=ps(["CustomPlugin", "DefaultPlugin1", "DefaultPlugin2"], ["*"])),
    ),
    (
        "ReorderDefaultPlugins",
        plugins(filter=ps(["DefaultPlugin2", "DefaultPlugin1"], ["*"])),
        plugins(filter=ps(["DefaultPlugin1", "DefaultPlugin2"])),
        plugins(filter=ps(["DefaultPlugin2", "DefaultPlugin1"], ["*"])),
    ),
    (
        "ApplyNilCustomPlugin",
        None,
        plugins(filter=ps(["DefaultPlugin1", "DefaultPlugin2"])),
        plugins(filter=ps(["DefaultPlugin1", "DefaultPlugin2"])),
    ),
    (
        "CustomPluginOverrideDefaultPlugin",
        plugins(filter=ps([("Plugin1", 2), ("Plugin3", 3)])),
        plugins(filter=ps(["Plugin1", "Plugin2", "Plugin3"])),
        plugins(filter=ps([("Plugin1", 2), "Plugin2", ("Plugin3", 3)])),
    ),
    (
        "OrderPreserveAfterOverride",
        plugins(filter=ps([("Plugin2", 2), ("Plugin1", 1)])),
        plugins(filter=ps(["Plugin1", "Plugin2", "Plugin3"])),
        plugins(filter=ps([("Plugin1", 1), ("Plugin2", 2), "Plugin3"])),
    ),
    (
        "RepeatedCustomPlugin",
        plugins(filter=ps(["Plugin1", ("Plugin2", 2), "Plugin3", ("Plugin2", 4)])),
        plugins(filter=ps(["Plugin1", "Plugin2", "Plugin3"])),
        plugins(filter=ps(["Plugin1", ("Plugin2", 4), "Plugin3", ("Plugin2", 2)])),
    ),
    (
        "Append custom MultiPoint plugin",
        plugins(multi_point=ps(["CustomPlugin"])),
        plugins(multi_point=ps(["DefaultPlugin1", "DefaultPlugin2"])),
        plugins(multi_point=ps(["DefaultPlugin1", "DefaultPlugin2", "CustomPlugin"])),
    ),
    (
        "Append disabled Multipoint plugins",
        plugins(
            multi_point=ps(["CustomPlugin", "CustomPlugin2"], ["DefaultPlugin2"]),
            score=ps([], ["CustomPlugin2"]),
        ),
        plugins(multi_point=ps(["DefaultPlugin1", "DefaultPlugin2"])),
        plugins(
            multi_point=ps(["DefaultPlugin1", "CustomPlugin", "CustomPlugin2"], ["DefaultPlugin2"]),
            score=ps([], ["CustomPlugin2"]),
        ),
    ),
    (
        "override default MultiPoint plugins with custom value",
        plugins(multi_point=ps([("DefaultPlugin", 5)])),
        plugins(multi_point=ps(["DefaultPlugin"])),
        plugins(multi_point=ps([("DefaultPlugin", 5)])),
    ),
    (
        "disabled MultiPoint plugin in default set",
        plugins(multi_point=ps(["CustomPlugin"])),
        plugins(multi_point=ps(["DefaultPlugin"], ["DefaultPlugin2"])),
        plugins(multi_point=ps(["DefaultPlugin", "CustomPlugin"], ["DefaultPlugin2"])),
    ),
    (
        "disabled MultiPoint plugin in default set for specific extension point",
        plugins(multi_point=ps(["CustomPlugin"])),
        plugins(multi_point=ps(["DefaultPlugin"]), score=ps([], ["DefaultPlugin2"])),
        plugins(multi_point=ps(["DefaultPlugin", "CustomPlugin"]), score=ps([], ["DefaultPlugin2"])),
    ),
    (
        "multipoint with only disabled gets merged",
        plugins(multi_point=ps([], ["DefaultPlugin"])),
        plugins(multi_point=ps(["DefaultPlugin"])),
        plugins(multi_point=ps([], ["DefaultPlugin"])),
    ),
]


@pytest.mark.parametrize(
    ("name", "custom", "default", "expected"), MERGE_CASES, ids=[c[0] for c in MERGE_CASES]
)
def test_merge_plugins(name: str, custom: Plugins | None, default: Plugins, expected: Plugins) -> None:
    assert merge_plugins(default, custom) == expected


def _names(plugin_set: PluginSet) -> list[Any]:
    return [(p.name, p.weight) for p in plugin_set.enabled]


def test_merge_into_the_real_defaults_reweights_in_place() -> None:
    merged = merge_plugins(
        default_plugins(), plugins(multi_point=ps([("ImageLocality", 5), "Custom"], ["NodePorts"]))
    )
    names = _names(merged.multi_point)
    assert ("ImageLocality", 5) in names
    assert names.index(("ImageLocality", 5)) == 16  # default position, NodePorts removed before it
    assert names[-1] == ("Custom", None)
    assert all(n != "NodePorts" for n, _ in names)
    assert [p.name for p in merged.multi_point.disabled] == ["NodePorts"]


def test_disable_all_defaults_keeps_only_custom() -> None:
    merged = merge_plugins(
        default_plugins(), plugins(multi_point=ps(["PrioritySort", "DefaultBinder"], ["*"]))
    )
    assert _names(merged.multi_point) == [("PrioritySort", None), ("DefaultBinder", None)]
