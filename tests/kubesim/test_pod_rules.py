"""Quantities, QoS classes, image pull policy and pod defaulting helpers."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import pytest
from ksched_kubesim.pods import image_pull_policy, qos_class, set_condition
from ksched_kubesim.quantity import QuantityError, parse_quantity


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("100m", Fraction(1, 10)),
        ("1", Fraction(1)),
        ("64Mi", Fraction(64 * 2**20)),
        ("1e3", Fraction(1000)),
        ("1.5Gi", Fraction(3 * 2**29)),
        ("-1", Fraction(-1)),
        ("300e6", Fraction(300_000_000)),
        (".5", Fraction(1, 2)),
        (2, Fraction(2)),
        ("1k", Fraction(1000)),
        ("5n", Fraction(5, 10**9)),
    ],
)
def test_quantities(text: Any, value: Fraction) -> None:
    assert parse_quantity(text) == value


@pytest.mark.parametrize("text", ["", "abc", "1x", "1Mb", "--1", True, None])
def test_malformed_quantities(text: Any) -> None:
    with pytest.raises(QuantityError) as info:
        parse_quantity(text)
    assert "quantities must match the regular expression" in str(info.value)


def _containers(*resources: dict[str, Any]) -> dict[str, Any]:
    return {"containers": [{"name": f"c{i}", "resources": r} for i, r in enumerate(resources)]}


@pytest.mark.parametrize(
    ("spec", "qos"),
    [
        (_containers({}), "BestEffort"),
        (_containers({"requests": {"cpu": "100m"}}), "Burstable"),
        (
            _containers({"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "1", "memory": "1Gi"}}),
            "Guaranteed",
        ),
        (
            _containers(
                {"requests": {"cpu": "1000m", "memory": "1Gi"}, "limits": {"cpu": "1", "memory": "1024Mi"}}
            ),
            "Guaranteed",
        ),
        (
            _containers({"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "2", "memory": "1Gi"}}),
            "Burstable",
        ),
        (
            _containers(
                {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "1", "memory": "1Gi"}}, {}
            ),
            "Burstable",
        ),
        (_containers({"requests": {"ephemeral-storage": "1Gi"}}), "BestEffort"),
        (
            {
                "containers": [{"name": "c"}],
                "resources": {
                    "requests": {"cpu": "1", "memory": "1Gi"},
                    "limits": {"cpu": "1", "memory": "1Gi"},
                },
            },
            "Guaranteed",
        ),
        (
            {
                "containers": [
                    {
                        "name": "c",
                        "resources": {
                            "requests": {"cpu": "1", "memory": "1Gi"},
                            "limits": {"cpu": "1", "memory": "1Gi"},
                        },
                    }
                ],
                "initContainers": [
                    {"name": "s", "restartPolicy": "Always", "resources": {"requests": {"cpu": "50m"}}}
                ],
            },
            "Burstable",
        ),
    ],
)
def test_qos_class(spec: dict[str, Any], qos: str) -> None:
    assert qos_class(spec) == qos


@pytest.mark.parametrize(
    ("image", "policy"),
    [
        ("nginx", "Always"),
        ("nginx:latest", "Always"),
        ("nginx:1.27", "IfNotPresent"),
        ("registry:5000/nginx", "Always"),
        ("registry:5000/nginx:1", "IfNotPresent"),
        ("nginx@sha256:abc", "IfNotPresent"),
        ("nginx:latest@sha256:abc", "Always"),
    ],
)
def test_image_pull_policy(image: str, policy: str) -> None:
    assert image_pull_policy(image) == policy


def test_set_condition_keeps_transition_time_when_status_is_unchanged() -> None:
    status: dict[str, Any] = {"conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": "T0"}]}
    set_condition(status, {"type": "Ready", "status": "True", "reason": "Again"})
    assert status["conditions"] == [
        {
            "type": "Ready",
            "status": "True",
            "lastProbeTime": None,
            "lastTransitionTime": "T0",
            "reason": "Again",
        }
    ]
    set_condition(status, {"type": "Ready", "status": "False"})
    assert status["conditions"][0]["lastTransitionTime"] not in (None, "T0")
    set_condition(status, {"type": "PodScheduled", "status": "True"})
    assert [c["type"] for c in status["conditions"]] == ["Ready", "PodScheduled"]


@pytest.mark.parametrize(
    ("given", "canonical"),
    [
        ("0.5", "500m"),
        ("1000m", "1"),
        ("2000", "2k"),
        ("1000000", "1M"),
        ("1.5Gi", "1536Mi"),
        ("2048Ki", "2Mi"),
        ("1024", "1024"),
        ("1023Ki", "1023Ki"),
        ("7800m", "7800m"),
        ("300e6", "300e6"),
        ("1e3", "1e3"),
        ("33414881Ki", "33414881Ki"),
        ("0.0000000001", "1n"),
        ("0", "0"),
        ("-1", "-1"),
        (3, "3"),
        ("bad", "bad"),
    ],
)
def test_canonical_quantities(given: Any, canonical: str) -> None:
    from ksched_kubesim.quantity import canonical_quantity

    assert canonical_quantity(given) == canonical
