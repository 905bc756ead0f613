"""The secure port's TLS context: the given certificate, or a self-signed one made at start.

As kube-scheduler without ``--tls-cert-file`` (its ``--cert-dir`` left empty): a throwaway CA
``localhost-ca@<unix time>`` signs a serving certificate ``localhost@<unix time>`` for ``localhost``
and ``127.0.0.1`` (plus the bind address when it is a specific one), valid one year, RSA 2048; the
chain served is the certificate and its CA. Nothing is written where it outlives the start: Python's
``ssl`` loads a chain from files only, so the PEM goes through a private temporary directory that
is removed once loaded.
"""

from __future__ import annotations

import datetime
import ipaddress
import ssl
import tempfile
import time
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

VALIDITY = datetime.timedelta(days=365)


def server_context(cert_file: str | None, key_file: str | None, bind_address: str) -> ssl.SSLContext:
    """A server-side TLS context: from ``cert_file``/``key_file`` when given, else self-signed."""
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    if cert_file and key_file:
        ctx.load_cert_chain(cert_file, key_file)
        return ctx
    chain, key = self_signed(bind_address)
    with tempfile.TemporaryDirectory(prefix="ksched-serving-") as tmp:
        cert_path, key_path = Path(tmp) / "tls.crt", Path(tmp) / "tls.key"
        key_path.touch(mode=0o600)
        key_path.write_bytes(key)
        cert_path.write_bytes(chain)
        ctx.load_cert_chain(cert_path, key_path)
    return ctx


def self_signed(bind_address: str = "") -> tuple[bytes, bytes]:
    """(PEM chain: serving certificate then CA, PEM private key of the serving certificate)."""
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
    names: list[x509.GeneralName] = [
        x509.DNSName("localhost"),
        x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
    ]
    try:
        bound = ipaddress.ip_address(bind_address)
    except ValueError:
        bound = None
    if bound is not None and not bound.is_unspecified and bound != ipaddress.ip_address("127.0.0.1"):
        names.append(x509.IPAddress(bound))
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"localhost@{stamp}")]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now)
        .not_valid_after(now + VALIDITY)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    chain = cert.public_bytes(serialization.Encoding.PEM) + ca.public_bytes(serialization.Encoding.PEM)
    pem_key = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    return chain, pem_key
