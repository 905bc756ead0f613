"""docker-compose.yml and the Dockerfile, checked without Docker: images pinned, one ksched image,
every service command parsed by that subcommand's real argparse under the service's environment,
health checks on each service's own /readyz port, NATS users and passwords consistent with the
generated authorization block."""

from __future__ import annotations

import argparse
import os
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
import yaml

from ksched.bus.auth import password_variable
from ksched.cli import SUBCOMMANDS
from ksched.config import load_config

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
SERVICES: dict[str, dict[str, Any]] = COMPOSE["services"]
DOCKERFILE = (ROOT / "Dockerfile").read_text()

#: the --http-port default of each service (its CLI's DEFAULT_HTTP_PORT)
HTTP_PORTS = {"informer": 10260, "queue": 10261, "scheduler": 10259, "binder": 10262}
"""The scheduling services: in compose and in every kustomization."""
UI_PORT = 10263
COMPOSE_PORTS = {**HTTP_PORTS, "ui": UI_PORT}
"""Compose also runs ``ksched ui`` (deploy/ has it as an optional component)."""
KSCHED_SERVICES = ["kubesim", *COMPOSE_PORTS]
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::?-([^}]*))?\}")


def interpolate(value: str) -> str:
    """Compose's ``${VAR:-default}`` with nothing set: the default."""
    return _VAR.sub(lambda m: m.group(2) or "", value)


class Parsed(Exception):
    def __init__(self, namespace: argparse.Namespace) -> None:
        self.namespace = namespace


@contextmanager
def environment(env: Mapping[str, str]) -> Iterator[None]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("KSCHED_")}
    with mock.patch.dict(os.environ, {**clean, **env}, clear=True):
        yield


def parse_with_cli(argv: Sequence[str], env: Mapping[str, str]) -> argparse.Namespace:
    """Run ``ksched <argv>`` up to its argument parsing (the subcommand's own parser and env
    defaults), then stop: nothing is started."""
    name, rest = argv[0], list(argv[1:])
    module, _, func = SUBCOMMANDS[name][0].partition(":")
    main: Callable[[Sequence[str]], int] = getattr(__import__(module, fromlist=[func]), func)
    real_parse = argparse.ArgumentParser.parse_args

    def parse_then_stop(self: argparse.ArgumentParser, args: Any = None, namespace: Any = None) -> Any:
        raise Parsed(real_parse(self, args, namespace))

    with (
        environment(env),
        mock.patch.object(argparse.ArgumentParser, "parse_args", parse_then_stop),
        pytest.raises(Parsed) as parsed,
    ):
        main(rest)
    return parsed.value.namespace


def service_env(service: dict[str, Any]) -> dict[str, str]:
    return {k: interpolate(str(v)) for k, v in (service.get("environment") or {}).items()}


def ksched_image_services() -> list[str]:
    return [name for name, svc in SERVICES.items() if svc.get("image") == "ksched:dev"]


def test_expected_services_and_profiles() -> None:
    assert {"nats", "kubesim", "informer", "queue", "scheduler", "binder", "ui"} <= set(SERVICES)
    default = {n for n, s in SERVICES.items() if not s.get("profiles")}
    assert default == {"nats", "kubesim", "informer", "queue", "scheduler", "binder", "ui"}
    real = {n for n, s in SERVICES.items() if "real-cluster" in (s.get("profiles") or [])}
    assert real == {"k3s", "k3s-kubeconfig"}


def test_images_are_pinned_and_ksched_is_one_image_built_here() -> None:
    for name, svc in SERVICES.items():
        image = svc["image"]
        assert ":" in image and not image.endswith(":latest"), f"{name}: unpinned image {image}"
        if image.startswith("ksched:"):
            assert svc["build"] == {"context": ".", "dockerfile": "Dockerfile"}, name
        else:
            assert re.search(r":v?\d+\.\d+\.\d+", image), f"{name}: pin a full version, got {image}"
    assert set(ksched_image_services()) >= set(KSCHED_SERVICES)


@pytest.mark.parametrize("name", KSCHED_SERVICES)
def test_command_parses_with_the_real_cli(name: str) -> None:
    svc = SERVICES[name]
    command = [interpolate(str(c)) for c in svc["command"]]
    assert command[0] == name, "the command starts with the subcommand (the image's entrypoint is ksched)"
    ns = parse_with_cli(command, service_env(svc))
    if name == "kubesim":
        assert ns.listen == ("kubesim", 6443)
        assert ns.write_kubeconfig == "/var/lib/ksched/kubesim.kubeconfig"
        return
    assert ns.http_port == COMPOSE_PORTS[name]
    assert ns.http_host == "0.0.0.0", "probes from outside the container need a non-loopback address"
    assert ns.nats == "nats://nats:4222"
    assert ns.nats_user == name and ns.nats_password
    assert ns.kubeconfig == SERVICES["kubesim"]["command"][4]
    assert ns.config == "/etc/ksched/config.yaml"
    assert ns.jetstream_replicas == 1, "compose runs one nats-server: streams cannot be replicated"


@pytest.mark.parametrize("name", list(COMPOSE_PORTS))
def test_defaults_match_when_the_port_is_not_set(name: str) -> None:
    """The port in the environment is the CLI's own default: dropping it changes nothing."""
    env = {k: v for k, v in service_env(SERVICES[name]).items() if k != "KSCHED_HTTP_PORT"}
    assert parse_with_cli([name], env).http_port == COMPOSE_PORTS[name]


@pytest.mark.parametrize("name", [*COMPOSE_PORTS, "kubesim", "nats"])
def test_healthchecks_probe_readiness_on_the_service_port(name: str) -> None:
    test = " ".join(SERVICES[name]["healthcheck"]["test"])
    if name in COMPOSE_PORTS:
        assert f"http://127.0.0.1:{COMPOSE_PORTS[name]}/readyz" in test
    elif name == "kubesim":
        assert "http://kubesim:6443/readyz" in test
    else:
        assert "http://127.0.0.1:8222/healthz" in test


def test_services_wait_for_healthy_dependencies() -> None:
    for name in COMPOSE_PORTS:
        depends = SERVICES[name]["depends_on"]
        assert depends == {
            "nats": {"condition": "service_healthy"},
            "kubesim": {"condition": "service_healthy"},
        }
    for svc in SERVICES.values():
        for dep, cond in (svc.get("depends_on") or {}).items():
            if cond.get("condition") == "service_healthy":
                assert "healthcheck" in SERVICES[dep], dep


def test_nats_users_and_passwords_line_up() -> None:
    nats = SERVICES["nats"]
    auth_mount = next(v for v in nats["volumes"] if v.endswith(":/etc/nats/auth.conf:ro"))
    auth = (ROOT / auth_mount.split(":")[0]).read_text()
    config = (ROOT / "deploy/compose/nats.conf").read_text()
    assert "include ./auth.conf" in config and "jetstream" in config and "http_port: 8222" in config
    server_env = service_env(nats)
    for name in COMPOSE_PORTS:
        env = service_env(SERVICES[name])
        variable = password_variable(name)
        assert f"${variable}" in auth
        assert env["KSCHED_NATS_PASSWORD"] == server_env[variable], name
        assert (
            SERVICES[name]["environment"]["KSCHED_NATS_PASSWORD"]
            == f"${{{variable}:-{server_env[variable]}}}"
        )


def test_mounted_files_exist_and_the_config_loads() -> None:
    for name, svc in SERVICES.items():
        for volume in svc.get("volumes", []):
            source = volume.split(":")[0]
            if source.startswith("./"):
                assert (ROOT / source).is_file(), f"{name}: {source} is missing"
    assert [p.scheduler_name for p in load_config(ROOT / "deploy/compose/ksched-config.yaml").profiles] == [
        "ksched"
    ]


def test_real_cluster_profile_writes_the_kubeconfig_the_services_can_be_pointed_at() -> None:
    fixer = " ".join(SERVICES["k3s-kubeconfig"]["command"])
    target = "/var/lib/ksched/k3s.kubeconfig"
    assert target in fixer and "https://k3s:6443" in fixer
    assert "k3s" in SERVICES["k3s"]["command"][SERVICES["k3s"]["command"].index("--tls-san") + 1]
    kubeconfig = SERVICES["informer"]["environment"]["KSCHED_KUBECONFIG"]
    assert kubeconfig.startswith("${KSCHED_KUBECONFIG_FILE:-"), "one variable switches the cluster"
    assert target in (ROOT / "docker-compose.yml").read_text().split("services:")[0]


# --- Dockerfile ------------------------------------------------------------------------------------
def dockerfile_instructions() -> list[tuple[str, str]]:
    text = re.sub(r"\\\n", " ", DOCKERFILE)
    lines = [line.strip() for line in text.splitlines() if line.strip() and not line.strip().startswith("#")]
    return [(line.split(None, 1)[0].upper(), line.split(None, 1)[1] if " " in line else "") for line in lines]


def test_dockerfile_multi_stage_pinned_non_root() -> None:
    steps = dockerfile_instructions()
    args = dict(a.split("=", 1) for op, a in steps if op == "ARG" and "=" in a)
    assert re.fullmatch(r"python:3\.11\.\d+-slim-\w+", args["PYTHON_IMAGE"]), args
    froms = [a for op, a in steps if op == "FROM"]
    assert len(froms) >= 2 and all(f.startswith("${PYTHON_IMAGE}") for f in froms)
    users = [a for op, a in steps if op == "USER"]
    assert users and not users[-1].startswith(("0", "root")), users
    assert steps[-2:] == [("ENTRYPOINT", '["ksched"]'), ("CMD", '["--help"]')]
    runs = " ".join(a for op, a in steps if op == "RUN")
    assert "pip install --require-hashes -r requirements.lock -r requirements-build.lock" in runs
    assert "pip install --no-deps --no-build-isolation ." in runs
    assert "-r requirements-otel.lock" in runs  # the otel extra: --tracing-config-file in the image
    assert any(op == "COPY" and a.startswith("--from=build") for op, a in steps)


def test_dockerfile_copies_what_exists_and_exposes_the_service_ports() -> None:
    steps = dockerfile_instructions()
    for op, arg in steps:
        if op == "COPY" and not arg.startswith("--from"):
            for source in arg.split()[:-1]:
                assert (ROOT / source).exists(), source
    exposed = {int(p) for op, a in steps if op == "EXPOSE" for p in a.split()}
    assert exposed == set(COMPOSE_PORTS.values())
    ignore = (ROOT / ".dockerignore").read_text().splitlines()
    for needed in (
        "!pyproject.toml",
        "!setup.py",
        "!requirements.lock",
        "!requirements-build.lock",
        "!requirements-otel.lock",
        "!shared/",
        "!services/",
    ):
        assert needed in ignore
