"""deploy/: every kustomization renders (tests/deploy/kustomize.py), every object validates against
the Kubernetes 1.36 OpenAPI schemas (kubernetes-validate, strict: unknown fields are errors), and the
objects agree with each other and with the CLI: ports, probes, commands, users, RBAC, NATS config."""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml
from ksched_queue.metrics import PENDING_PODS

from ksched.bus.auth import SERVICES as NATS_SERVICES
from ksched.bus.auth import authorization_block, password_variable
from ksched.bus.embedded import nats_server_binary
from ksched.bus.subjects import Subjects
from ksched.config import load_config
from ksched.features import GANG_SCHEDULING, GENERIC_WORKLOAD, FeatureGates
from tests.deploy.kustomize import KustomizeError, build, json_patch
from tests.deploy.rbac import Grant, grants_of
from tests.deploy.test_compose import HTTP_PORTS, UI_PORT, parse_with_cli

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
KUBERNETES_VERSION = "1.36.0"
KUSTOMIZATIONS = ["base", "overlays/kubesim-demo", "overlays/production", "overlays/keda"]
CRD_KINDS = {("monitoring.coreos.com/v1", "ServiceMonitor"), ("keda.sh/v1alpha1", "ScaledObject")}
"""Custom resources: no schema in the Kubernetes OpenAPI documents (checked for consistency below)."""

Resource = dict[str, Any]
SECURE_PORT = 10259
"""Every service's HTTPS port in deploy/, as kube-scheduler's (each pod has its own)."""
LOOPBACK_PORT = 10251
"""The plain-HTTP port in deploy/, bound to the pod's loopback."""


def render(name: str) -> list[Resource]:
    return build(DEPLOY / name)


def find(resources: list[Resource], kind: str, name: str) -> Resource:
    found = [r for r in resources if r["kind"] == kind and r["metadata"]["name"] == name]
    assert len(found) == 1, f"{kind}/{name}: {len(found)} found"
    return found[0]


def deployments(resources: list[Resource]) -> Iterator[tuple[str, Resource]]:
    for res in resources:
        if res["kind"] == "Deployment" and res["metadata"]["name"].removeprefix("ksched-") in HTTP_PORTS:
            yield res["metadata"]["name"].removeprefix("ksched-"), res


def env_of(container: dict[str, Any]) -> dict[str, str]:
    return {e["name"]: e.get("value", "") for e in container.get("env", [])}


def secret_data(resources: list[Resource], name: str) -> dict[str, str]:
    return dict(find(resources, "Secret", name)["stringData"])


# --- schemas ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", KUSTOMIZATIONS)
def test_every_object_validates_against_the_kubernetes_schemas(name: str) -> None:
    resources = render(name)
    assert len(resources) > 10
    unvalidated = []
    for res in resources:
        if (res["apiVersion"], res["kind"]) in CRD_KINDS:
            with pytest.raises(kubernetes_validate.SchemaNotFoundError):
                kubernetes_validate.validate(res, KUBERNETES_VERSION, strict=True)
            unvalidated.append(res["kind"])
            continue
        try:
            kubernetes_validate.validate(res, KUBERNETES_VERSION, strict=True)
        except kubernetes_validate.ValidationError as exc:
            pytest.fail(f"{name}: {res['kind']}/{res['metadata']['name']}: {exc.message}")
    expected = {
        "overlays/production": ["ServiceMonitor"],
        "overlays/keda": ["ServiceMonitor", "ScaledObject", "ScaledObject"],
    }
    assert unvalidated == expected.get(name, [])


def test_the_validator_rejects_a_broken_object() -> None:
    """The check above can fail: a misspelt field and a wrong type are both refused."""
    deployment = find(render("base"), "Deployment", "ksched-binder")
    deployment["spec"]["template"]["spec"]["containers"][0]["readinessProbes"] = {}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(deployment, KUBERNETES_VERSION, strict=True)
    deployment = find(render("base"), "Deployment", "ksched-binder")
    deployment["spec"]["replicas"] = "two"
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(deployment, KUBERNETES_VERSION, strict=True)


# --- services --------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", KUSTOMIZATIONS)
def test_services_probes_ports_and_commands_agree_with_the_cli(name: str) -> None:
    resources = render(name)
    found = dict(deployments(resources))
    assert set(found) == set(HTTP_PORTS)
    for service, dep in found.items():
        pod = dep["spec"]["template"]
        (container,) = pod["spec"]["containers"]
        env = env_of(container)
        assert container["ports"] == [{"name": "https", "containerPort": SECURE_PORT}]
        for probe in ("startupProbe", "livenessProbe"):
            assert container[probe]["httpGet"] == {"path": "/livez", "port": "https", "scheme": "HTTPS"}
        assert container["readinessProbe"]["httpGet"] == {
            "path": "/readyz",
            "port": "https",
            "scheme": "HTTPS",
        }
        annotations = pod["metadata"]["annotations"]
        assert (annotations["prometheus.io/port"], annotations["prometheus.io/scheme"]) == ("10259", "https")
        ns = parse_with_cli(container["args"], {**env, "KSCHED_NATS_PASSWORD": "from-secret"})
        assert (ns.secure_port, ns.bind_address) == (SECURE_PORT, "0.0.0.0")
        # the plain port stays on the pod's loopback (kubectl port-forward), away from the secure one
        assert (ns.http_port, ns.http_host, ns.nats_user) == (LOOPBACK_PORT, "127.0.0.1", service)
        assert env["KSCHED_HTTP_HOST"] == "127.0.0.1"  # explicit: the image's ENV says 0.0.0.0
        assert "KSCHED_HTTP_TOKEN" not in env
        # in-cluster review of callers, default always-allow paths (the probes)
        assert (ns.authentication_kubeconfig, ns.authorization_kubeconfig) == (None, None)
        assert ns.authorization_always_allow_paths == ("/healthz", "/readyz", "/livez")
        assert ns.nats == "nats://ksched-nats.ksched.svc:4222"
        password = next(e for e in container["env"] if e["name"] == "KSCHED_NATS_PASSWORD")
        assert password["valueFrom"]["secretKeyRef"] == {"name": "ksched-nats-users", "key": service}
        assert dep["spec"]["template"]["spec"]["serviceAccountName"] == f"ksched-{service}"
        if name == "overlays/kubesim-demo":
            assert ns.kubeconfig == "/etc/kubesim/kubeconfig"
        else:
            assert ns.kubeconfig is None, "in-cluster configuration outside the demo"


def test_the_ui_component_reads_only_the_bus_behind_the_token() -> None:
    demo = render("overlays/kubesim-demo")
    assert not [r for r in render("overlays/production") if r["metadata"]["name"] == "ksched-ui"]  # optional
    dep = find(demo, "Deployment", "ksched-ui")
    pod = dep["spec"]["template"]
    (container,) = pod["spec"]["containers"]
    env = env_of(container)
    assert container["ports"] == [{"name": "http", "containerPort": UI_PORT}]
    assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "http"}
    ns = parse_with_cli(container["args"], {**env, "KSCHED_NATS_PASSWORD": "p", "KSCHED_HTTP_TOKEN": "t"})
    assert container["args"][0] == "ui" and ns.min_interval > 0  # the ui's own CLI
    assert (ns.http_port, ns.http_host, ns.nats_user, ns.http_token) == (UI_PORT, "0.0.0.0", "ui", "t")
    refs = {
        e["name"]: e["valueFrom"]["secretKeyRef"]
        for e in container["env"]
        if "secretKeyRef" in e.get("valueFrom", {})
    }
    assert refs == {
        "KSCHED_NATS_PASSWORD": {"name": "ksched-nats-users", "key": "ui"},
        "KSCHED_HTTP_TOKEN": {"name": "ksched-ui-token", "key": "token"},
    }
    assert "ui" in secret_data(demo, "ksched-nats-users")
    assert pod["spec"]["automountServiceAccountToken"] is False  # no Kubernetes API access at all
    assert not [r for r in demo if r["kind"] in ("RoleBinding", "ClusterRoleBinding") and any(
        subject["name"] == "ksched-ui" for subject in r.get("subjects", [])
    )]  # fmt: skip
    assert find(demo, "Service", "ksched-ui")["spec"]["ports"] == [
        {"name": "http", "port": UI_PORT, "targetPort": "http"}
    ]


@pytest.mark.parametrize("name", KUSTOMIZATIONS)
def test_pods_are_locked_down(name: str) -> None:
    for res in render(name):
        if res["kind"] not in ("Deployment", "StatefulSet"):
            continue
        spec = res["spec"]["template"]["spec"]
        where = f"{name}: {res['kind']}/{res['metadata']['name']}"
        assert spec["securityContext"]["runAsNonRoot"] is True, where
        assert spec["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}, where
        for container in spec["containers"]:
            sc = container["securityContext"]
            assert sc["readOnlyRootFilesystem"] is True, where
            assert sc["allowPrivilegeEscalation"] is False, where
            assert sc["capabilities"] == {"drop": ["ALL"]}, where
            assert {"cpu", "memory"} <= set(container["resources"]["requests"]), where
            assert "memory" in container["resources"]["limits"], where
            assert not container["image"].endswith(":latest") and ":" in container["image"], where


def test_scaling_layout() -> None:
    base = render("base")
    replicas = {svc: dep["spec"]["replicas"] for svc, dep in deployments(base)}
    assert replicas["informer"] == replicas["queue"] == 2
    assert replicas["scheduler"] >= 2
    hpa = find(base, "HorizontalPodAutoscaler", "ksched-binder")
    assert hpa["spec"]["scaleTargetRef"] == {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "name": "ksched-binder",
    }
    config = load_config_from(base)
    # two instances of a singleton service are safe only under leader election
    assert config.leader_election.leader_elect is True
    assert config.leader_election.resource_namespace == "ksched"
    production = render("overlays/production")
    assert dict(deployments(production))["scheduler"]["spec"]["replicas"] == 5
    images = {c["image"] for r in production if r["kind"] == "Deployment" for c in _pod_containers(r)}
    assert images == {"registry.example.com/ksched:0.5.0"}


def _pod_containers(res: Resource) -> list[dict[str, Any]]:
    return list(res["spec"]["template"]["spec"]["containers"])


def load_config_from(resources: list[Resource]) -> Any:
    data = find(resources, "ConfigMap", "ksched-config")["data"]
    path = ROOT / ".pytest-ksched-config.yaml"
    try:
        path.write_text(data["config.yaml"])
        return load_config(path)
    finally:
        path.unlink(missing_ok=True)


@pytest.mark.parametrize("name", KUSTOMIZATIONS)
def test_selectors_reach_their_pods(name: str) -> None:
    resources = render(name)
    pods = [
        (r["metadata"]["name"], r["spec"]["template"]["metadata"]["labels"])
        for r in resources
        if r["kind"] in ("Deployment", "StatefulSet")
    ]

    def selected(selector: dict[str, str]) -> list[str]:
        return [n for n, labels in pods if selector.items() <= labels.items()]

    for res in resources:
        where = f"{res['kind']}/{res['metadata']['name']}"
        if res["kind"] == "PodDisruptionBudget":
            assert len(selected(res["spec"]["selector"]["matchLabels"])) == 1, where
        elif res["kind"] == "Service":
            assert len(selected(res["spec"]["selector"])) == 1, where
        elif res["kind"] in ("Deployment", "StatefulSet"):
            assert (
                res["spec"]["selector"]["matchLabels"].items()
                <= res["spec"]["template"]["metadata"]["labels"].items()
            ), where
    if name == "overlays/production":
        monitor = find(resources, "ServiceMonitor", "ksched")
        wanted = monitor["spec"]["selector"]["matchLabels"]
        scraped = [
            r
            for r in resources
            if r["kind"] == "Service" and wanted.items() <= r["metadata"]["labels"].items()
        ]
        assert sorted(s["metadata"]["name"] for s in scraped) == sorted(
            f"ksched-{s}-metrics" for s in HTTP_PORTS
        )
        (endpoint,) = monitor["spec"]["endpoints"]
        assert all(
            s["spec"]["ports"][0] == {"name": "https", "port": 10259, "targetPort": "https"} for s in scraped
        )
        # as kube-prometheus scrapes kube-scheduler: HTTPS, Prometheus' own service account token
        assert endpoint["port"] == "https" and endpoint["scheme"] == "https"
        assert endpoint["bearerTokenFile"] == "/var/run/secrets/kubernetes.io/serviceaccount/token"
        assert endpoint["tlsConfig"] == {"insecureSkipVerify": True}
        # Prometheus may GET /metrics and nothing more
        reader = find(resources, "ClusterRole", "ksched-metrics-reader")
        assert reader["rules"] == [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]
        binding = find(resources, "ClusterRoleBinding", "ksched-metrics-reader")
        assert binding["roleRef"]["name"] == "ksched-metrics-reader"
        assert binding["subjects"] == [
            {"kind": "ServiceAccount", "name": "prometheus-k8s", "namespace": "monitoring"}
        ]
    assert not any(r["kind"] == "Secret" and r["metadata"]["name"] == "ksched-http-token" for r in resources)


# --- RBAC ------------------------------------------------------------------------------------------
READ = ("get", "list", "watch")
#: upstream 1.36 system:kube-scheduler plus system:volume-scheduler (the rights kube-scheduler runs with)
UPSTREAM: set[Grant] = {
    *((g, "events", v) for g in ("", "events.k8s.io") for v in ("create", "patch", "update")),
    ("coordination.k8s.io", "leases", "create"),
    ("coordination.k8s.io", "leases", "get"),
    ("coordination.k8s.io", "leases", "update"),
    *(("", "nodes", v) for v in READ),
    *(("", "pods", v) for v in (*READ, "delete")),
    ("", "pods/binding", "create"),
    ("", "bindings", "create"),
    ("", "pods/status", "patch"),
    ("", "pods/status", "update"),
    ("authentication.k8s.io", "tokenreviews", "create"),
    ("authorization.k8s.io", "subjectaccessreviews", "create"),
    *(("", r, v) for r in ("services", "replicationcontrollers", "namespaces") for v in READ),
    *(("apps", r, v) for r in ("replicasets", "statefulsets") for v in READ),
    *(("policy", "poddisruptionbudgets", v) for v in READ),
    *(
        ("", r, v)
        for r in ("persistentvolumeclaims", "persistentvolumes")
        for v in (*READ, "update", "patch")
    ),
    *(
        ("storage.k8s.io", r, v)
        for r in ("csinodes", "csidrivers", "csistoragecapacities", "storageclasses")
        for v in READ
    ),
    *(("resource.k8s.io", r, v) for r in ("deviceclasses", "resourceslices") for v in READ),
    *(
        ("resource.k8s.io", r, v)
        for r in ("resourceclaims", "resourceclaims/status")
        for v in (*READ, "update", "patch")
    ),
    *(("resource.k8s.io", "resourceclaims/binding", v) for v in ("update", "patch")),
    # DRAExtendedResource
    *(("resource.k8s.io", "resourceclaims", v) for v in ("create", "delete")),
}
#: what ksched grants beyond upstream, and why
EXTRA: dict[Grant, str] = {
    ("coordination.k8s.io", "leases", "list"): "the elector watches its Lease (namespaced Role)",
    ("coordination.k8s.io", "leases", "watch"): "the elector watches its Lease (namespaced Role)",
}
EXPECTED: dict[str, set[Grant]] = {
    "informer": {
        *(
            ("", r, v)
            for r in (
                "pods",
                "nodes",
                "namespaces",
                "services",
                "replicationcontrollers",
                "persistentvolumes",
                "persistentvolumeclaims",
            )
            for v in ("list", "watch")
        ),
        *(("apps", r, v) for r in ("replicasets", "statefulsets") for v in ("list", "watch")),
        *(("policy", "poddisruptionbudgets", v) for v in ("list", "watch")),
        *(
            ("storage.k8s.io", r, v)
            for r in ("storageclasses", "csinodes", "csidrivers", "csistoragecapacities")
            for v in ("list", "watch")
        ),
        *(
            ("resource.k8s.io", r, v)
            for r in ("deviceclasses", "resourceslices", "resourceclaims")
            for v in ("list", "watch")
        ),
        *(("coordination.k8s.io", "leases", v) for v in ("get", "list", "watch", "create", "update")),
    },
    "queue": {("coordination.k8s.io", "leases", v) for v in ("get", "list", "watch", "create", "update")},
    "scheduler": {
        ("", "pods/status", "patch"),
        ("", "pods", "delete"),
        ("events.k8s.io", "events", "create"),
        ("events.k8s.io", "events", "patch"),
        *(
            ("resource.k8s.io", r, v)
            for r in ("resourceclaims/status", "resourceclaims/binding")
            for v in ("update", "patch")
        ),
        *(("resource.k8s.io", "resourceclaims", v) for v in ("get", "patch", "delete")),
    },
    "binder": {
        ("", "pods/binding", "create"),
        ("", "pods/status", "patch"),
        ("", "pods", "get"),
        ("", "nodes", "get"),
        *(("", r, v) for r in ("persistentvolumes", "persistentvolumeclaims") for v in ("get", "patch")),
        ("storage.k8s.io", "csinodes", "get"),
        ("events.k8s.io", "events", "create"),
        ("events.k8s.io", "events", "patch"),
        *(
            ("resource.k8s.io", "resourceclaims", v)
            for v in ("get", "list", "create", "update", "patch", "delete")
        ),
        *(
            ("resource.k8s.io", r, v)
            for r in ("resourceclaims/status", "resourceclaims/binding")
            for v in ("update", "patch")
        ),
    },
}


DELEGATION: set[Grant] = {
    ("authentication.k8s.io", "tokenreviews", "create"),
    ("authorization.k8s.io", "subjectaccessreviews", "create"),
}
"""What every service's secure port asks the API server (who is the caller, may it read the path)."""


def test_each_service_account_has_exactly_what_its_service_uses() -> None:
    resources = render("base")
    accounts = {r["metadata"]["name"] for r in resources if r["kind"] == "ServiceAccount"}
    assert accounts == {f"ksched-{s}" for s in HTTP_PORTS}
    for service, expected in EXPECTED.items():
        assert grants_of(resources, f"ksched-{service}") == expected | DELEGATION, service
    for kind in ("ClusterRole", "Role"):
        for role in (r for r in resources if r["kind"] == kind):
            for rule in role["rules"]:
                assert "*" not in rule["verbs"] + rule["resources"] + rule["apiGroups"], role["metadata"][
                    "name"
                ]
    leases_role = find(resources, "Role", "ksched-leader-election")
    assert leases_role["metadata"]["namespace"] == "ksched"


def test_nothing_beyond_upstream_kube_scheduler_except_the_listed_extras() -> None:
    resources = render("base")
    granted = set().union(*(grants_of(resources, f"ksched-{s}") for s in HTTP_PORTS))
    assert granted - UPSTREAM == set(EXTRA)


# --- gang scheduling (components/gang-scheduling) ----------------------------------------------------
GATES = "GenericWorkload=true,GangScheduling=true"
#: what the component adds, per service: the alpha API calls each makes (tests/e2e/test_gangs.py
#: checks the calls of a running stack against it)
GANG_GRANTS: dict[str, set[Grant]] = {
    "informer": {  # PodGroupScheduled=True of a committed group (docs/gang.md)
        *(("scheduling.k8s.io", "podgroups", v) for v in ("list", "watch")),
        *(("scheduling.x-k8s.io", "podgroups", v) for v in ("list", "watch")),
        ("scheduling.k8s.io", "podgroups", "get"),
        ("scheduling.k8s.io", "podgroups/status", "update"),
    },
    "queue": set(),
    "scheduler": {  # PodGroupScheduled=False of a group that is not schedulable
        ("scheduling.k8s.io", "podgroups", "get"),
        ("scheduling.k8s.io", "podgroups/status", "update"),
    },
    "binder": set(),
}
#: upstream 1.36's system:kube-scheduler with GenericWorkload: read PodGroups, patch/update their status
UPSTREAM_GANGS: set[Grant] = {
    *(("scheduling.k8s.io", "podgroups", v) for v in READ),
    *(("scheduling.k8s.io", "podgroups/status", v) for v in ("patch", "update")),
}


def render_with_gangs(tmp_path: Path) -> list[Resource]:
    """deploy/base with the gang-scheduling component, as an overlay of one's own would add it."""
    text = {"resources": [str(DEPLOY / "base")], "components": [str(DEPLOY / "components/gang-scheduling")]}
    (tmp_path / "kustomization.yaml").write_text(yaml.safe_dump(text))
    return build(tmp_path)


def test_the_gang_component_grants_what_the_alpha_api_calls_need(tmp_path: Path) -> None:
    base, resources = render("base"), render_with_gangs(tmp_path)
    for service, added in GANG_GRANTS.items():
        account = f"ksched-{service}"
        assert grants_of(resources, account) - grants_of(base, account) == added, service
        assert grants_of(base, account) <= grants_of(resources, account)
    granted = set().union(*GANG_GRANTS.values())
    assert granted - UPSTREAM_GANGS == {
        *(("scheduling.x-k8s.io", "podgroups", v) for v in ("list", "watch")),  # the Coscheduling adapter
    }
    for res in resources:
        kubernetes_validate.validate(res, KUBERNETES_VERSION, strict=True)


def test_the_gang_component_sets_the_same_gates_on_every_service(tmp_path: Path) -> None:
    found = dict(deployments(render_with_gangs(tmp_path)))
    assert set(found) == set(HTTP_PORTS)
    for service, dep in found.items():
        (container,) = dep["spec"]["template"]["spec"]["containers"]
        env = env_of(container)
        assert env["KSCHED_FEATURE_GATES"] == GATES, service
        ns = parse_with_cli(container["args"], {**env, "KSCHED_NATS_PASSWORD": "x"})
        gates: FeatureGates = ns.feature_gates
        assert gates.enabled(GENERIC_WORKLOAD) and gates.enabled(GANG_SCHEDULING), service


# --- NATS ------------------------------------------------------------------------------------------
def test_nats_cluster_config_is_accepted_by_nats_server(tmp_path: Path) -> None:
    """nats-server -t parses the rendered configuration with the StatefulSet's environment."""
    resources = render("overlays/kubesim-demo")
    stateful = find(resources, "StatefulSet", "ksched-nats")
    assert stateful["spec"]["replicas"] == 3
    files = find(resources, "ConfigMap", "ksched-nats-config")["data"]
    assert files["auth.conf"] == authorization_block(Subjects())
    for name, text in files.items():
        (tmp_path / name).write_text(text.replace("/data/jetstream", str(tmp_path / "js")))
    secret = secret_data(resources, "ksched-nats-users")
    env: dict[str, str] = {"POD_NAME": "ksched-nats-0"}
    (container,) = stateful["spec"]["template"]["spec"]["containers"]
    for item in container["env"]:
        if "value" in item:
            env[item["name"]] = re.sub(r"\$\((\w+)\)", lambda m: env[m.group(1)], item["value"])
        elif "secretKeyRef" in item.get("valueFrom", {}):
            ref = item["valueFrom"]["secretKeyRef"]
            assert ref["name"] == "ksched-nats-users"
            env[item["name"]] = secret[ref["key"]]
    assert {password_variable(u) for u in (*NATS_SERVICES, "observer")} <= set(env)
    routes = [env[f"KSCHED_NATS_ROUTE_{i}"] for i in range(3)]
    assert routes == [
        f"nats://route:{secret['route']}@ksched-nats-{i}.ksched-nats-headless.ksched.svc:6222"
        for i in range(3)
    ]
    check = subprocess.run(
        [nats_server_binary(), "-t", "-c", str(tmp_path / "nats.conf")],
        env={**{k: v for k, v in os.environ.items() if not k.startswith("KSCHED_")}, **env},
        capture_output=True,
        text=True,
        check=False,
    )
    assert check.returncode == 0, check.stdout + check.stderr
    assert container["args"] == ["--config", "/etc/nats/nats.conf"]


@pytest.mark.parametrize("name", KUSTOMIZATIONS)
def test_streams_are_replicated_on_every_nats_server(name: str) -> None:
    """Every service creates streams and KV buckets with as many replicas as there are NATS servers
    (a service left at the default 1 would scale them back down when it starts)."""
    resources = render(name)
    servers = find(resources, "StatefulSet", "ksched-nats")["spec"]["replicas"]
    assert servers == 3
    for service, dep in deployments(resources):
        (container,) = dep["spec"]["template"]["spec"]["containers"]
        ns = parse_with_cli(container["args"], {**env_of(container), "KSCHED_NATS_PASSWORD": "x"})
        assert ns.jetstream_replicas == servers, service


def test_keda_scales_what_exists_on_what_the_services_expose() -> None:
    """The ScaledObjects point at the Deployments, the placement stream and consumer the binders
    use, the NATS monitoring port of the headless Service, and the queue's pending-pods series; the
    binder's takes over the base's HorizontalPodAutoscaler rather than adding a second one."""
    resources = render("overlays/keda")
    subjects = Subjects()  # the base runs with the default prefix (its auth.conf is generated for it)
    binder = find(resources, "ScaledObject", "ksched-binder")
    find(resources, "Deployment", binder["spec"]["scaleTargetRef"]["name"])
    assert binder["metadata"]["annotations"]["scaledobject.keda.sh/transfer-hpa-ownership"] == "true"
    hpa = binder["spec"]["advanced"]["horizontalPodAutoscalerConfig"]["name"]
    assert (
        find(resources, "HorizontalPodAutoscaler", hpa)["spec"]["scaleTargetRef"]
        == binder["spec"]["scaleTargetRef"]
    )
    (nats,) = [t["metadata"] for t in binder["spec"]["triggers"] if t["type"] == "nats-jetstream"]
    assert (nats["stream"], nats["consumer"]) == (subjects.placement_stream, subjects.placement_consumer)
    host, port = nats["natsServerMonitoringEndpoint"].split(":")
    service, namespace = host.split(".")[:2]
    headless = find(resources, "Service", service)
    assert headless["spec"]["clusterIP"] == "None" and namespace == headless["metadata"]["namespace"]
    assert {p["name"]: p["port"] for p in headless["spec"]["ports"]}["monitor"] == int(port)
    nats_conf = find(resources, "ConfigMap", "ksched-nats-config")["data"]["nats.conf"]
    assert f"http_port: {port}" in nats_conf and "server_name: $POD_NAME" in nats_conf
    assert int(nats["lagThreshold"]) > 0 and nats["activationLagThreshold"] == "0"

    scheduler = find(resources, "ScaledObject", "ksched-scheduler")
    find(resources, "Deployment", scheduler["spec"]["scaleTargetRef"]["name"])
    (prom,) = [t["metadata"] for t in scheduler["spec"]["triggers"] if t["type"] == "prometheus"]
    assert re.fullmatch(r'max\(scheduler_pending_pods\{namespace="ksched", queue="active"\}\)', prom["query"])
    assert PENDING_PODS._name == "scheduler_pending_pods" and "queue" in PENDING_PODS._labelnames
    for scaled in (binder, scheduler):
        spec = scaled["spec"]
        assert 1 <= spec["minReplicaCount"] < spec["maxReplicaCount"] and spec["cooldownPeriod"] >= 60


def test_demo_overlay_is_self_consistent() -> None:
    resources = render("overlays/kubesim-demo")
    kubesim = find(resources, "Deployment", "ksched-kubesim")
    (container,) = kubesim["spec"]["template"]["spec"]["containers"]
    secret = secret_data(resources, "ksched-kubesim")
    args = [a.replace("$(KUBESIM_TOKEN)", secret["token"]) for a in container["args"]]
    scenario_dir = Path(container["volumeMounts"][0]["mountPath"])
    ns = parse_with_cli(args, {})
    assert ns.listen == ("0.0.0.0", 6443) and ns.token == secret["token"]
    assert [Path(s).parent for s in ns.scenario] == [scenario_dir]
    kubeconfig = yaml.safe_load(secret["kubeconfig"])
    assert kubeconfig["clusters"][0]["cluster"]["server"] == "http://ksched-kubesim.ksched.svc:6443"
    assert kubeconfig["users"][0]["user"]["token"] == secret["token"]
    assert find(resources, "Service", "ksched-kubesim")["spec"]["ports"][0]["port"] == 6443
    users = secret_data(resources, "ksched-nats-users")
    assert set(users) == {*NATS_SERVICES, "observer", "route"}


# --- the renderer itself ------------------------------------------------------------------------
def test_renderer_refuses_what_it_does_not_implement(tmp_path: Path) -> None:
    (tmp_path / "kustomization.yaml").write_text("resources: []\nnamePrefix: x-\n")
    with pytest.raises(KustomizeError, match="namePrefix"):
        build(tmp_path)
    doc: dict[str, Any] = {"a": [1, 2]}
    json_patch(doc, {"op": "add", "path": "/a/-", "value": 3})
    json_patch(doc, {"op": "replace", "path": "/a/0", "value": 0})
    json_patch(doc, {"op": "add", "path": "/b~1c", "value": {}})
    assert doc == {"a": [0, 2, 3], "b/c": {}}
    with pytest.raises(KustomizeError, match="no such member"):
        json_patch(doc, {"op": "replace", "path": "/missing", "value": 1})
