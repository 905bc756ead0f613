"""QoS classes, image pull policy and pod defaulting helpers (quantities: test_quantities.py)."""

from __future__ import annotations

from typing import Any

import pytest
from ksched_kubesim.pods import image_pull_policy, qos_class, set_condition


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
