"""The default profile under feature gates: upstream's ``applyFeatureGates`` appends GangScheduling
(GangScheduling) and TopologyPlacementGenerator + PodGroupPodsCount (TopologyAwareWorkloadScheduling)."""

from __future__ import annotations

import pytest

from ksched.config import build_frameworks, default_config, parse_config
from ksched.config.defaults import DEFAULT_MULTI_POINT, default_plugins
from ksched.config.profile import missing_plugins
from ksched.features import FeatureGates
from ksched.framework.events import EventResource
from ksched.framework.snapshot import Snapshot

GANG = FeatureGates.parse("GenericWorkload=true,GangScheduling=true")


@pytest.mark.parametrize(
    ("gates", "appended"),
    [
        ("", []),
        ("GenericWorkload=true", []),
        ("GenericWorkload=true,GangScheduling=true", [("GangScheduling", None)]),
        (
            "GenericWorkload=true,TopologyAwareWorkloadScheduling=true",
            [("TopologyPlacementGenerator", None), ("PodGroupPodsCount", 1)],
        ),
    ],
)
def test_default_plugins_under_gates(gates: str, appended: list[tuple[str, int | None]]) -> None:
    enabled = default_plugins(FeatureGates.parse(gates)).multi_point.enabled
    assert [(p.name, p.weight) for p in enabled] == [*DEFAULT_MULTI_POINT, *appended]


def test_gang_scheduling_runs_at_pre_enqueue_and_permit() -> None:
    fw = build_frameworks(default_config(gates=GANG), Snapshot())["default-scheduler"]
    assert [pl.name for pl in fw.plugins.permit] == ["GangScheduling"]
    assert [pl.name for pl in fw.plugins.pre_enqueue] == [
        "SchedulingGates",
        "DynamicResources",
        "DefaultPreemption",
        "GangScheduling",
    ]
    assert "GangScheduling" in [pl.name for pl in fw.plugins.enqueue_extensions]


def test_a_profile_may_disable_it() -> None:
    text = """
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- plugins:
    multiPoint:
      disabled: [{name: GangScheduling}]
"""
    fw = build_frameworks(parse_config(text, gates=GANG), Snapshot())["default-scheduler"]
    assert not fw.plugins.permit


def test_the_placement_generator_is_reported_missing() -> None:
    config = default_config(
        gates=FeatureGates.parse("GenericWorkload=true,TopologyAwareWorkloadScheduling=true")
    )
    assert missing_plugins(config) == {"default-scheduler": ["TopologyPlacementGenerator"]}


def test_the_plugins_read_the_dra_gates() -> None:
    """One place maps gates to the plugins' features (``Features.from_gates``); the registry hands
    them to DynamicResources, NodeResourcesFit and BalancedAllocation (upstream ``FactoryAdapter``)."""
    off = FeatureGates.parse(
        "DRAPrioritizedList=false,DRADeviceTaints=false,DRAExtendedResource=false,"
        "DRASchedulerFilterTimeout=false,DRAConsumableCapacity=false,DRAPartitionableDevices=false,"
        "DRADeviceBindingConditions=false"
    )
    for gates, on in ((FeatureGates(), True), (off, False)):
        fw = build_frameworks(default_config(gates=gates), Snapshot(), gates=gates)["default-scheduler"]
        dra_plugin, fit, balanced = (
            fw.plugin(n) for n in ("DynamicResources", "NodeResourcesFit", "NodeResourcesBalancedAllocation")
        )
        assert dra_plugin is not None and fit is not None and balanced is not None
        dra = dra_plugin.features
        assert (
            dra.prioritized_list,
            dra.device_taints,
            dra.extended_resource,
            dra.scheduler_filter_timeout,
            dra.consumable_capacity,
            dra.partitionable_devices,
            dra.device_binding_and_status,
        ) == (on,) * 7
        assert dra.admin_access and dra.resource_claim_device_status  # locked, and left on
        assert fit.features.dra_extended_resource is on
        assert balanced._dra_extended_resource is on
        events = {e.event.resource for e in fit.events_to_register()}
        assert (EventResource.DEVICE_CLASS in events) is on
