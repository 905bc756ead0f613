"""Decoding: a full configuration as users write it, strict decoding errors, apiVersion/kind."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from ksched.config import ConfigError, decode_config, load_config, parse_config
from ksched.config.types import Extender, ExtenderManagedResource, ExtenderTLSConfig, Plugin
from ksched.plugins.args.types import (
    DefaultPreemptionArgs,
    NodeResourcesFitArgs,
    ResourceSpec,
    ScoringStrategy,
)
from ksched.plugins.registry import Registry

HEADER = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"

FULL = HEADER + textwrap.dedent(
    """\
    parallelism: 8
    percentageOfNodesToScore: 40
    podInitialBackoffSeconds: 2
    podMaxBackoffSeconds: 20
    delayCacheUntilActive: true
    enableProfiling: false
    clientConnection:
      kubeconfig: /etc/kubernetes/scheduler.conf
      acceptContentTypes: application/json
      contentType: application/json
      qps: 100
      burst: 200
    leaderElection:
      leaderElect: true
      leaseDuration: 30s
      renewDeadline: 20s
      retryPeriod: 4s
      resourceLock: leases
      resourceName: my-scheduler
      resourceNamespace: kube-system
    profiles:
    - schedulerName: bin-packer
      percentageOfNodesToScore: 100
      plugins:
        multiPoint:
          enabled:
          - name: ImageLocality
            weight: 5
        score:
          disabled:
          - name: NodeResourcesBalancedAllocation
          enabled:
          - name: NodeResourcesFit
            weight: 10
      pluginConfig:
      - name: NodeResourcesFit
        args:
          apiVersion: kubescheduler.config.k8s.io/v1
          kind: NodeResourcesFitArgs
          scoringStrategy:
            type: MostAllocated
            resources:
            - name: cpu
              weight: 2
            - name: memory
      - name: DefaultPreemption
        args:
          minCandidateNodesPercentage: 20
      - name: MyOutOfTreePlugin
        args:
          anything: [1, 2]
    extenders:
    - urlPrefix: https://extender.example.com/scheduler
      filterVerb: filter
      prioritizeVerb: prioritize
      preemptVerb: preempt
      bindVerb: bind
      weight: 3
      enableHTTPS: true
      tlsConfig:
        insecure: false
        serverName: extender.example.com
        caData: aGVsbG8=
      httpTimeout: 1m30s
      nodeCacheCapable: true
      ignorable: true
      managedResources:
      - name: example.com/gpu
        ignoredByScheduler: true
    """
)


def test_full_configuration_decodes_as_written() -> None:
    config = decode_config(FULL)
    assert config.parallelism == 8
    assert config.percentage_of_nodes_to_score == 40
    assert (config.pod_initial_backoff_seconds, config.pod_max_backoff_seconds) == (2, 20)
    assert config.delay_cache_until_active is True
    assert config.enable_profiling is False
    assert config.client_connection.kubeconfig == "/etc/kubernetes/scheduler.conf"
    assert (config.client_connection.qps, config.client_connection.burst) == (100.0, 200)
    assert config.leader_election.lease_duration == "30s"
    assert config.leader_election.resource_name == "my-scheduler"
    profile = config.profiles[0]
    assert profile.scheduler_name == "bin-packer"
    assert profile.percentage_of_nodes_to_score == 100
    assert profile.plugins is not None
    assert profile.plugins.multi_point.enabled == [Plugin(name="ImageLocality", weight=5)]
    assert profile.plugins.score.enabled == [Plugin(name="NodeResourcesFit", weight=10)]
    assert profile.plugins.score.disabled == [Plugin(name="NodeResourcesBalancedAllocation")]
    fit = profile.plugin_config[0].args
    assert isinstance(fit, NodeResourcesFitArgs)
    # args are defaulted as upstream's scheme does it (memory weight 0 -> 1)
    assert fit.scoring_strategy == ScoringStrategy(
        type="MostAllocated",
        resources=[ResourceSpec(name="cpu", weight=2), ResourceSpec(name="memory", weight=1)],
    )
    assert profile.plugin_config[1].args == DefaultPreemptionArgs(min_candidate_nodes_percentage=20)
    # a plugin without an args type gets the raw mapping, like upstream's runtime.Unknown
    assert profile.plugin_config[2].args == {"anything": [1, 2]}
    assert config.extenders == [
        Extender(
            url_prefix="https://extender.example.com/scheduler",
            filter_verb="filter",
            prioritize_verb="prioritize",
            preempt_verb="preempt",
            bind_verb="bind",
            weight=3,
            enable_https=True,
            tls_config=ExtenderTLSConfig(server_name="extender.example.com", ca_data=b"hello"),
            http_timeout="1m30s",
            node_cache_capable=True,
            ignorable=True,
            managed_resources=[ExtenderManagedResource(name="example.com/gpu", ignored_by_scheduler=True)],
        )
    ]


def test_extender_timeout_seconds() -> None:
    assert Extender(http_timeout="1m30s").http_timeout_seconds() == 90.0
    assert Extender().http_timeout_seconds() == 5.0  # upstream DefaultExtenderTimeout


def test_full_configuration_is_valid(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(FULL)
    config = load_config(path, registry=_registry_with("MyOutOfTreePlugin"))
    assert config.profiles[0].plugins is not None
    # re-configured in place: the default position, the new weight
    assert config.profiles[0].plugins.multi_point.enabled[17] == Plugin(name="ImageLocality", weight=5)


def _registry_with(*names: str) -> Registry:
    return Registry(extra={n: (lambda args, handle: object()) for n in names})


def test_json_is_yaml_too() -> None:
    config = parse_config(
        '{"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}'
    )
    assert config.profiles[0].scheduler_name == "default-scheduler"


def errors_of(text: str) -> list[str]:
    with pytest.raises(ConfigError) as err:
        decode_config(text)
    return err.value.messages


STRICT_CASES = [
    (
        "unknown top-level field",
        "parallelsm: 4\n",
        ['strict decoding error: unknown field "parallelsm"'],
    ),
    (
        "unknown fields everywhere are all reported, in document order",
        textwrap.dedent(
            """\
            profiles:
            - schedulerName: a
              plugin:
                score: {}
            - plugins:
                score:
                  enabled:
                  - name: X
                    wieght: 2
                  enable: []
            leaderElection:
              leaderElected: true
            extenders:
            - urlPrefix: http://x
              tlsConfig: {caFile: a, caFiles: b}
            """
        ),
        [
            'strict decoding error: unknown field "profiles[0].plugin"',
            'strict decoding error: unknown field "profiles[1].plugins.score.enabled[0].wieght"',
            'strict decoding error: unknown field "profiles[1].plugins.score.enable"',
            'strict decoding error: unknown field "leaderElection.leaderElected"',
            'strict decoding error: unknown field "extenders[0].tlsConfig.caFiles"',
        ],
    ),
    (
        "field names are case-sensitive",
        "Parallelism: 4\n",
        ['strict decoding error: unknown field "Parallelism"'],
    ),
    (
        "unknown field in plugin args",
        textwrap.dedent(
            """\
            profiles:
            - pluginConfig:
              - name: DefaultPreemption
                args: {minCandidateNodesPercentage: 5, minCandidateNodes: 3}
              - name: NodeResourcesFit
                args:
                  scoringStrategy: {type: MostAllocated, resource: []}
            """
        ),
        [
            "decoding .profiles[0].pluginConfig[0]: decoding args for plugin DefaultPreemption: "
            'strict decoding error: unknown field "minCandidateNodes"',
            "decoding .profiles[0].pluginConfig[1]: decoding args for plugin NodeResourcesFit: "
            'strict decoding error: unknown field "scoringStrategy.resource"',
        ],
    ),
    (
        "unknown field inside a core type in plugin args",
        textwrap.dedent(
            """\
            profiles:
            - pluginConfig:
              - name: NodeAffinity
                args:
                  addedAffinity:
                    requiredDuringSchedulingIgnoredDuringExecution:
                      nodeSelectorTerms:
                      - matchExpression: []
            """
        ),
        [
            "decoding .profiles[0].pluginConfig[0]: decoding args for plugin NodeAffinity: strict decoding "
            "error: "
            "unknown field "
            '"addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpression"'
        ],
    ),
    (
        "args of another plugin's type",
        textwrap.dedent(
            """\
            profiles:
            - pluginConfig:
              - name: DefaultPreemption
                args: {kind: InterPodAffinityArgs, hardPodAffinityWeight: 2}
            """
        ),
        [
            "decoding .profiles[0].pluginConfig[0]: args for plugin DefaultPreemption were not of type "
            "DefaultPreemptionArgs.kubescheduler.config.k8s.io, got "
            "InterPodAffinityArgs.kubescheduler.config.k8s.io"
        ],
    ),
    (
        "wrong type",
        "percentageOfNodesToScore: fifty\n",
        ["decoding KubeSchedulerConfiguration: percentageOfNodesToScore: Expected `int | null`, got `str`"],
    ),
    (
        "wrong type in args",
        "profiles:\n- pluginConfig:\n  - name: InterPodAffinity\n    args: {hardPodAffinityWeight: heavy}\n",
        [
            "decoding .profiles[0].pluginConfig[0]: decoding args for plugin InterPodAffinity: "
            "hardPodAffinityWeight: Expected `int`, got `str`"
        ],
    ),
    (
        "durations are Go durations",
        "leaderElection: {leaseDuration: 15, retryPeriod: 2d}\n",
        ["decoding KubeSchedulerConfiguration: leaderElection.leaseDuration: Expected `str`, got `int`"],
    ),
    (
        "bad duration string",
        "leaderElection: {retryPeriod: 2d}\nextenders: [{urlPrefix: x, httpTimeout: soon}]\n",
        [
            'decoding KubeSchedulerConfiguration: leaderElection.retryPeriod: time: unknown unit "d" in '
            'duration "2d"',
            'decoding KubeSchedulerConfiguration: extenders[0].httpTimeout: time: invalid duration "soon"',
        ],
    ),
    (
        "duplicate key",
        "parallelism: 4\nparallelism: 8\n",
        [
            'error converting YAML to JSON: yaml: unmarshal errors: line 4: key "parallelism" already set '
            "in map"
        ],
    ),
]


@pytest.mark.parametrize(("name", "body", "want"), STRICT_CASES, ids=[c[0] for c in STRICT_CASES])
def test_strict_decoding(name: str, body: str, want: list[str]) -> None:
    assert errors_of(HEADER + body) == want


@pytest.mark.parametrize(
    ("name", "text", "want"),
    [
        (
            "older apiVersion",
            "apiVersion: kubescheduler.config.k8s.io/v1beta3\nkind: KubeSchedulerConfiguration\n",
            'no kind "KubeSchedulerConfiguration" is registered for version '
            '"kubescheduler.config.k8s.io/v1beta3": '
            "ksched reads kind KubeSchedulerConfiguration of apiVersion kubescheduler.config.k8s.io/v1 only",
        ),
        (
            "other kind",
            "apiVersion: kubescheduler.config.k8s.io/v1\nkind: DefaultPreemptionArgs\n",
            'no kind "DefaultPreemptionArgs" is registered for version "kubescheduler.config.k8s.io/v1": '
            "ksched reads kind KubeSchedulerConfiguration of apiVersion kubescheduler.config.k8s.io/v1 only",
        ),
        (
            "no kind",
            "apiVersion: kubescheduler.config.k8s.io/v1\nprofiles: []\n",
            "Object 'Kind' is missing in the configuration (expected apiVersion: "
            "kubescheduler.config.k8s.io/v1, "
            "kind: KubeSchedulerConfiguration)",
        ),
        (
            "no apiVersion",
            "kind: KubeSchedulerConfiguration\n",
            "Object 'apiVersion' is missing in the configuration (expected apiVersion: "
            "kubescheduler.config.k8s.io/v1, kind: KubeSchedulerConfiguration)",
        ),
        (
            "empty file",
            "",
            "Object 'Kind' is missing: the configuration is an empty document, not an object (expected "
            "apiVersion: "
            "kubescheduler.config.k8s.io/v1, kind: KubeSchedulerConfiguration)",
        ),
        (
            "not YAML",
            "apiVersion: [\n",
            "error converting YAML to JSON: yaml: line 2: expected the node content, but found '<stream "
            "end>'",
        ),
        (
            "two documents",
            HEADER + "---\n" + HEADER,
            "expected one KubeSchedulerConfiguration document, found 2",
        ),
    ],
)
def test_api_version_and_kind(name: str, text: str, want: str) -> None:
    assert errors_of(text) == [want]


def test_null_fields_are_left_at_their_zero_value() -> None:
    config = parse_config(HEADER + "profiles:\nextenders: ~\nparallelism: null\n")
    assert config.parallelism == 16
    assert [p.scheduler_name for p in config.profiles] == ["default-scheduler"]


def test_unreadable_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as err:
        load_config(tmp_path / "missing.yaml")
    assert err.value.messages == [
        f"failed to read config file {tmp_path / 'missing.yaml'}: No such file or directory"
    ]
