"""The services' command lines a Stack builds for the drop-in: in-cluster, given NATS, no elections."""

from __future__ import annotations

from pathlib import Path

from ksched.launcher.stack import Stack, StackOptions


def test_in_cluster_given_nats_and_no_singleton_elections(tmp_path: Path) -> None:
    stack = Stack(
        StackOptions(workdir=tmp_path, kubeconfig="", nats_url="nats://n:4222", singleton_election=False)
    )
    common = stack._common()
    assert "--kubeconfig" not in common
    assert common[:2] == ["--nats", "nats://n:4222"]
    assert "--no-leader-elect" in stack._service("informer", "informer").args
    assert "--no-leader-elect" not in stack._service("scheduler-0", "scheduler").args


def test_a_kubeconfig_is_passed_on(tmp_path: Path) -> None:
    stack = Stack(StackOptions(workdir=tmp_path, kubeconfig="/k", nats_url="nats://n:4222"))
    common = stack._common()
    assert common[common.index("--kubeconfig") + 1] == "/k"
    assert "--no-leader-elect" not in stack._service("queue", "queue").args


def test_service_args_reach_every_service(tmp_path: Path) -> None:
    stack = Stack(
        StackOptions(workdir=tmp_path, kubeconfig="/k", nats_url="nats://n", service_args=["--master=m"])
    )
    for name, service in (("informer", "informer"), ("binder-0", "binder")):
        assert "--master=m" in stack._service(name, service).args


def test_a_service_may_have_a_kubeconfig_of_its_own(tmp_path: Path) -> None:
    stack = Stack(
        StackOptions(
            workdir=tmp_path,
            kubeconfig="/admin",
            nats_url="nats://n",
            kubeconfigs={"binder": "/binder", "informer": "/informer"},
        )
    )
    for name, service, expected in (
        ("informer", "informer", "/informer"),
        ("queue", "queue", "/admin"),
        ("binder-0", "binder", "/binder"),
        ("binder-1", "binder", "/binder"),
    ):
        args = stack._service(name, service).args
        assert args[args.index("--kubeconfig") + 1] == expected, name
        assert args.count("--kubeconfig") == 1
