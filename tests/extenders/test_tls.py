"""HTTPS extenders: enableHTTPS and tlsConfig (insecure, serverName, CA, client certificates, the
``*Data`` variants) against a real TLS extender server with certificates made by openssl."""

from __future__ import annotations

import shutil
import ssl
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from ksched.config.types import Extender, ExtenderTLSConfig
from ksched.extenders import ExtenderConfigError, HTTPExtenders
from ksched.framework.extender import ExtenderError
from ksched.framework.testing import make_node, make_pod, make_snapshot
from tests.extenders.server import ExtenderServer, FakeExtender, only

pytestmark = pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command")

POD = make_pod("p")
SNAPSHOT = make_snapshot([make_node("a"), make_node("b")])


@dataclass(frozen=True)
class PKI:
    ca: Path
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path
    other_ca: Path


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def _key_and_csr(name: str, cn: str, cwd: Path) -> None:
    _openssl(
        "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
        "-keyout", f"{name}.key", "-out", f"{name}.csr", "-subj", f"/CN={cn}", cwd=cwd,
    )  # fmt: skip


def _sign(name: str, ca: str, ext: str, cwd: Path) -> None:
    (cwd / f"{name}.ext").write_text(ext)
    _openssl(
        "x509", "-req", "-in", f"{name}.csr", "-CA", f"{ca}.crt", "-CAkey", f"{ca}.key",
        "-CAcreateserial", "-out", f"{name}.crt", "-days", "2", "-extfile", f"{name}.ext", cwd=cwd,
    )  # fmt: skip


def _ca(name: str, cwd: Path) -> None:
    _openssl(
        "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
        "-keyout", f"{name}.key", "-out", f"{name}.crt", "-days", "2", "-subj", f"/CN={name}", cwd=cwd,
    )  # fmt: skip


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> PKI:
    d = tmp_path_factory.mktemp("pki")
    _ca("ca", d)
    _ca("other-ca", d)
    _key_and_csr("server", "extender.test", d)
    # the certificate names extender.test only: reaching it as 127.0.0.1 needs serverName
    _sign("server", "ca", "subjectAltName=DNS:extender.test\n", d)
    _key_and_csr("client", "kube-scheduler", d)
    _sign("client", "ca", "extendedKeyUsage=clientAuth\n", d)
    return PKI(
        d / "ca.crt",
        d / "server.crt",
        d / "server.key",
        d / "client.crt",
        d / "client.key",
        d / "other-ca.crt",
    )


def _server(pki: PKI, *, client_auth: bool = False) -> ExtenderServer:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(pki.server_cert, pki.server_key)
    if client_auth:
        ctx.verify_mode = ssl.CERT_REQUIRED
        ctx.load_verify_locations(pki.ca)
    return ExtenderServer(ssl_context=ctx).start()


@pytest.fixture
def tls_server(pki: PKI) -> Iterator[ExtenderServer]:
    srv = _server(pki)
    yield srv
    srv.stop()


async def _filter(config: Extender) -> list[str]:
    owner = HTTPExtenders([config])
    try:
        verdict = await owner.extenders[0].filter(POD, list(SNAPSHOT.nodes))
    finally:
        await owner.close()
    return [ni.name for ni in verdict.nodes]


def _config(server: ExtenderServer, **kw: object) -> Extender:
    fake = FakeExtender(predicates=[only("b")], node_cache_capable=True)
    return fake.config(server.serve("ext", fake), **kw)


async def test_enable_https_without_a_ca_skips_verification(tls_server: ExtenderServer) -> None:
    assert await _filter(_config(tls_server, enable_https=True)) == ["b"]


async def test_ca_data_and_server_name_verify_the_server(tls_server: ExtenderServer, pki: PKI) -> None:
    tls = ExtenderTLSConfig(ca_data=pki.ca.read_bytes(), server_name="extender.test")
    assert await _filter(_config(tls_server, enable_https=True, tls_config=tls)) == ["b"]


async def test_ca_file_is_read_too(tls_server: ExtenderServer, pki: PKI) -> None:
    tls = ExtenderTLSConfig(ca_file=str(pki.ca), server_name="extender.test")
    assert await _filter(_config(tls_server, tls_config=tls)) == ["b"]


async def test_certificate_not_matching_the_host_is_refused(tls_server: ExtenderServer, pki: PKI) -> None:
    tls = ExtenderTLSConfig(ca_file=str(pki.ca))  # no serverName: 127.0.0.1 is not in the certificate
    with pytest.raises(ExtenderError, match="ertificate"):
        await _filter(_config(tls_server, enable_https=True, tls_config=tls))


async def test_server_signed_by_another_ca_is_refused(tls_server: ExtenderServer, pki: PKI) -> None:
    tls = ExtenderTLSConfig(ca_file=str(pki.other_ca), server_name="extender.test")
    with pytest.raises(ExtenderError, match="ertificate"):
        await _filter(_config(tls_server, enable_https=True, tls_config=tls))


async def test_client_certificate_from_data_is_presented(pki: PKI) -> None:
    srv = _server(pki, client_auth=True)
    try:
        tls = ExtenderTLSConfig(
            ca_data=pki.ca.read_bytes(),
            server_name="extender.test",
            cert_data=pki.client_cert.read_bytes(),
            key_data=pki.client_key.read_bytes(),
        )
        assert await _filter(_config(srv, enable_https=True, tls_config=tls)) == ["b"]
        files = ExtenderTLSConfig(
            ca_file=str(pki.ca),
            server_name="extender.test",
            cert_file=str(pki.client_cert),
            key_file=str(pki.client_key),
        )
        assert await _filter(_config(srv, enable_https=True, tls_config=files)) == ["b"]
        without = ExtenderTLSConfig(ca_file=str(pki.ca), server_name="extender.test")
        with pytest.raises(ExtenderError):
            await _filter(_config(srv, enable_https=True, tls_config=without))
    finally:
        srv.stop()


def test_a_ca_with_insecure_is_refused_as_client_go_does(pki: PKI) -> None:
    tls = ExtenderTLSConfig(insecure=True, ca_file=str(pki.ca))
    with pytest.raises(ExtenderConfigError, match="root certificates file with the insecure flag"):
        HTTPExtenders([Extender(url_prefix="https://x", tls_config=tls)])


def test_unreadable_files_are_refused() -> None:
    tls = ExtenderTLSConfig(ca_file="/nonexistent/ca.crt")
    with pytest.raises(ExtenderConfigError, match="couldn't build extenders: reading caFile"):
        HTTPExtenders([Extender(url_prefix="https://x", tls_config=tls)])
