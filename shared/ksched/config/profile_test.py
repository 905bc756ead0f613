"""Building Frameworks from profiles: multiPoint expansion and the errors of upstream
``framework_test.go`` (``TestNewFrameworkMultiPointExpansion``, ``TestInitFrameworkWithScorePlugins``,
``TestNewFrameworkErrors``), the 1.36 default profile's extension points, and profile maps."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import pytest

from ksched.config import ConfigError, default_config, parse_config
from ksched.config.profile import (
    DefaultEnqueueExtension,
    build_framework,
    build_frameworks,
    list_plugins,
    missing_plugins,
)
from ksched.config.types import KubeSchedulerProfile, Plugin, PluginConfig, Plugins, PluginSet
from ksched.framework.registration import Registration
from ksched.framework.runtime import Framework
from ksched.framework.snapshot import Snapshot
from ksched.plugins.args.types import DefaultPreemptionArgs
from ksched.plugins.registry import IN_TREE, Registry

# --- fake plugins: one method set per extension point --------------------------------------------


async def _async_none(self: Any, *args: Any) -> None:
    return None


CAPABILITIES: dict[str, dict[str, Callable[..., Any]]] = {
    "PreEnqueue": {"pre_enqueue": lambda self, pod: None},
    "QueueSort": {"less": lambda self, a, b: False},
    "PreFilter": {"pre_filter": lambda self, state, pod, nodes: (None, None)},
    "Filter": {"filter": lambda self, state, pod, node: None},
    "PostFilter": {"post_filter": lambda self, state, pod, statuses: (None, None)},
    "PreScore": {"pre_score": lambda self, state, pod, nodes: None},
    "Score": {"score": lambda self, state, pod, node: 0},
    "NormalizeScore": {"normalize_score": lambda self, state, pod, nodes, scores: None},
    "Reserve": {
        "reserve": lambda self, state, pod, node: None,
        "unreserve": lambda self, state, pod, node: None,
    },
    "Permit": {"permit": lambda self, state, pod, node: (None, 0.0)},
    "PreBind": {"pre_bind": _async_none},
    "Bind": {"bind": _async_none},
    "PostBind": {"post_bind": _async_none},
    "Events": {"events_to_register": lambda self: []},
}


class FakePlugin:
    def __init__(self, name: str, args: Any = None, handle: Any = None) -> None:
        self.name = name
        self.args = args
        self.handle = handle


def plugin_class(*capabilities: str) -> type[FakePlugin]:
    methods: dict[str, Any] = {}
    for cap in capabilities:
        methods.update(CAPABILITIES[cap])
    return type("Fake" + "".join(capabilities), (FakePlugin,), methods)


def registration(cls: type[FakePlugin], name: str, args_type: Any = None) -> Registration:
    return Registration(lambda args, handle: cls(name, args, handle), args_type)


ALL_BUT_PRE_ENQUEUE = (
    "QueueSort", "PreFilter", "Filter", "PostFilter", "PreScore", "Score", "Reserve", "Permit",
    "PreBind", "Bind", "PostBind",
)  # fmt: skip

# upstream framework_test.go's registry
TEST_PLUGIN = "test-plugin"
SCORE_1, SCORE_2 = "score-plugin-1", "score-plugin-2"
NORMALIZE_1 = "score-with-normalize-plugin-1"
NOT_SCORE = "plugin-not-implementing-score"
DUPLICATE = "duplicate-plugin"
QUEUE_SORT = "no-op-queue-sort-plugin"
BIND = "bind-plugin"


def fw_test_registry(**more: Registration) -> Registry:
    extra = {
        TEST_PLUGIN: registration(plugin_class(*ALL_BUT_PRE_ENQUEUE), TEST_PLUGIN),
        SCORE_1: registration(plugin_class("PreScore", "Score"), SCORE_1),
        SCORE_2: registration(plugin_class("PreScore", "Score"), SCORE_2),
        NORMALIZE_1: registration(plugin_class("Score", "NormalizeScore"), NORMALIZE_1),
        NOT_SCORE: registration(plugin_class(), NOT_SCORE),
        DUPLICATE: registration(plugin_class("PreFilter"), DUPLICATE),
        QUEUE_SORT: registration(plugin_class("QueueSort"), QUEUE_SORT),
        BIND: registration(plugin_class("Bind"), BIND),
    }
    extra.update(more)
    return Registry(extra=extra)


Item = str | tuple[str, int]


def ps(enabled: list[Item] | None = None, disabled: list[str] | None = None) -> PluginSet:
    def plugin(item: Item) -> Plugin:
        return Plugin(name=item) if isinstance(item, str) else Plugin(name=item[0], weight=item[1])

    return PluginSet(
        enabled=[plugin(i) for i in enabled or []], disabled=[Plugin(name=n) for n in disabled or []]
    )


def build(plugins: Plugins, registry: Mapping[str, Registration] | None = None, **kwargs: Any) -> Framework:
    profile = KubeSchedulerProfile(scheduler_name="test-profile", plugins=plugins, **kwargs)
    return build_framework(profile, Snapshot(), registry if registry is not None else fw_test_registry())


def build_error(plugins: Plugins, registry: Mapping[str, Registration] | None = None, **kwargs: Any) -> str:
    with pytest.raises(ConfigError) as err:
        build(plugins, registry, **kwargs)
    assert len(err.value.messages) == 1
    return err.value.messages[0]


def everywhere(name: str, weight: int) -> dict[str, list[str]]:
    """``testPlugin`` at every point it implements (the expansion of one multiPoint entry)."""
    return {
        "queueSort": [name],
        "preFilter": [name],
        "filter": [name],
        "postFilter": [name],
        "preScore": [name],
        "score": [f"{name}:{weight}"],
        "reserve": [name],
        "permit": [name],
        "preBind": [name],
        "bind": [name],
        "postBind": [name],
    }


def with_points(base: dict[str, list[str]], **points: list[str]) -> dict[str, list[str]]:
    out = dict(base)
    for point, names in points.items():
        if names:
            out[point] = names
        else:
            out.pop(point, None)
    return out


EXPANSION_CASES: list[tuple[str, Plugins, dict[str, list[str]]]] = [
    ("plugin expansion", Plugins(multi_point=ps([(TEST_PLUGIN, 5)])), everywhere(TEST_PLUGIN, 5)),
    (
        "disable MultiPoint plugin at some extension points",
        Plugins(multi_point=ps([TEST_PLUGIN]), pre_score=ps([], [TEST_PLUGIN]), score=ps([], [TEST_PLUGIN])),
        with_points(everywhere(TEST_PLUGIN, 1), preScore=[], score=[]),
    ),
    (
        "Multiple MultiPoint plugins",
        Plugins(multi_point=ps([TEST_PLUGIN, SCORE_1])),
        with_points(
            everywhere(TEST_PLUGIN, 1),
            preScore=[TEST_PLUGIN, SCORE_1],
            score=[f"{TEST_PLUGIN}:1", f"{SCORE_1}:1"],
        ),
    ),
    (
        "disable MultiPoint extension",
        Plugins(multi_point=ps([TEST_PLUGIN, SCORE_1]), pre_score=ps([], ["*"])),
        with_points(everywhere(TEST_PLUGIN, 1), preScore=[], score=[f"{TEST_PLUGIN}:1", f"{SCORE_1}:1"]),
    ),
    (
        "Reorder MultiPoint plugins (specified extension takes precedence)",
        Plugins(multi_point=ps([NORMALIZE_1, TEST_PLUGIN, SCORE_1]), score=ps([SCORE_1, TEST_PLUGIN])),
        with_points(
            everywhere(TEST_PLUGIN, 1),
            preScore=[TEST_PLUGIN, SCORE_1],
            score=[f"{SCORE_1}:1", f"{TEST_PLUGIN}:1", f"{NORMALIZE_1}:1"],
        ),
    ),
    (
        "Reorder MultiPoint plugins (specified extension only takes precedence when it exists in MultiPoint)",
        Plugins(multi_point=ps([TEST_PLUGIN, SCORE_1]), score=ps([NORMALIZE_1, SCORE_1, TEST_PLUGIN])),
        with_points(
            everywhere(TEST_PLUGIN, 1),
            preScore=[TEST_PLUGIN, SCORE_1],
            score=[f"{SCORE_1}:1", f"{TEST_PLUGIN}:1", f"{NORMALIZE_1}:1"],
        ),
    ),
    (
        "Override MultiPoint plugins weights",
        Plugins(multi_point=ps([TEST_PLUGIN, SCORE_1]), score=ps([(SCORE_1, 5), (TEST_PLUGIN, 3)])),
        with_points(
            everywhere(TEST_PLUGIN, 1),
            preScore=[TEST_PLUGIN, SCORE_1],
            score=[f"{SCORE_1}:5", f"{TEST_PLUGIN}:3"],
        ),
    ),
    (
        "disable and enable MultiPoint plugins with '*'",
        Plugins(multi_point=ps([QUEUE_SORT, BIND, SCORE_1], ["*"])),
        {"queueSort": [QUEUE_SORT], "preScore": [SCORE_1], "score": [f"{SCORE_1}:1"], "bind": [BIND]},
    ),
    (
        "disable and enable MultiPoint plugin by name",
        Plugins(multi_point=ps([BIND, QUEUE_SORT, SCORE_1], [SCORE_1])),
        {"queueSort": [QUEUE_SORT], "preScore": [SCORE_1], "score": [f"{SCORE_1}:1"], "bind": [BIND]},
    ),
    (
        "Override MultiPoint plugins weights and avoid a plugin being loaded multiple times",
        Plugins(
            multi_point=ps([TEST_PLUGIN, SCORE_1]), score=ps([(SCORE_1, 5), (SCORE_2, 5), (TEST_PLUGIN, 3)])
        ),
        with_points(
            everywhere(TEST_PLUGIN, 1),
            preScore=[TEST_PLUGIN, SCORE_1],
            score=[f"{SCORE_1}:5", f"{TEST_PLUGIN}:3", f"{SCORE_2}:5"],
        ),
    ),
]


@pytest.mark.parametrize(("name", "plugins", "want"), EXPANSION_CASES, ids=[c[0] for c in EXPANSION_CASES])
def test_multi_point_expansion(name: str, plugins: Plugins, want: dict[str, list[str]]) -> None:
    assert list_plugins(build(plugins)) == want


def test_expect_already_registered_error() -> None:
    assert build_error(Plugins(multi_point=ps([TEST_PLUGIN, TEST_PLUGIN]))) == (
        'creating profile for scheduler name test-profile: plugin "test-plugin" already registered as '
        '"PreFilterPlugin"'
    )


def minimal(**sets: PluginSet) -> Plugins:
    """A profile with the queue sort and bind plugins every framework needs (upstream
    ``newFrameworkWithQueueSortAndBind``)."""
    return Plugins(queue_sort=ps([QUEUE_SORT]), bind=ps([BIND]), **sets)


@pytest.mark.parametrize(
    ("name", "score", "error"),
    [
        (
            "enabled Score plugin doesn't exist in registry",
            ["notExist"],
            'ScorePlugin "notExist" does not exist',
        ),
        (
            "enabled Score plugin doesn't extend the ScorePlugin interface",
            [NOT_SCORE],
            'plugin "plugin-not-implementing-score" does not extend ScorePlugin plugin',
        ),
        ("enabled Score plugin list is empty", [], None),
        ("enabled plugin only implements ScorePlugin interface", [SCORE_1], None),
        ("enabled plugin implements ScoreWithNormalizePlugin interface", [NORMALIZE_1], None),
    ],
)
def test_init_framework_with_score_plugins(name: str, score: list[Item], error: str | None) -> None:
    plugins = minimal(score=ps(score))
    if error is None:
        assert [pl.name for pl, _ in build(plugins).plugins.score] == score
    else:
        assert build_error(plugins) == f"creating profile for scheduler name test-profile: {error}"


def test_new_framework_errors() -> None:
    duplicate = minimal(pre_filter=ps([(DUPLICATE, 1), (DUPLICATE, 1)]))
    assert build_error(duplicate, plugin_config=[PluginConfig(name=DUPLICATE)]).endswith(
        'plugin "duplicate-plugin" already registered as "PreFilterPlugin"'
    )
    repeated = minimal(pre_filter=ps([DUPLICATE]))
    configs = [PluginConfig(name=DUPLICATE), PluginConfig(name=DUPLICATE)]
    assert build_error(repeated, plugin_config=configs).endswith(
        "repeated config for plugin duplicate-plugin"
    )


def test_queue_sort_and_bind_are_required() -> None:
    assert build_error(Plugins(bind=ps([BIND]))) == (
        "creating profile for scheduler name test-profile: only one queue sort plugin required for profile "
        'with scheduler name "test-profile", but got 0'
    )
    assert build_error(Plugins(queue_sort=ps([QUEUE_SORT]), multi_point=ps([TEST_PLUGIN]))) == (
        "creating profile for scheduler name test-profile: only one queue sort plugin required for profile "
        'with scheduler name "test-profile", but got 2'
    )
    assert build_error(Plugins(queue_sort=ps([QUEUE_SORT]))) == (
        "creating profile for scheduler name test-profile: at least one bind plugin is needed for profile "
        'with scheduler name "test-profile"'
    )


def test_score_weight_overflow() -> None:
    plugins = minimal(score=ps([(SCORE_1, 2**62), (SCORE_2, 2**62)]))
    assert build_error(plugins).endswith("score plugins: total score of Score plugins could overflow")


def test_score_plugin_named_differently_from_its_registration() -> None:
    registry = fw_test_registry(alias=registration(plugin_class("Score"), "real-name"))
    assert build_error(minimal(score=ps(["alias"])), registry).endswith(
        'score plugin "real-name" is not configured with weight'
    )


def test_placement_points_are_not_supported() -> None:
    plugins = minimal(placement_generate=ps([TEST_PLUGIN]))
    assert build_error(plugins).endswith("the placementGenerate extension point is not supported by ksched")


def test_factory_error_names_the_plugin() -> None:
    def broken(args: Any, handle: Any) -> Any:
        raise ValueError("bad args")

    registry = fw_test_registry(broken=Registration(broken))
    assert build_error(minimal(filter=ps(["broken"])), registry) == (
        'creating profile for scheduler name test-profile: initializing plugin "broken": bad args'
    )


def test_each_plugin_is_created_once_with_its_args_and_the_framework_as_handle() -> None:
    created: list[FakePlugin] = []
    cls = plugin_class("PreFilter", "Filter", "Score", "Events")

    def factory(args: Any, handle: Any) -> FakePlugin:
        created.append(cls("multi", args, handle))
        return created[-1]

    registry = fw_test_registry(multi=Registration(factory, DefaultPreemptionArgs))
    fw = build(
        minimal(multi_point=ps([("multi", 4)]), filter=ps(["multi"])),
        registry,
        plugin_config=[
            PluginConfig(name="multi", args=DefaultPreemptionArgs(min_candidate_nodes_absolute=7))
        ],
    )
    assert len(created) == 1
    plugin = created[0]
    assert plugin.handle is fw
    assert plugin.args == DefaultPreemptionArgs(min_candidate_nodes_absolute=7)
    assert fw.plugins.pre_filter == [plugin] and fw.plugins.filter == [plugin]
    assert fw.plugins.score == [(plugin, 4)]
    assert fw.score_weights == {"multi": 4}


def test_args_type_defaults_when_not_configured() -> None:
    cls = plugin_class("Filter")
    registry = fw_test_registry(
        withargs=Registration(lambda args, handle: cls("withargs", args), DefaultPreemptionArgs)
    )
    fw = build(minimal(filter=ps(["withargs"])), registry)
    assert fw.plugins.filter[0].args == DefaultPreemptionArgs()  # type: ignore[attr-defined]


def test_enqueue_extensions() -> None:
    """Plugins at PreEnqueue/PreFilter/Filter/Reserve/Permit give their events, or all events when they
    do not say (upstream ``defaultEnqueueExtension``); score-only plugins give none."""
    registry = fw_test_registry(
        with_events=registration(plugin_class("Filter", "Events"), "with_events"),
        without_events=registration(plugin_class("Reserve"), "without_events"),
        score_only=registration(plugin_class("Score", "Events"), "score_only"),
    )
    fw = build(minimal(multi_point=ps(["with_events", "without_events", "score_only"])), registry)
    extensions = fw.plugins.enqueue_extensions
    assert [e.name for e in extensions] == ["with_events", "without_events"]
    assert not isinstance(extensions[0], DefaultEnqueueExtension)
    assert isinstance(extensions[1], DefaultEnqueueExtension)
    (registered,) = extensions[1].events_to_register()
    assert registered.event.resource == "*"


def test_percentage_of_nodes_to_score_and_parallelism_reach_the_framework() -> None:
    profile = KubeSchedulerProfile(scheduler_name="p", plugins=minimal(), percentage_of_nodes_to_score=35)
    fw = build_framework(profile, Snapshot(), fw_test_registry(), parallelism=4)
    assert fw.percentage_of_nodes_to_score == 35
    assert fw.parallelism == 4
    assert fw.profile_name == "p"


# --- the 1.36 default profile ----------------------------------------------------------------------

#: what each default plugin implements in kube-scheduler 1.36.2 (its ``var _ fwk.XPlugin`` lines)
UPSTREAM_INTERFACES: dict[str, tuple[str, ...]] = {
    "SchedulingGates": ("PreEnqueue", "Events"),
    "PrioritySort": ("QueueSort",),
    "NodeUnschedulable": ("Filter", "Events"),
    "NodeName": ("Filter", "Events"),
    "TaintToleration": ("Filter", "PreScore", "Score", "NormalizeScore", "Events"),
    "NodeAffinity": ("PreFilter", "Filter", "PreScore", "Score", "NormalizeScore", "Events"),
    "NodePorts": ("PreFilter", "Filter", "Events"),
    "NodeResourcesFit": ("PreFilter", "Filter", "PreScore", "Score", "Events"),
    "VolumeRestrictions": ("PreFilter", "Filter", "Events"),
    "NodeVolumeLimits": ("PreFilter", "Filter", "Events"),
    "VolumeBinding": ("PreFilter", "Filter", "Reserve", "PreBind", "PreScore", "Score", "Events"),
    "VolumeZone": ("PreFilter", "Filter", "Events"),
    "PodTopologySpread": ("PreFilter", "Filter", "PreScore", "Score", "NormalizeScore", "Events"),
    "InterPodAffinity": ("PreFilter", "Filter", "PreScore", "Score", "NormalizeScore", "Events"),
    "DynamicResources": (
        "PreEnqueue",
        "PreFilter",
        "Filter",
        "PostFilter",
        "Score",
        "NormalizeScore",
        "Reserve",
        "PreBind",
        "Events",
    ),
    "DefaultPreemption": ("PostFilter", "PreEnqueue", "Events"),
    "NodeResourcesBalancedAllocation": ("PreScore", "Score"),
    "ImageLocality": ("Score",),
    "DefaultBinder": ("Bind",),
    "NodeDeclaredFeatures": ("PreFilter", "Filter", "Events"),
}

#: the default profile's extension points in kube-scheduler 1.36 (expansion of the multiPoint list over
#: UPSTREAM_INTERFACES). ../shared/upstream.md's table predates 1.36 at five points: NodeDeclaredFeatures
#: (beta, on by default in 1.36: last in multiPoint) is missing from preFilter/filter; NodeVolumeLimits,
#: VolumeZone and DynamicResources are missing from preFilter, DynamicResources and DefaultPreemption
#: (PreEnqueue since 1.33) from preEnqueue, DynamicResources from postFilter/score/reserve/preBind, and
#: VolumeBinding from preScore/score (it scores only with StorageCapacityScoring, but it is a ScorePlugin).
DEFAULT_PROFILE_1_36: dict[str, list[str]] = {
    "preEnqueue": ["SchedulingGates", "DynamicResources", "DefaultPreemption"],
    "queueSort": ["PrioritySort"],
    "preFilter": [
        "NodeAffinity", "NodePorts", "NodeResourcesFit", "VolumeRestrictions", "NodeVolumeLimits",
        "VolumeBinding", "VolumeZone", "PodTopologySpread", "InterPodAffinity", "DynamicResources",
        "NodeDeclaredFeatures",
    ],
    "filter": [
        "NodeUnschedulable", "NodeName", "TaintToleration", "NodeAffinity", "NodePorts", "NodeResourcesFit",
        "VolumeRestrictions", "NodeVolumeLimits", "VolumeBinding", "VolumeZone", "PodTopologySpread",
        "InterPodAffinity", "DynamicResources", "NodeDeclaredFeatures",
    ],
    "postFilter": ["DynamicResources", "DefaultPreemption"],
    "preScore": [
        "TaintToleration", "NodeAffinity", "NodeResourcesFit", "VolumeBinding", "PodTopologySpread",
        "InterPodAffinity", "NodeResourcesBalancedAllocation",
    ],
    "score": [
        "TaintToleration:3", "NodeAffinity:2", "NodeResourcesFit:1", "VolumeBinding:1", "PodTopologySpread:2",
        "InterPodAffinity:2", "DynamicResources:2", "NodeResourcesBalancedAllocation:1", "ImageLocality:1",
    ],
    "reserve": ["VolumeBinding", "DynamicResources"],
    "preBind": ["VolumeBinding", "DynamicResources"],
    "bind": ["DefaultBinder"],
}  # fmt: skip

#: ../shared/upstream.md's "Default profile" table, point by point
UPSTREAM_MD_TABLE: dict[str, list[str]] = {
    "preEnqueue": ["SchedulingGates"],
    "queueSort": ["PrioritySort"],
    "preFilter": [
        "NodeAffinity", "NodePorts", "NodeResourcesFit", "VolumeRestrictions", "VolumeBinding",
        "PodTopologySpread", "InterPodAffinity",
    ],
    "filter": DEFAULT_PROFILE_1_36["filter"][:-2],
    "postFilter": ["DefaultPreemption"],
    "preScore": [
        "TaintToleration", "NodeAffinity", "NodeResourcesFit", "NodeResourcesBalancedAllocation",
        "PodTopologySpread", "InterPodAffinity",
    ],
    "score": [
        "TaintToleration:3", "NodeAffinity:2", "PodTopologySpread:2", "InterPodAffinity:2",
        "NodeResourcesFit:1", "NodeResourcesBalancedAllocation:1", "ImageLocality:1",
    ],
    "reserve": ["VolumeBinding"],
    "preBind": ["VolumeBinding"],
    "bind": ["DefaultBinder"],
}  # fmt: skip


def stand_in_registry() -> Registry:
    """Fakes with the upstream interface sets under the default plugin names."""
    return Registry(
        extra={n: registration(plugin_class(*caps), n) for n, caps in UPSTREAM_INTERFACES.items()}
    )


def test_default_profile_extension_points_are_upstream_1_36() -> None:
    config = default_config()
    frameworks = build_frameworks(config, Snapshot(), stand_in_registry())
    assert list(frameworks) == ["default-scheduler"]
    assert list_plugins(frameworks["default-scheduler"]) == DEFAULT_PROFILE_1_36


def test_default_profile_agrees_with_upstream_md_where_it_is_current() -> None:
    """Every plugin upstream.md lists at a point is there (in the same relative order where its table
    follows the multiPoint order), with the score weight it gives: its table only omits what 1.36 added.
    Its preScore/score rows keep a pre-multiPoint order; 1.36 orders every point by the multiPoint list."""
    got = list_plugins(
        build_frameworks(default_config(), Snapshot(), stand_in_registry())["default-scheduler"]
    )
    for point, names in UPSTREAM_MD_TABLE.items():
        if point in ("preScore", "score"):
            assert set(names) <= set(got[point]), point
        else:
            assert [n for n in got[point] if n in names] == names, point


def test_default_profile_with_the_real_registry() -> None:
    """Whatever in-tree plugins exist are built; those not written yet are named, not silently dropped."""
    registry = Registry()
    config = default_config(registry)
    missing = missing_plugins(config, registry).get("default-scheduler", [])
    fw = build_frameworks(config, Snapshot(), registry)["default-scheduler"]
    present = {name for names in list_plugins(fw).values() for name in names}
    present = {n.split(":")[0] for n in present}
    assert present | set(missing) == {n for n in IN_TREE if n in dict(UPSTREAM_INTERFACES)}
    weights = {"TaintToleration": 3, "NodeAffinity": 2, "PodTopologySpread": 2, "InterPodAffinity": 2,
               "NodeResourcesFit": 1, "NodeResourcesBalancedAllocation": 1, "ImageLocality": 1,
               "DynamicResources": 2, "VolumeBinding": 1}  # fmt: skip
    for name, weight in fw.score_weights.items():
        assert weights[name] == weight


class UnwrittenModules(Mapping[str, Registration]):
    """A registry whose given in-tree plugins fail to import, as before their modules exist."""

    def __init__(self, base: Registry, unwritten: set[str]) -> None:
        self.base, self.unwritten = base, unwritten

    def __getitem__(self, name: str) -> Registration:
        if name in self.unwritten:
            raise ModuleNotFoundError(
                f"No module named 'ksched.plugins.{name.lower()}'", name=f"ksched.plugins.{name.lower()}"
            )
        return self.base[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self.base)

    def __contains__(self, name: object) -> bool:
        return name in self.base

    def __len__(self) -> int:
        return len(self.base)


def test_unwritten_in_tree_plugins_are_left_out_and_named(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="ksched.config")  # another test may have raised it
    registry = UnwrittenModules(stand_in_registry(), {"VolumeBinding", "DefaultPreemption"})
    config = default_config()
    assert missing_plugins(config, registry) == {"default-scheduler": ["VolumeBinding", "DefaultPreemption"]}
    fw = build_frameworks(config, Snapshot(), registry)["default-scheduler"]
    assert "VolumeBinding" not in list_plugins(fw)["filter"]
    assert list_plugins(fw)["postFilter"] == ["DynamicResources"]
    assert "left out: VolumeBinding, DefaultPreemption" in caplog.text
    with pytest.raises(ConfigError) as err:
        build_frameworks(config, Snapshot(), registry, skip_unimplemented=False)
    assert err.value.messages == [
        "creating profile for scheduler name default-scheduler: plugins not implemented in ksched yet: "
        "VolumeBinding, DefaultPreemption"
    ]


# --- several profiles ------------------------------------------------------------------------------
HEADER = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"


def test_two_profiles_share_the_snapshot_and_differ_in_plugins() -> None:
    registry = stand_in_registry()
    config = parse_config(
        HEADER + "profiles:\n- schedulerName: default-scheduler\n- schedulerName: no-spread\n  plugins:\n"
        "    multiPoint: {disabled: [{name: PodTopologySpread}]}\n    score: {enabled: [{name: "
        "ImageLocality, weight: 9}]}\n",
        registry,
    )
    snapshot = Snapshot()
    frameworks = build_frameworks(config, snapshot, registry)
    assert list(frameworks) == ["default-scheduler", "no-spread"]
    assert all(fw.snapshot is snapshot for fw in frameworks.values())
    no_spread = list_plugins(frameworks["no-spread"])
    assert "PodTopologySpread" not in no_spread["filter"]
    assert no_spread["score"][0] == "ImageLocality:9"  # set at the score point: first, its weight
    assert "PodTopologySpread" in list_plugins(frameworks["default-scheduler"])["filter"]


def test_profiles_with_different_queue_sort_plugins() -> None:
    """Validation compares the queueSort sets only; a multiPoint difference is caught at build (upstream)."""
    extra = {n: registration(plugin_class(*c), n) for n, c in UPSTREAM_INTERFACES.items()}
    extra["OtherSort"] = registration(plugin_class("QueueSort"), "OtherSort")
    registry = Registry(extra=extra)
    config = parse_config(
        HEADER + "profiles:\n- schedulerName: a\n- schedulerName: b\n  plugins:\n"
        "    multiPoint: {enabled: [{name: OtherSort}], disabled: [{name: PrioritySort}]}\n",
        registry,
    )
    with pytest.raises(ConfigError) as err:
        build_frameworks(config, Snapshot(), registry)
    assert err.value.messages == [
        'different queue sort plugins for profile "b": "OtherSort", first: "PrioritySort"'
    ]
