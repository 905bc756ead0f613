"""Pod spec fields the API server validates (enums, port numbers and names, toleration, spread and
node-affinity rules): one invalid field per pod, 422 with upstream's text."""

from __future__ import annotations

from typing import Any

import pytest

from tests.contract.testing import pod_manifest, unique
from tests.fixtures.kubesim import Cluster, Raw

pytestmark = pytest.mark.contract

LABEL_VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must "
    "start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used "
    "for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)
REQUIRED_TERM = (
    "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]"
)


def _container(**fields: Any) -> dict[str, Any]:
    return {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10", **fields}]}


def _required_term(**requirement: Any) -> dict[str, Any]:
    term = {"matchExpressions": [{"key": "zone", **requirement}]}
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}}


CASES: dict[str, tuple[dict[str, Any], str]] = {
    "port-protocol": (
        _container(ports=[{"containerPort": 80, "protocol": "HTTP"}]),
        'spec.containers[0].ports[0].protocol: Unsupported value: "HTTP": supported values: "SCTP", '
        '"TCP", "UDP"',
    ),
    "container-port-missing": (
        _container(ports=[{"name": "web"}]),
        "spec.containers[0].ports[0].containerPort: Required value",
    ),
    "container-port-range": (
        _container(ports=[{"containerPort": 70000}]),
        "spec.containers[0].ports[0].containerPort: Invalid value: 70000: must be between 1 and 65535, "
        "inclusive",
    ),
    "host-port-range": (
        _container(ports=[{"containerPort": 80, "hostPort": -1}]),
        "spec.containers[0].ports[0].hostPort: Invalid value: -1: must be between 1 and 65535, inclusive",
    ),
    "port-name": (
        _container(ports=[{"containerPort": 80, "name": "http--web"}]),
        'spec.containers[0].ports[0].name: Invalid value: "http--web": must not contain consecutive hyphens',
    ),
    "termination-message-policy": (
        _container(terminationMessagePolicy="Logs"),
        'spec.containers[0].terminationMessagePolicy: Unsupported value: "Logs": supported values: "File", '
        '"FallbackToLogsOnError"',
    ),
    "toleration-seconds-need-no-execute": (
        {"tolerations": [{"key": "k", "operator": "Exists", "effect": "NoSchedule", "tolerationSeconds": 5}]},
        "spec.tolerations[0].effect: Invalid value: \"NoSchedule\": effect must be 'NoExecute' when "
        "`tolerationSeconds` is set",
    ),
    "toleration-empty-key-needs-exists": (
        {"tolerations": [{"operator": "Equal", "effect": "NoSchedule"}]},
        'spec.tolerations[0].operator: Invalid value: "Equal": operator must be Exists when `key` is empty, '
        'which means "match all values and all keys"',
    ),
    "toleration-value": (
        {"tolerations": [{"key": "k", "operator": "Equal", "value": "-x"}]},
        f'spec.tolerations[0].operator: Invalid value: "-x": {LABEL_VALUE_MSG}',
    ),
    "spread-when-unsatisfiable": (
        {"topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "Never"}]},
        'spec.topologySpreadConstraints[0].whenUnsatisfiable: Unsupported value: "Never": supported values: '
        '"DoNotSchedule", "ScheduleAnyway"',
    ),
    "spread-max-skew": (
        {
            "topologySpreadConstraints": [
                {"maxSkew": 0, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}
            ]
        },
        "spec.topologySpreadConstraints[0].maxSkew: Invalid value: 0: must be greater than zero",
    ),
    "spread-node-taints-policy": (
        {
            "topologySpreadConstraints": [
                {
                    "maxSkew": 1,
                    "topologyKey": "zone",
                    "whenUnsatisfiable": "DoNotSchedule",
                    "nodeTaintsPolicy": "Skip",
                }
            ]
        },
        'spec.topologySpreadConstraints[0].nodeTaintsPolicy: Unsupported value: "Skip": supported values: '
        '"Honor", "Ignore"',
    ),
    "node-affinity-operator": (
        {"affinity": _required_term(operator="Equals", values=["a"])},
        f'{REQUIRED_TERM}.matchExpressions[0].operator: Invalid value: "Equals": not a valid selector '
        "operator",
    ),
    "node-affinity-values": (
        {"affinity": _required_term(operator="Exists", values=["a"])},
        f"{REQUIRED_TERM}.matchExpressions[0].values: Forbidden: may not be specified when `operator` is "
        "'Exists' or 'DoesNotExist'",
    ),
    "node-affinity-preferred-weight": (
        {
            "affinity": {
                "nodeAffinity": {
                    "preferredDuringSchedulingIgnoredDuringExecution": [
                        {
                            "weight": 101,
                            "preference": {"matchExpressions": [{"key": "z", "operator": "Exists"}]},
                        }
                    ]
                }
            }
        },
        "spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight: "
        "Invalid value: 101: must be in the range 1-100",
    ),
    "node-selector-value": (
        {"nodeSelector": {"zone": "-a"}},
        f'spec.nodeSelector: Invalid value: "-a": {LABEL_VALUE_MSG}',
    ),
}


@pytest.mark.parametrize("case", list(CASES))
async def test_invalid_pod_field_is_422(raw: Raw, cluster: Cluster, case: str) -> None:
    spec, error = CASES[case]
    name = unique(case[:40])
    body = pod_manifest(name, **spec)
    resp = await raw.request("POST", f"/api/v1/namespaces/{cluster.namespace}/pods", body=body)
    assert resp.status == 422, resp.json()
    status = resp.json()
    assert status["message"] == f'Pod "{name}" is invalid: {error}'
    [cause] = status["details"]["causes"]
    assert f"{cause['field']}: {cause['message']}" == error


async def test_valid_fields_are_accepted(raw: Raw, cluster: Cluster) -> None:
    """The same fields with values the API server accepts (an unnamed port, a toleration of every
    taint, a preferred term with any label value)."""
    spec = {
        **_container(
            ports=[{"containerPort": 80, "protocol": "SCTP", "name": "web-1"}, {"containerPort": 81}]
        ),
        "tolerations": [{"operator": "Exists"}, {"key": "k", "effect": "NoExecute", "tolerationSeconds": 5}],
        "topologySpreadConstraints": [
            {
                "maxSkew": 1,
                "topologyKey": "zone",
                "whenUnsatisfiable": "ScheduleAnyway",
                "nodeAffinityPolicy": "Honor",
            }
        ],
        "affinity": {
            "nodeAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "weight": 1,
                        "preference": {"matchExpressions": [{"key": "z", "operator": "In", "values": ["-"]}]},
                    }
                ]
            }
        },
    }
    name = unique("valid-fields")
    resp = await raw.request(
        "POST", f"/api/v1/namespaces/{cluster.namespace}/pods", body=pod_manifest(name, **spec)
    )
    assert resp.status == 201, resp.json()
    assert resp.json()["spec"]["containers"][0]["ports"][1]["protocol"] == "TCP"
