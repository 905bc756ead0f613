"""Defaulting: cases of upstream ``defaults_test.go`` (``TestSchedulerDefaults``, ``TestPluginArgsDefaults``).

NodeDeclaredFeatures ends the default multiPoint, as upstream's (its gate is beta and on in 1.36).
"""

from __future__ import annotations

from typing import Any

import pytest

from ksched.api.core import TopologySpreadConstraint
from ksched.config import default_config, load_config, parse_config
from ksched.config.defaults import default_plugins, set_defaults
from ksched.config.types import (
    ClientConnectionConfiguration,
    KubeSchedulerConfiguration,
    KubeSchedulerProfile,
    LeaderElectionConfiguration,
    Plugin,
    PluginConfig,
    Plugins,
    PluginSet,
)
from ksched.plugins.args.types import (
    DefaultPreemptionArgs,
    DynamicResourcesArgs,
    InterPodAffinityArgs,
    NodeAffinityArgs,
    NodeResourcesBalancedAllocationArgs,
    NodeResourcesFitArgs,
    PodTopologySpreadArgs,
    ResourceSpec,
    ScoringStrategy,
    VolumeBindingArgs,
)
from ksched.plugins.registry import Registry
from tests.fidelity import material

CPU_MEMORY = [ResourceSpec(name="cpu", weight=1), ResourceSpec(name="memory", weight=1)]


def plugin_configs() -> list[PluginConfig]:
    """Upstream's ``pluginConfigs``: defaulted args of every default plugin that takes args, by name."""
    return [
        PluginConfig(
            name="DefaultPreemption",
            args=DefaultPreemptionArgs(min_candidate_nodes_percentage=10, min_candidate_nodes_absolute=100),
        ),
        PluginConfig(
            name="DynamicResources", args=DynamicResourcesArgs(filter_timeout="10s", binding_timeout="10m0s")
        ),
        PluginConfig(name="InterPodAffinity", args=InterPodAffinityArgs(hard_pod_affinity_weight=1)),
        PluginConfig(name="NodeAffinity", args=NodeAffinityArgs()),
        PluginConfig(
            name="NodeResourcesBalancedAllocation",
            args=NodeResourcesBalancedAllocationArgs(resources=CPU_MEMORY),
        ),
        PluginConfig(
            name="NodeResourcesFit",
            args=NodeResourcesFitArgs(
                scoring_strategy=ScoringStrategy(type="LeastAllocated", resources=CPU_MEMORY)
            ),
        ),
        PluginConfig(name="PodTopologySpread", args=PodTopologySpreadArgs(defaulting_type="System")),
        PluginConfig(name="VolumeBinding", args=VolumeBindingArgs(bind_timeout_seconds=600)),
    ]


def expected(**overrides: Any) -> KubeSchedulerConfiguration:
    fields: dict[str, Any] = {
        "parallelism": 16,
        "enable_profiling": True,
        "enable_contention_profiling": True,
        "leader_election": LeaderElectionConfiguration(
            leader_elect=True,
            lease_duration="15s",
            renew_deadline="10s",
            retry_period="2s",
            resource_lock="leases",
            resource_namespace="kube-system",
            resource_name="kube-scheduler",
        ),
        "client_connection": ClientConnectionConfiguration(
            qps=50.0, burst=100, content_type="application/vnd.kubernetes.protobuf"
        ),
        "percentage_of_nodes_to_score": 0,
        "pod_initial_backoff_seconds": 1,
        "pod_max_backoff_seconds": 10,
        "profiles": [
            KubeSchedulerProfile(
                scheduler_name="default-scheduler", plugins=default_plugins(), plugin_config=plugin_configs()
            )
        ],
    }
    fields.update(overrides)
    return KubeSchedulerConfiguration(**fields)


def defaulted(config: KubeSchedulerConfiguration) -> KubeSchedulerConfiguration:
    set_defaults(config, Registry())
    return config


def test_empty_config() -> None:
    assert defaulted(KubeSchedulerConfiguration()) == expected()


def test_no_scheduler_name() -> None:
    assert defaulted(KubeSchedulerConfiguration(profiles=[KubeSchedulerProfile()])) == expected()


def test_two_profiles() -> None:
    config = KubeSchedulerConfiguration(
        parallelism=16,
        profiles=[
            KubeSchedulerProfile(plugin_config=[PluginConfig(name="FooPlugin")]),
            KubeSchedulerProfile(
                scheduler_name="custom-scheduler",
                plugins=Plugins(
                    bind=PluginSet(
                        enabled=[Plugin(name="BarPlugin")], disabled=[Plugin(name="DefaultBinder")]
                    )
                ),
            ),
        ],
    )
    custom_plugins = default_plugins()
    custom_plugins.bind = PluginSet(
        enabled=[Plugin(name="BarPlugin")], disabled=[Plugin(name="DefaultBinder")]
    )
    assert defaulted(config) == expected(
        profiles=[
            # no default name with two profiles: validation asks for one
            KubeSchedulerProfile(
                plugins=default_plugins(), plugin_config=[PluginConfig(name="FooPlugin"), *plugin_configs()]
            ),
            KubeSchedulerProfile(
                scheduler_name="custom-scheduler", plugins=custom_plugins, plugin_config=plugin_configs()
            ),
        ]
    )


@pytest.mark.parametrize(
    ("name", "parallelism"), [("Prallelism with no port", 16), ("set non default parallelism", 8)]
)
def test_parallelism(name: str, parallelism: int) -> None:
    assert defaulted(KubeSchedulerConfiguration(parallelism=parallelism)) == expected(parallelism=parallelism)


def test_set_non_default_delay_cache_until_active() -> None:
    config = defaulted(KubeSchedulerConfiguration(delay_cache_until_active=True))
    assert config == expected(delay_cache_until_active=True)


def test_set_non_default_global_percentage_of_nodes_to_score() -> None:
    config = defaulted(KubeSchedulerConfiguration(percentage_of_nodes_to_score=50))
    assert config == expected(percentage_of_nodes_to_score=50)


def test_set_non_default_profile_percentage_of_nodes_to_score() -> None:
    config = defaulted(
        KubeSchedulerConfiguration(profiles=[KubeSchedulerProfile(percentage_of_nodes_to_score=50)])
    )
    want = expected()
    want.profiles[0].percentage_of_nodes_to_score = 50
    assert config == want
    assert config.percentage_of_nodes_to_score == 0


def test_set_non_default_global_and_profile_percentage_of_nodes_to_score() -> None:
    config = defaulted(
        KubeSchedulerConfiguration(
            percentage_of_nodes_to_score=10, profiles=[KubeSchedulerProfile(percentage_of_nodes_to_score=50)]
        )
    )
    want = expected(percentage_of_nodes_to_score=10)
    want.profiles[0].percentage_of_nodes_to_score = 50
    assert config == want


def test_user_args_keep_their_place_and_get_defaults() -> None:
    config = defaulted(
        KubeSchedulerConfiguration(
            profiles=[
                KubeSchedulerProfile(
                    plugin_config=[
                        PluginConfig(name="DynamicResources", args=DynamicResourcesArgs(filter_timeout="3s"))
                    ]
                )
            ]
        )
    )
    names = [c.name for c in config.profiles[0].plugin_config]
    assert names == ["DynamicResources"] + [c.name for c in plugin_configs() if c.name != "DynamicResources"]
    assert config.profiles[0].plugin_config[0].args == DynamicResourcesArgs(
        filter_timeout="3s", binding_timeout="10m0s"
    )


def test_args_only_for_plugins_the_profile_enables() -> None:
    config = parse_config(
        """
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- plugins:
    multiPoint:
      enabled: [{name: PrioritySort}, {name: DefaultBinder}, {name: NodeAffinity}]
      disabled: [{name: "*"}]
"""
    )
    assert [c.name for c in config.profiles[0].plugin_config] == ["NodeAffinity"]


@pytest.mark.parametrize(
    ("name", "given", "want"),
    [
        (
            "DefaultPreemptionArgs empty",
            DefaultPreemptionArgs(),
            DefaultPreemptionArgs(min_candidate_nodes_percentage=10, min_candidate_nodes_absolute=100),
        ),
        (
            "DefaultPreemptionArgs with value",
            DefaultPreemptionArgs(min_candidate_nodes_percentage=50),
            DefaultPreemptionArgs(min_candidate_nodes_percentage=50, min_candidate_nodes_absolute=100),
        ),
        (
            "InterPodAffinityArgs empty",
            InterPodAffinityArgs(),
            InterPodAffinityArgs(hard_pod_affinity_weight=1),
        ),
        (
            "InterPodAffinityArgs explicit 0",
            InterPodAffinityArgs(hard_pod_affinity_weight=0),
            InterPodAffinityArgs(hard_pod_affinity_weight=0),
        ),
        (
            "InterPodAffinityArgs with value",
            InterPodAffinityArgs(hard_pod_affinity_weight=5),
            InterPodAffinityArgs(hard_pod_affinity_weight=5),
        ),
        (
            "NodeResourcesBalancedAllocationArgs resources empty",
            NodeResourcesBalancedAllocationArgs(),
            NodeResourcesBalancedAllocationArgs(resources=CPU_MEMORY),
        ),
        (
            "NodeResourcesBalancedAllocationArgs have resource no weight",
            NodeResourcesBalancedAllocationArgs(
                resources=[
                    ResourceSpec(name="cpu"),
                    ResourceSpec(name="scalar.io/scalar0"),
                    ResourceSpec(name="scalar.io/scalar1", weight=1),
                ]
            ),
            NodeResourcesBalancedAllocationArgs(
                resources=[
                    ResourceSpec(name="cpu", weight=1),
                    ResourceSpec(name="scalar.io/scalar0", weight=1),
                    ResourceSpec(name="scalar.io/scalar1", weight=1),
                ]
            ),
        ),
        (
            "PodTopologySpreadArgs resources empty",
            PodTopologySpreadArgs(),
            PodTopologySpreadArgs(defaulting_type="System"),
        ),
        (
            "PodTopologySpreadArgs resources with value",
            PodTopologySpreadArgs(
                default_constraints=[
                    TopologySpreadConstraint(
                        topology_key="planet", when_unsatisfiable="DoNotSchedule", max_skew=2
                    )
                ]
            ),
            PodTopologySpreadArgs(
                default_constraints=[
                    TopologySpreadConstraint(
                        topology_key="planet", when_unsatisfiable="DoNotSchedule", max_skew=2
                    )
                ],
                defaulting_type="System",
            ),
        ),
        (
            "NodeResourcesFitArgs not set",
            NodeResourcesFitArgs(),
            NodeResourcesFitArgs(
                scoring_strategy=ScoringStrategy(type="LeastAllocated", resources=CPU_MEMORY)
            ),
        ),
        (
            "NodeResourcesFitArgs Resources empty",
            NodeResourcesFitArgs(scoring_strategy=ScoringStrategy(type="MostAllocated")),
            NodeResourcesFitArgs(
                scoring_strategy=ScoringStrategy(type="MostAllocated", resources=CPU_MEMORY)
            ),
        ),
        (
            "VolumeBindingArgs empty, StorageCapacityScoring disabled",
            VolumeBindingArgs(),
            VolumeBindingArgs(bind_timeout_seconds=600),
        ),
        (
            "DynamicResourcesArgs defaults, DRADeviceBindingConditions enabled",
            DynamicResourcesArgs(),
            DynamicResourcesArgs(filter_timeout="10s", binding_timeout="10m0s"),
        ),
    ],
)
def test_plugin_args_defaults(name: str, given: Any, want: Any) -> None:
    config = defaulted(
        KubeSchedulerConfiguration(
            profiles=[
                KubeSchedulerProfile(plugin_config=[PluginConfig(name=type(given).__name__[:-4], args=given)])
            ]
        )
    )
    assert config.profiles[0].plugin_config[0].args == want


def test_default_config_is_the_defaulted_empty_config() -> None:
    assert default_config() == expected()


def test_loading_the_fidelity_default_config() -> None:
    config = load_config(material("fidelity-public", "default-config.yaml"))
    assert config == expected(
        leader_election=LeaderElectionConfiguration(
            leader_elect=False,
            lease_duration="15s",
            renew_deadline="10s",
            retry_period="2s",
            resource_lock="leases",
            resource_namespace="kube-system",
            resource_name="kube-scheduler",
        ),
        client_connection=ClientConnectionConfiguration(
            qps=5000.0, burst=5000, content_type="application/vnd.kubernetes.protobuf"
        ),
    )
