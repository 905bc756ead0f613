"""Leader-election options: flag beats environment beats the configuration beats the default."""

from __future__ import annotations

import argparse
from collections.abc import Mapping

import pytest

from ksched.client.leader import ElectionConfig
from ksched.config import default_config, parse_config
from ksched.service.election import add_leader_election_arguments, election_config

DEPLOY_CONFIG = """
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection:
  leaderElect: true
  resourceNamespace: ksched
  resourceName: ksched
  leaseDuration: 20s
profiles:
  - schedulerName: ksched
"""

OFF_CONFIG = """
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection:
  leaderElect: false
"""


def elect(
    argv: list[str],
    env: Mapping[str, str] | None = None,
    *,
    kubeconfig: str | None = "/k",
    config_text: str | None = None,
    service: str = "informer",
) -> ElectionConfig | None:
    parser = argparse.ArgumentParser()
    add_leader_election_arguments(parser, env=env or {})
    ns = parser.parse_args(argv)
    config = parse_config(config_text) if config_text else default_config()
    return election_config(
        ns, service=service, identity="me", kubeconfig=kubeconfig, config=config, env=env or {}
    )


def test_defaults_follow_kube_scheduler() -> None:
    cfg = elect([])
    assert cfg is not None
    assert (cfg.name, cfg.namespace) == ("ksched-informer", "kube-system")
    assert (cfg.lease_duration, cfg.renew_deadline, cfg.retry_period) == (15, 10, 2)
    assert cfg.identity.startswith("me_") and len(cfg.identity) == len("me_") + 8
    assert elect([]).identity != cfg.identity  # type: ignore[union-attr]


def test_without_an_api_it_is_off_unless_asked_for() -> None:
    assert elect([], kubeconfig=None) is None
    assert elect(
        [], {"KUBERNETES_SERVICE_HOST": "10.0.0.1", "KUBERNETES_SERVICE_PORT": "443"}, kubeconfig=None
    )
    with pytest.raises(ValueError, match="--leader-elect needs the Kubernetes API"):
        elect(["--leader-elect"], kubeconfig=None)


def test_flag_beats_environment_beats_configuration() -> None:
    assert elect(["--no-leader-elect"]) is None
    assert elect([], {"KSCHED_LEADER_ELECT": "false"}) is None
    assert elect(["--leader-elect"], {"KSCHED_LEADER_ELECT": "false"}) is not None
    assert elect([], config_text=OFF_CONFIG) is None
    assert elect([], {"KSCHED_LEADER_ELECT": "true"}, config_text=OFF_CONFIG) is not None
    with pytest.raises(ValueError, match="KSCHED_LEADER_ELECT must be true or false, got 'maybe'"):
        elect([], {"KSCHED_LEADER_ELECT": "maybe"})


def test_configuration_names_one_lease_per_service() -> None:
    informer = elect([], config_text=DEPLOY_CONFIG)
    queue = elect([], config_text=DEPLOY_CONFIG, service="queue")
    assert informer is not None and queue is not None
    assert (informer.name, informer.namespace, informer.lease_duration) == ("ksched-informer", "ksched", 20)
    assert (queue.name, queue.namespace) == ("ksched-queue", "ksched")


def test_names_and_durations_from_flags_and_environment() -> None:
    cfg = elect(
        ["--lease-name", "mine", "--leader-elect-renew-deadline", "5s", "--leader-elect-retry-period", "1s"],
        {"KSCHED_LEASE_NAMESPACE": "team", "KSCHED_LEADER_ELECT_LEASE_DURATION": "8s"},
    )
    assert cfg is not None
    assert (cfg.name, cfg.namespace) == ("mine", "team")
    assert (cfg.lease_duration, cfg.renew_deadline, cfg.retry_period) == (8, 5, 1)
    assert elect(["--leader-elect-resource-name", "alias"]).name == "alias"  # type: ignore[union-attr]


def test_bad_values_are_named() -> None:
    with pytest.raises(ValueError, match="--leader-elect-retry-period: "):
        elect(["--leader-elect-retry-period", "soon"])
    with pytest.raises(ValueError, match=r"leaseDuration \(10.0s\) must be greater than renewDeadline"):
        elect(["--leader-elect-lease-duration", "10s"])


@pytest.mark.parametrize(
    ("argv", "elected"),
    [
        (["--leader-elect=true"], True),
        (["--leader-elect"], True),
        (["--leader-elect=false"], False),
        (["--no-leader-elect"], False),
    ],
)
def test_kube_scheduler_spellings_of_leader_elect(argv: list[str], elected: bool) -> None:
    """kube-scheduler's ``--leader-elect=true|false`` (issue 25: argparse refused ``=true`` before)."""
    assert (elect(argv, config_text=OFF_CONFIG if elected else None) is not None) is elected


def test_only_the_leases_resource_lock() -> None:
    assert elect(["--leader-elect-resource-lock=leases"]) is not None
    with pytest.raises(ValueError, match=r'--leader-elect-resource-lock: Unsupported value: "endpoints"'):
        elect(["--leader-elect-resource-lock=endpoints"])
