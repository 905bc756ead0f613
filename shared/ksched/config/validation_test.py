"""Validation: bad configurations -> kube-scheduler's exact messages, all reported together.

Scenarios of upstream ``validation_test.go`` (``TestValidateKubeSchedulerConfiguration``) written as
the YAML a user would give, plus the registry check for unknown plugins.
"""

from __future__ import annotations

import textwrap

import pytest

from ksched.config import ConfigError, parse_config
from ksched.config.types import KubeSchedulerConfiguration, LeaderElectionConfiguration
from ksched.config.validation import validate_config
from ksched.plugins.registry import Registry

HEADER = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"


class _Sort:
    def __init__(self, name: str) -> None:
        self.name = name

    def less(self, a: object, b: object) -> bool:
        return False


def registry() -> Registry:
    """In-tree plugins plus the custom ones upstream's scenarios name."""
    return Registry(
        extra={
            "CustomSort": lambda args, handle: _Sort("CustomSort"),
            "AnotherSort": lambda args, handle: _Sort("AnotherSort"),
            "CustomBind": lambda args, handle: object(),
        }
    )


VALID = textwrap.dedent(
    """\
    parallelism: 8
    percentageOfNodesToScore: 35
    podInitialBackoffSeconds: 1
    podMaxBackoffSeconds: 1
    clientConnection: {acceptContentTypes: application/json, contentType: application/json, qps: 10,
      burst: 10}
    leaderElection:
      resourceLock: leases
      leaderElect: true
      leaseDuration: 30s
      renewDeadline: 15s
      retryPeriod: 5s
      resourceNamespace: name
      resourceName: name
    profiles:
    - schedulerName: me
      plugins:
        queueSort: {enabled: [{name: CustomSort}]}
        score: {disabled: [{name: "*"}]}
      pluginConfig:
      - name: DefaultPreemption
        args: {minCandidateNodesPercentage: 10, minCandidateNodesAbsolute: 100}
    - schedulerName: other
      plugins:
        queueSort: {enabled: [{name: CustomSort}]}
        bind: {enabled: [{name: CustomBind}]}
    extenders:
    - prioritizeVerb: prioritize
      weight: 1
    """
)


def errors_of(body: str) -> list[str]:
    with pytest.raises(ConfigError) as err:
        parse_config(HEADER + body, registry())
    return err.value.messages


def test_good() -> None:
    config = parse_config(HEADER + VALID, registry())
    assert [p.scheduler_name for p in config.profiles] == ["me", "other"]


def replace(old: str, new: str) -> str:
    assert old in VALID, old
    return VALID.replace(old, new)


QUEUE_SORT_DIFFERS = "must be the same for all profiles"

CASES: list[tuple[str, str, list[str]]] = [
    (
        "bad-parallelism-invalid-value",
        replace("parallelism: 8", "parallelism: 0"),
        ["parallelism: Invalid value: 0: should be an integer value greater than zero"],
    ),
    (
        "bad-percentage-of-nodes-to-score",
        replace("percentageOfNodesToScore: 35", "percentageOfNodesToScore: 101"),
        ["percentageOfNodesToScore: Invalid value: 101: not in valid range [0-100]"],
    ),
    (
        "bad-profile-percentage-of-nodes-to-score",
        replace("- schedulerName: other\n", "- schedulerName: other\n  percentageOfNodesToScore: -1\n"),
        ["profiles[1].percentageOfNodesToScore: Invalid value: -1: not in valid range [0-100]"],
    ),
    (
        "scheduler-name-not-set",
        replace("- schedulerName: other\n  plugins:", "- plugins:"),
        ["profiles[1].schedulerName: Required value"],
    ),
    (
        "repeated-scheduler-name",
        replace("- schedulerName: me", "- schedulerName: other"),
        ['profiles[1].schedulerName: Duplicate value: "other"'],
    ),
    (
        "different-queue-sort",
        replace(
            "bind: {enabled: [{name: CustomBind}]}",
            "bind: {enabled: [{name: CustomBind}]}\n    queueSort: {enabled: [{name: AnotherSort}]}",
        ).replace("    queueSort: {enabled: [{name: CustomSort}]}\n    bind", "    bind"),
        [
            "profiles[1].plugins.queueSort: Invalid value: "
            f'{{"Enabled":[{{"Name":"AnotherSort","Weight":0}}],"Disabled":null}}: {QUEUE_SORT_DIFFERS}'
        ],
    ),
    (
        "one-empty-queue-sort",
        replace(
            "  plugins:\n    queueSort: {enabled: [{name: CustomSort}]}\n    score: {disabled: [{name: "
            '"*"}]}\n',
            "",
        ),
        [
            "profiles[1].plugins.queueSort: Invalid value: "
            f'{{"Enabled":[{{"Name":"CustomSort","Weight":0}}],"Disabled":null}}: {QUEUE_SORT_DIFFERS}'
        ],
    ),
    (
        "two-queue-sort-plugins",
        replace(
            "queueSort: {enabled: [{name: CustomSort}]}\n    score",
            "queueSort: {enabled: [{name: CustomSort}, {name: AnotherSort}]}\n    score",
        ),
        [
            "profiles[0].plugins.queueSort.Enabled: Invalid value: 2: only one queue sort plugin can be "
            "enabled",
            "profiles[1].plugins.queueSort: Invalid value: "
            f'{{"Enabled":[{{"Name":"CustomSort","Weight":0}}],"Disabled":null}}: {QUEUE_SORT_DIFFERS}',
        ],
    ),
    (
        "extender-negative-weight",
        replace("weight: 1", "weight: -1"),
        ["extenders[0].weight: Invalid value: -1: must have a positive weight applied to it"],
    ),
    (
        "extender-duplicate-managed-resources",
        replace("weight: 1", "weight: 1\n  managedResources: [{name: foo}, {name: foo}]"),
        [
            'extenders[0].managedResources[0].name: Invalid value: "foo": is an invalid extended resource '
            "name",
            'extenders[0].managedResources[1].name: Invalid value: "foo": is an invalid extended resource '
            "name",
            'extenders[0].managedResources[1].name: Invalid value: "foo": duplicate extender managed '
            "resource name",
        ],
    ),
    (
        "extender-duplicate-bind",
        replace(
            "weight: 1",
            "weight: 1\n  bindVerb: foo\n- prioritizeVerb: prioritize\n  weight: 1\n  bindVerb: bar",
        ),
        [
            'extenders: Invalid value: "found 2 extenders implementing bind": only one extender can '
            "implement bind"
        ],
    ),
    (
        "invalid duplicate extender resource name",
        replace(
            "- prioritizeVerb: prioritize\n  weight: 1\n",
            "- urlPrefix: http://127.0.0.1:8081/extender\n  managedResources: [{name: foo.com/bar}]\n"
            "- urlPrefix: http://127.0.0.1:8082/extender\n  bindVerb: bind\n  managedResources: [{name: "
            "foo.com/bar}]\n",
        ),
        [
            'extenders[1].managedResources[0].name: Invalid value: "foo.com/bar": duplicate extender '
            "managed resource name"
        ],
    ),
    (
        "invalid extended resource name",
        replace(
            "weight: 1",
            "weight: 1\n  managedResources: [{name: kubernetes.io/foo}, {name: example.com/bad name}]",
        ),
        [
            'extenders[0].managedResources[0].name: Invalid value: "kubernetes.io/foo": is an invalid '
            "extended resource name",
            'extenders[0].managedResources[1].name: Invalid value: "example.com/bad name": name part must '
            "consist of "
            "alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character "
            "(e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
            "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
        ],
    ),
    (
        "invalid-node-percentage",
        replace("minCandidateNodesPercentage: 10", "minCandidateNodesPercentage: 200"),
        [
            "profiles[0].pluginConfig[0].args.minCandidateNodesPercentage: Invalid value: 200: not in valid "
            "range [0, 100]"
        ],
    ),
    (
        "invalid args of a plugin family (NodeResourcesFit)",
        replace(
            "  - name: DefaultPreemption",
            "  - name: NodeResourcesFit\n    args: {scoringStrategy: {type: Balanced}}\n  - name: "
            "DefaultPreemption",
        ),
        [
            'profiles[0].pluginConfig[0].args.scoringStrategy.type: Unsupported value: "Balanced": '
            "supported values: "
            '"LeastAllocated", "MostAllocated", "RequestedToCapacityRatio"'
        ],
    ),
    (
        "duplicated-plugin-config",
        replace(
            "  - name: DefaultPreemption", "  - name: config\n  - name: config\n  - name: DefaultPreemption"
        ),
        ['profiles[0].pluginConfig[1]: Duplicate value: "config"'],
    ),
    (
        "mismatch-queue-sort",
        replace(
            "queueSort: {enabled: [{name: CustomSort}]}\n    score",
            "queueSort: {enabled: [{name: PrioritySort}]}\n    score",
        ),
        [
            "profiles[1].plugins.queueSort: Invalid value: "
            f'{{"Enabled":[{{"Name":"CustomSort","Weight":0}}],"Disabled":null}}: {QUEUE_SORT_DIFFERS}'
        ],
    ),
    (
        "bad-removed-plugins",
        replace(
            'score: {disabled: [{name: "*"}]}',
            'score: {disabled: [{name: "*"}], enabled: [{name: EBSLimits, weight: 2}]}',
        ),
        [
            'profiles[0].plugins.score.enabled[0]: Invalid value: "EBSLimits": was invalid in version '
            '"kubescheduler.config.k8s.io/v1" (KubeSchedulerConfiguration is version '
            '"kubescheduler.config.k8s.io/v1")'
        ],
    ),
    (
        "bad-plugins-config",
        replace("  - name: DefaultPreemption", "  - name: GCEPDLimits\n  - name: DefaultPreemption"),
        [
            'profiles[0].pluginConfig[0]: Invalid value: "GCEPDLimits": was invalid in version '
            '"kubescheduler.config.k8s.io/v1" (KubeSchedulerConfiguration is version '
            '"kubescheduler.config.k8s.io/v1")'
        ],
    ),
    (
        "bad-initial-backoff",
        replace("podInitialBackoffSeconds: 1", "podInitialBackoffSeconds: 0"),
        ["podInitialBackoffSeconds: Invalid value: 0: must be greater than 0"],
    ),
    (
        "max-backoff-below-initial",
        replace("podInitialBackoffSeconds: 1", "podInitialBackoffSeconds: 5"),
        ["podMaxBackoffSeconds: Invalid value: 1: must be greater than or equal to PodInitialBackoffSeconds"],
    ),
    (
        "lease-duration-below-renew-deadline",
        replace("leaseDuration: 30s", "leaseDuration: 5s"),
        [
            'leaderElection.leaseDuration: Invalid value: "15s": LeaseDuration must be greater than '
            "RenewDeadline"
        ],
    ),
    (
        "negative-retry-period",
        replace("retryPeriod: 5s", "retryPeriod: -1s"),
        ['leaderElection.retryPeriod: Invalid value: "-1s": must be greater than zero'],
    ),
    (
        "resource-lock-not-leases",
        replace("resourceLock: leases", "resourceLock: configmaps"),
        ['leaderElection.resourceLock: Invalid value: "configmaps": resourceLock value must be "leases"'],
    ),
    (
        "no-leader-election-checks-when-disabled",
        replace("leaderElect: true", "leaderElect: false")
        .replace("resourceLock: leases", "resourceLock: configmaps")
        .replace("retryPeriod: 5s", "retryPeriod: -1s"),
        [],
    ),
    (
        "negative-burst",
        replace("burst: 10", "burst: -1"),
        ["clientConnection.burst: Invalid value: -1: must be non-negative"],
    ),
    (
        "unknown-plugins",
        replace(
            'score: {disabled: [{name: "*"}]}',
            'score: {disabled: [{name: "*"}], enabled: [{name: Foo}, {name: Bar, weight: 2}]}\n'
            "    multiPoint: {enabled: [{name: Baz}, {name: Foo}]}\n    filter: {enabled: [{name: Bar}]}",
        ),
        [
            'creating profile for scheduler name me: FilterPlugin "Bar" does not exist',
            'creating profile for scheduler name me: ScorePlugin "Foo" does not exist',
            'creating profile for scheduler name me: PreFilterPlugin "Baz" does not exist',
        ],
    ),
]


@pytest.mark.parametrize(("name", "body", "want"), CASES, ids=[c[0] for c in CASES])
def test_validation(name: str, body: str, want: list[str]) -> None:
    if not want:
        parse_config(HEADER + body, registry())
        return
    assert errors_of(body) == want


def test_every_error_is_reported_together() -> None:
    body = textwrap.dedent(
        """\
        parallelism: -2
        percentageOfNodesToScore: 120
        podInitialBackoffSeconds: 20
        profiles:
        - schedulerName: x
          plugins:
            score:
              enabled: [{name: Foo}]
          pluginConfig:
          - name: DefaultPreemption
            args: {minCandidateNodesPercentage: 0, minCandidateNodesAbsolute: 0}
          - name: VolumeBinding
            args: {bindTimeoutSeconds: -1}
        - schedulerName: x
        extenders:
        - {urlPrefix: a, bindVerb: b}
        - {urlPrefix: b, bindVerb: b, prioritizeVerb: p}
        """
    )
    assert errors_of(body) == [
        "parallelism: Invalid value: -2: should be an integer value greater than zero",
        "profiles[0].pluginConfig[0].args.minCandidateNodesPercentage: Invalid value: 0: cannot be zero at "
        "the "
        "same time as minCandidateNodesAbsolute",
        "profiles[0].pluginConfig[0].args.minCandidateNodesAbsolute: Invalid value: 0: cannot be zero at the "
        "same time as minCandidateNodesPercentage",
        "profiles[0].pluginConfig[1].args.bindTimeoutSeconds: Invalid value: -1: invalid BindTimeoutSeconds, "
        "should not be a negative value",
        'profiles[1].schedulerName: Duplicate value: "x"',
        "percentageOfNodesToScore: Invalid value: 120: not in valid range [0-100]",
        "podMaxBackoffSeconds: Invalid value: 10: must be greater than or equal to PodInitialBackoffSeconds",
        "extenders[1].weight: Invalid value: 0: must have a positive weight applied to it",
        'extenders: Invalid value: "found 2 extenders implementing bind": only one extender can implement '
        "bind",
        'creating profile for scheduler name x: ScorePlugin "Foo" does not exist',
    ]


def test_unknown_multi_point_plugin_is_named_by_the_first_point_not_disabled() -> None:
    body = textwrap.dedent(
        """\
        profiles:
        - plugins:
            preFilter: {disabled: [{name: "*"}]}
            filter: {disabled: [{name: "*"}]}
            multiPoint: {enabled: [{name: Nope}]}
        """
    )
    assert errors_of(body) == [
        'creating profile for scheduler name default-scheduler: PostFilterPlugin "Nope" does not exist'
    ]


def test_plugin_weights_zero_and_unset_mean_one() -> None:
    """Upstream has no weight validation: 0 (or no weight) means the default weight 1."""
    config = parse_config(
        HEADER + "profiles:\n- plugins:\n    score:\n      enabled: [{name: ImageLocality, weight: 0}]\n"
    )
    assert config.profiles[0].plugins is not None
    assert config.profiles[0].plugins.score.enabled[0].weight == 0


def test_component_base_checks_on_objects() -> None:
    """Required leader-election fields (YAML defaulting fills them, so checked on an object)."""
    config = KubeSchedulerConfiguration(
        parallelism=16,
        percentage_of_nodes_to_score=0,
        pod_initial_backoff_seconds=1,
        pod_max_backoff_seconds=10,
        leader_election=LeaderElectionConfiguration(
            leader_elect=True, lease_duration="15s", renew_deadline="0s", retry_period="2s"
        ),
    )
    assert validate_config(config) == [
        'leaderElection.renewDeadline: Invalid value: "0s": must be greater than zero',
        'leaderElection.resourceLock: Invalid value: "": resourceLock is required',
        'leaderElection.resourceNamespace: Invalid value: "": resourceNamespace is required',
        'leaderElection.resourceName: Invalid value: "": resourceName is required',
        'leaderElection.resourceLock: Invalid value: "": resourceLock value must be "leases"',
        "profiles: Required value",
    ]
