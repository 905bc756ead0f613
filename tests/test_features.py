"""Feature gates: upstream's flag syntax, errors and dependencies (component-base ``featuregate``)."""

from __future__ import annotations

import logging

import pytest

from ksched import features
from ksched.features import (
    DEFAULT,
    GANG_SCHEDULING,
    GENERIC_WORKLOAD,
    KNOWN,
    FeatureGateError,
    FeatureGates,
)

#: kube_features.go at 1.36.2: (default, stage, locked, dependencies)
DRA_SPECS = {
    "DynamicResourceAllocation": (True, "GA", True, ()),
    "DRAAdminAccess": (True, "GA", True, ("DynamicResourceAllocation",)),
    "DRAConsumableCapacity": (True, "Beta", False, ("DynamicResourceAllocation",)),
    "DRADeviceBindingConditions": (
        True,
        "Beta",
        False,
        ("DynamicResourceAllocation", "DRAResourceClaimDeviceStatus"),
    ),
    "DRADeviceTaints": (True, "Beta", False, ("DynamicResourceAllocation",)),
    "DRAExtendedResource": (True, "Beta", False, ("DynamicResourceAllocation",)),
    "DRAPartitionableDevices": (True, "Beta", False, ("DynamicResourceAllocation",)),
    "DRAPrioritizedList": (True, "GA", False, ("DynamicResourceAllocation",)),
    "DRAResourceClaimDeviceStatus": (True, "Beta", False, ()),
    "DRASchedulerFilterTimeout": (True, "Beta", False, ("DynamicResourceAllocation",)),
}


def test_the_alpha_gates_are_off_by_default_as_in_1_36() -> None:
    assert not DEFAULT.enabled(GENERIC_WORKLOAD) and not DEFAULT.enabled(GANG_SCHEDULING)
    assert str(DEFAULT) == ""


@pytest.mark.parametrize("name", sorted(DRA_SPECS))
def test_dra_gates_have_their_1_36_specs(name: str) -> None:
    spec = KNOWN[name]
    assert (spec.default, spec.stage, spec.locked, spec.depends_on) == DRA_SPECS[name]
    assert DEFAULT.enabled(name)


@pytest.mark.parametrize("name", sorted(n for n, s in DRA_SPECS.items() if not s[2]))
def test_an_unlocked_dra_gate_may_be_turned_off(name: str) -> None:
    extra = ",DRADeviceBindingConditions=false" if name == features.DRA_RESOURCE_CLAIM_DEVICE_STATUS else ""
    gates = FeatureGates.parse(f"{name}=false{extra}")
    assert not gates.enabled(name)
    assert f"{name}=false" in str(gates)


def test_setting_a_locked_gate_to_its_value_is_allowed() -> None:
    assert FeatureGates.parse("DRAAdminAccess=true,DynamicResourceAllocation=true") == DEFAULT


def test_setting_a_ga_gate_warns(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        FeatureGates.parse("DRAPrioritizedList=false")
    assert "setting GA feature gate DRAPrioritizedList=false" in caplog.text


def test_flag_syntax() -> None:
    gates = FeatureGates.parse(" GenericWorkload = true ,,GangScheduling=T")
    assert gates.enabled(GENERIC_WORKLOAD) and gates.enabled(GANG_SCHEDULING)
    assert str(gates) == "GangScheduling=true,GenericWorkload=true"
    assert FeatureGates.parse("GenericWorkload=1,GenericWorkload=0") == DEFAULT  # the last one wins


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("GangScheduling", "missing bool value for GangScheduling"),
        (
            "GangScheduling=maybe",
            'invalid value of GangScheduling=maybe, err: strconv.ParseBool: parsing "maybe": invalid syntax',
        ),
        (
            "GangScheduling=true",
            "GangScheduling is enabled, but depends on features that are disabled: [GenericWorkload]",
        ),
        (
            "DRAAdminAccess=false",
            "cannot set feature gate DRAAdminAccess to false, feature is locked to true",
        ),
        (
            "DynamicResourceAllocation=f,DRAAdminAccess=0",
            "[cannot set feature gate DynamicResourceAllocation to false, feature is locked to true, "
            "cannot set feature gate DRAAdminAccess to false, feature is locked to true]",
        ),
        (
            # a locked gate's error comes before any dependency check, as upstream
            "DRAAdminAccess=false,GangScheduling=true",
            "cannot set feature gate DRAAdminAccess to false, feature is locked to true",
        ),
        (
            "DRAResourceClaimDeviceStatus=false",
            "DRADeviceBindingConditions is enabled, but depends on features that are disabled: "
            "[DRAResourceClaimDeviceStatus]",
        ),
        (
            "GangScheduling=true,TopologyAwareWorkloadScheduling=true",
            "[GangScheduling is enabled, but depends on features that are disabled: [GenericWorkload], "
            "TopologyAwareWorkloadScheduling is enabled, but depends on features that are disabled: "
            "[GenericWorkload]]",
        ),
    ],
)
def test_upstream_errors(text: str, message: str) -> None:
    with pytest.raises(FeatureGateError) as err:
        FeatureGates.parse(text)
    assert str(err.value) == message


def test_an_unknown_gate_is_a_warning_as_upstream(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        assert FeatureGates.parse("NoSuchGate=true") == DEFAULT
    assert "unrecognized feature gate: NoSuchGate" in caplog.text
