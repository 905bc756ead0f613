"""Serving TLS contexts: the given certificate, or a self-signed one made at start (the secure port
of every service, and kubesim's ``--tls``).

As kube-scheduler without ``--tls-cert-file`` (its ``--cert-dir`` left empty): a throwaway CA
``localhost-ca@<unix time>`` signs a serving certificate ``localhost@<unix time>`` for ``localhost``
and ``127.0.0.1`` (plus the host when it is a specific address or a name), valid one year, RSA 2048;
the chain served is the certificate and its CA. Nothing is written where it outlives the start:
Python's ``ssl`` loads a chain from files only, so the PEM goes through a private temporary
directory that is removed once loaded.
"""

from __future__ import annotations

import datetime
import ipaddress
import ssl
import tempfile
import time
from pathlib import Path
from typing import NamedTuple

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

VALIDITY = datetime.timedelta(days=365)


class SelfSigned(NamedTuple):
    """A self-signed serving certificate, all PEM."""

    chain: bytes
    """The serving certificate, then its CA."""
    key: bytes
    """The serving certificate's private key."""
    ca: bytes
    """The CA alone: what a client trusts (a kubeconfig's ``certificate-authority-data``)."""


def server_context(cert_file: str | None, key_file: str | None, bind_address: str) -> ssl.SSLContext:
    """A server-side TLS context: from ``cert_file``/``key_file`` when given, else self-signed."""
    if cert_file and key_file:
        ctx = _context()
        ctx.load_cert_chain(cert_file, key_file)
        return ctx
    return serving_context(self_signed(bind_address))


def serving_context(cert: SelfSigned) -> ssl.SSLContext:
    """A server-side TLS context serving ``cert``."""
    ctx = _context()
    with tempfile.TemporaryDirectory(prefix="ksched-serving-") as tmp:
        cert_path, key_path = Path(tmp) / "tls.crt", Path(tmp) / "tls.key"
        key_path.touch(mode=0o600)
        key_path.write_bytes(cert.key)
        cert_path.write_bytes(cert.chain)
        ctx.load_cert_chain(cert_path, key_path)
    return ctx


def _context() -> ssl.SSLContext:
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    return ctx


def _names(host: str) -> list[x509.GeneralName]:
    """localhost and 127.0.0.1, and ``host`` unless it is one of them or an unspecified address."""
    names: list[x509.GeneralName] = [
        x509.DNSName("localhost"),
        x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
    ]
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        if host and host != "localhost":
            names.append(x509.DNSName(host))
        return names
    if not address.is_unspecified and address != ipaddress.ip_address("127.0.0.1"):
        names.append(x509.IPAddress(address))
    return names


def self_signed(host: str = "", *, client: bool = False) -> SelfSigned:
    """A CA and the serving certificate it signs for localhost, 127.0.0.1 and ``host`` (a bind
    address or a name; an unspecified address such as ``0.0.0.0`` adds nothing); with ``client``, a
    client certificate instead (``clientAuth``, for a server that asks for one)."""
    now = datetime.datetime.now(datetime.UTC)
    stamp = int(time.time())
    ca_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"localhost-ca@{stamp}")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now)
        .not_valid_after(now + VALIDITY)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=True,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .sign(ca_key, hashes.SHA256())
    )
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"localhost@{stamp}")]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now)
        .not_valid_after(now + VALIDITY)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.ExtendedKeyUsage(
                [ExtendedKeyUsageOID.CLIENT_AUTH if client else ExtendedKeyUsageOID.SERVER_AUTH]
            ),
            critical=False,
        )
        .add_extension(x509.SubjectAlternativeName(_names(host)), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    ca_pem = ca.public_bytes(serialization.Encoding.PEM)
    pem_key = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    return SelfSigned(cert.public_bytes(serialization.Encoding.PEM) + ca_pem, pem_key, ca_pem)
