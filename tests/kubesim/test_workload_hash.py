"""The hashes in the names the workload controllers give (ksched_kubesim.workload_hash), against the
names the real kube-controller-manager 1.36.2 gave for the same templates (as its API server stored
them): ReplicaSets ``<deployment>-<pod-template-hash>`` and ControllerRevisions ``<set>-<hash>``."""

from __future__ import annotations

from typing import Any

from ksched_kubesim.workload_hash import pod_template_hash, revision_hash, safe_encode, spew

WEB: dict[str, Any] = {
    "metadata": {"labels": {"app": "web"}},
    "spec": {
        "containers": [
            {
                "image": "registry.k8s.io/pause:3.10",
                "imagePullPolicy": "IfNotPresent",
                "name": "c",
                "resources": {"requests": {"cpu": "100m"}},
                "terminationMessagePath": "/dev/termination-log",
                "terminationMessagePolicy": "File",
            }
        ],
        "dnsPolicy": "ClusterFirst",
        "restartPolicy": "Always",
        "schedulerName": "default-scheduler",
        "securityContext": {},
        "terminationGracePeriodSeconds": 30,
    },
}
RICH: dict[str, Any] = {
    "metadata": {"annotations": {"b.io/y": "z", "note": "x<y&z"}, "labels": {"app": "rich", "tier": "a"}},
    "spec": {
        "affinity": {
            "podAntiAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "podAffinityTerm": {
                            "labelSelector": {
                                "matchExpressions": [{"key": "app", "operator": "In", "values": ["rich"]}]
                            },
                            "topologyKey": "kubernetes.io/hostname",
                        },
                        "weight": 10,
                    }
                ]
            }
        },
        "containers": [
            {
                "env": [
                    {"name": "A", "value": "1"},
                    {
                        "name": "B",
                        "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}},
                    },
                ],
                "image": "nginx:1.27",
                "imagePullPolicy": "IfNotPresent",
                "livenessProbe": {
                    "failureThreshold": 3,
                    "periodSeconds": 10,
                    "successThreshold": 1,
                    "tcpSocket": {"port": 80},
                    "timeoutSeconds": 1,
                },
                "name": "c",
                "ports": [{"containerPort": 80, "name": "http", "protocol": "TCP"}],
                "readinessProbe": {
                    "failureThreshold": 3,
                    "httpGet": {"path": "/", "port": "http", "scheme": "HTTP"},
                    "periodSeconds": 10,
                    "successThreshold": 1,
                    "timeoutSeconds": 1,
                },
                "resources": {
                    "limits": {"cpu": "2", "memory": "1536Mi"},
                    "requests": {"cpu": "250m", "ephemeral-storage": "1G", "memory": "128Mi"},
                },
                "securityContext": {"capabilities": {"drop": ["ALL"]}, "runAsUser": 1000},
                "terminationMessagePath": "/dev/termination-log",
                "terminationMessagePolicy": "File",
                "volumeMounts": [{"mountPath": "/data", "name": "v"}],
            }
        ],
        "dnsPolicy": "ClusterFirst",
        "initContainers": [
            {
                "command": ["sh", "-c", "true"],
                "image": "busybox",
                "imagePullPolicy": "Always",
                "name": "init",
                "resources": {},
                "terminationMessagePath": "/dev/termination-log",
                "terminationMessagePolicy": "File",
            }
        ],
        "nodeSelector": {"kubernetes.io/os": "linux"},
        "priorityClassName": "system-cluster-critical",
        "restartPolicy": "Always",
        "schedulerName": "default-scheduler",
        "securityContext": {},
        "terminationGracePeriodSeconds": 30,
        "tolerations": [{"effect": "NoSchedule", "key": "k", "operator": "Exists"}],
        "topologySpreadConstraints": [
            {
                "labelSelector": {"matchLabels": {"app": "rich"}},
                "maxSkew": 1,
                "topologyKey": "zone",
                "whenUnsatisfiable": "ScheduleAnyway",
            }
        ],
        "volumes": [
            {"emptyDir": {"sizeLimit": "1Gi"}, "name": "v"},
            {"configMap": {"defaultMode": 420, "name": "cfg"}, "name": "cm"},
        ],
    },
}
DB: dict[str, Any] = {
    "metadata": {"labels": {"app": "db"}},
    "spec": {
        "containers": [
            {
                "image": "registry.k8s.io/pause:3.10",
                "imagePullPolicy": "IfNotPresent",
                "name": "c",
                "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}},
                "terminationMessagePath": "/dev/termination-log",
                "terminationMessagePolicy": "File",
            }
        ],
        "dnsPolicy": "ClusterFirst",
        "restartPolicy": "Always",
        "schedulerName": "default-scheduler",
        "securityContext": {},
        "terminationGracePeriodSeconds": 30,
    },
}


def test_the_pod_template_hash_is_the_real_controllers() -> None:
    assert pod_template_hash(WEB) == "798d5ddbbb"  # web-798d5ddbbb
    assert pod_template_hash(RICH) == "795d8bff78"  # rich-795d8bff78: probes, volumes, affinity ...


def test_a_collision_count_changes_the_hash() -> None:
    assert pod_template_hash(WEB, 0) != pod_template_hash(WEB)
    assert pod_template_hash(WEB, 1) != pod_template_hash(WEB, 0)


def test_the_revision_hash_is_the_real_controllers() -> None:
    assert revision_hash(DB) == "6976cd5d88"  # db-6976cd5d88
    assert revision_hash(DB, 1) != revision_hash(DB)


def test_spew_prints_go_values_as_go_spew_does() -> None:
    assert spew("*int64", None) == "(*int64)<nil>"
    assert spew("*int64", 30) == "(*int64)30"
    assert spew("[]string", []) == "([]string)<nil>"  # empty is nil once through protobuf
    assert spew("[]string", ["a", "b"]) == "([]string)[a b]"
    assert spew("map[string]string", {"b": "2", "a": "1"}) == "(map[string]string)map[a:1 b:2]"
    assert (
        spew("intstr.IntOrString", "http")
        == "(intstr.IntOrString){Type:(intstr.Type)1 IntVal:(int32)0 StrVal:(string)http}"
    )
    assert spew("v1.LocalObjectReference", {}) == "(v1.LocalObjectReference){Name:(string)}"


def test_safe_encode_uses_the_upstream_alphabet() -> None:
    assert safe_encode("0123456789") == "456789bcdf"
