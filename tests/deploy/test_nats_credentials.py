"""NATS credentials and TLS by flag and KSCHED_NATS_* variable, and a mutual-TLS connection to a
real nats-server that also requires the service's user."""

from __future__ import annotations

import argparse
import shutil
import subprocess
from pathlib import Path

import nats.errors
import pytest

from ksched.bus.auth import authorization_block
from ksched.bus.connect import connect
from ksched.bus.credentials import CredentialsError, NatsCredentials
from ksched.bus.embedded import EmbeddedNats
from ksched.bus.subjects import Subjects
from ksched.service.options import add_common_arguments, common_options


def parse(argv: list[str], env: dict[str, str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_common_arguments(parser, 10259, env)
    return parser.parse_args(argv)


def test_credentials_from_env_and_flags_win() -> None:
    env = {"KSCHED_NATS_USER": "scheduler", "KSCHED_NATS_PASSWORD": "from-env"}
    assert common_options(parse([], env), "scheduler").nats_credentials == NatsCredentials(
        user="scheduler", password="from-env"
    )
    flagged = common_options(parse(["--nats-password", "from-flag"], env), "scheduler").nats_credentials
    assert flagged.password == "from-flag"
    assert flagged.connect_kwargs() == {"user": "scheduler", "password": "from-flag"}
    assert common_options(parse([], {}), "scheduler").nats_credentials.connect_kwargs() == {}


def test_inconsistent_settings_name_the_option(tmp_path: Path) -> None:
    with pytest.raises(SystemExit, match="ksched binder: --nats-tls-cert and --nats-tls-key"):
        common_options(parse(["--nats-tls-cert", "c.pem"], {}), "binder")
    with pytest.raises(CredentialsError, match="--nats-tls-ca: no such file"):
        NatsCredentials(tls_ca=str(tmp_path / "missing.pem"))
    with pytest.raises(CredentialsError, match="mutually exclusive"):
        NatsCredentials(user="a", creds_file=str(tmp_path))
    with pytest.raises(CredentialsError, match="--nats-password needs --nats-user"):
        NatsCredentials(password="x")


def _openssl(*args: str) -> None:
    subprocess.run(["openssl", *args], check=True, capture_output=True)


def make_pki(d: Path) -> None:
    """A CA, a server certificate for 127.0.0.1 and a client certificate, all signed by the CA."""
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=ksched-test-ca",
             "-keyout", str(d / "ca.key"), "-out", str(d / "ca.pem"))  # fmt: skip
    (d / "san.ext").write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    for name in ("server", "client"):
        _openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", f"/CN={name}",
                 "-keyout", str(d / f"{name}.key"), "-out", str(d / f"{name}.csr"))  # fmt: skip
        _openssl("x509", "-req", "-in", str(d / f"{name}.csr"), "-CA", str(d / "ca.pem"),
                 "-CAkey", str(d / "ca.key"), "-CAcreateserial", "-days", "1",
                 "-extfile", str(d / "san.ext"), "-out", str(d / f"{name}.pem"))  # fmt: skip


@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command")
async def test_mutual_tls_and_user(tmp_path: Path) -> None:
    make_pki(tmp_path)
    conf = tmp_path / "nats.conf"
    conf.write_text(
        "tls {\n"
        f'  cert_file: "{tmp_path / "server.pem"}"\n'
        f'  key_file: "{tmp_path / "server.key"}"\n'
        f'  ca_file: "{tmp_path / "ca.pem"}"\n'
        "  verify: true\n"
        "}\n" + authorization_block(Subjects(), {"scheduler": "s3cret"}, users=["scheduler"])
    )
    async with EmbeddedNats(config_file=conf) as server:
        secure = NatsCredentials(
            user="scheduler",
            password="s3cret",
            tls_ca=str(tmp_path / "ca.pem"),
            tls_cert=str(tmp_path / "client.pem"),
            tls_key=str(tmp_path / "client.key"),
        )
        url = server.url.replace("nats://", "tls://")
        bus = await connect(url, name="scheduler", initial_timeout=5, **secure.connect_kwargs())
        try:
            assert bus.ready
            assert bus.nc.connected_url is not None and bus.nc.connected_url.scheme == "tls"
        finally:
            await bus.close()

        no_client_cert = NatsCredentials(user="scheduler", password="s3cret", tls_ca=str(tmp_path / "ca.pem"))
        with pytest.raises((nats.errors.Error, OSError)):
            await nats.connect(
                url, allow_reconnect=False, connect_timeout=2, **no_client_cert.connect_kwargs()
            )
