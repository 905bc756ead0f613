"""Feature gates: upstream's flag syntax, errors and dependencies (component-base ``featuregate``)."""

from __future__ import annotations

import logging

import pytest

from ksched.features import (
    DEFAULT,
    GANG_SCHEDULING,
    GENERIC_WORKLOAD,
    FeatureGateError,
    FeatureGates,
)


def test_every_gate_is_off_by_default_as_in_1_36() -> None:
    assert not DEFAULT.enabled(GENERIC_WORKLOAD) and not DEFAULT.enabled(GANG_SCHEDULING)
    assert str(DEFAULT) == ""


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


def test_an_unknown_gate_is_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        assert FeatureGates.parse("NoSuchGate=true") == DEFAULT
    assert "unrecognized feature gate: NoSuchGate" in caplog.text
