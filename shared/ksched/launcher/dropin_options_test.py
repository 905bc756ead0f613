"""kube-scheduler's flags against its configuration file, as upstream's options.ApplyTo resolves them."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from ksched.config import load_config
from ksched.launcher.dropin import election_config, main, service_args
from ksched.launcher.dropin_options import parse

KUBEADM = [
    "--authentication-kubeconfig=/etc/kubernetes/scheduler.conf",
    "--authorization-kubeconfig=/etc/kubernetes/scheduler.conf",
    "--bind-address=127.0.0.1",
    "--kubeconfig=/etc/kubernetes/scheduler.conf",
    "--leader-elect=true",
]

CONFIG = """\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection: {kubeconfig: /from/file, qps: 7, burst: 9}
leaderElection: {leaderElect: false, resourceName: from-file, leaseDuration: 20s}
"""


def test_kubeadm_command_line() -> None:
    o = parse(KUBEADM)
    assert o.kubeconfig == "/etc/kubernetes/scheduler.conf"
    assert o.secure is not None
    assert (o.secure.bind_address, o.secure.port) == ("127.0.0.1", 10259)
    assert o.secure.authentication_kubeconfig == o.secure.authorization_kubeconfig == o.kubeconfig
    election = election_config(o)
    assert election is not None
    assert (election.namespace, election.name) == ("kube-system", "kube-scheduler")
    assert (election.lease_duration, election.renew_deadline, election.retry_period) == (15.0, 10.0, 2.0)


def test_deprecated_flags_apply_without_config() -> None:
    o = parse(["--kubeconfig=k", "--kube-api-qps=12.5", "--kube-api-burst=30", "--profiling=false"])
    client = o.config.client_connection
    assert (client.kubeconfig, client.qps, client.burst) == ("k", 12.5, 30)
    assert o.config.enable_profiling is False


def test_with_config_the_file_holds_and_leader_election_flags_override(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(CONFIG)
    o = parse([f"--config={path}", "--kubeconfig=flag", "--kube-api-qps=1", "--leader-elect", "-v=4"])
    client = o.config.client_connection
    assert (o.kubeconfig, client.qps, client.burst) == ("/from/file", 7.0, 9)  # deprecated flags ignored
    election = election_config(o)
    assert election is not None  # --leader-elect beats leaderElect: false
    assert (election.name, election.lease_duration) == ("from-file", 20.0)
    assert o.log_level == "DEBUG"


def test_leader_elect_false_runs_without_election() -> None:
    assert election_config(parse(["--leader-elect=false"])) is None


def test_flags_override_lease_settings() -> None:
    o = parse(
        [
            "--leader-elect-resource-name=other",
            "--leader-elect-resource-namespace=ns",
            "--leader-elect-lease-duration=30s",
            "--leader-elect-renew-deadline=20s",
            "--leader-elect-retry-period=5s",
        ]
    )
    e = election_config(o)
    assert e is not None
    assert (e.namespace, e.name, e.lease_duration, e.renew_deadline, e.retry_period) == (
        "ns",
        "other",
        30.0,
        20.0,
        5.0,
    )


def test_unsupported_resource_lock_names_the_field() -> None:
    with pytest.raises(ValueError, match=r'leaderElection\.resourceLock: Unsupported value: "endpoints"'):
        parse(["--leader-elect-resource-lock=endpoints"])


def test_unknown_flag_exits_1(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main([*KUBEADM, "--foo=1"])
    assert exc.value.code == 1
    assert "Error: unknown flag: --foo" in capsys.readouterr().err


def test_write_config_to_writes_the_effective_configuration_and_exits(tmp_path: Path) -> None:
    out = tmp_path / "effective.yaml"
    assert main(["--kube-api-qps=33", f"--write-config-to={out}", "--leader-elect=false"]) == 0
    doc = yaml.safe_load(out.read_text())
    assert doc["kind"] == "KubeSchedulerConfiguration"
    assert doc["clientConnection"]["qps"] == 33.0
    assert doc["leaderElection"]["leaderElect"] is False
    assert doc["profiles"][0]["schedulerName"] == "default-scheduler"
    assert "null" not in out.read_text()
    assert load_config(str(out)).client_connection.qps == 33.0  # it reads back as a --config file


def test_master_reaches_every_service() -> None:
    assert service_args(parse(["--kubeconfig=/k", "--master=https://new:6443"])) == [
        "--secure-port=0",
        "--master=https://new:6443",
    ]
    assert service_args(parse(["--kubeconfig=/k"])) == ["--secure-port=0"]
