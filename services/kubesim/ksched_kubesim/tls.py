"""Optional TLS: a self-signed serving certificate made with the ``openssl`` command.

client-go (kubectl) only sends bearer tokens over TLS, so ``--tls`` is what lets kubectl authenticate;
Python clients work over plain HTTP as well.
"""

from __future__ import annotations

import base64
import shutil
import ssl
import subprocess
from dataclasses import dataclass
from pathlib import Path


class TLSError(RuntimeError):
    pass


@dataclass(frozen=True, slots=True)
class ServingCert:
    cert_file: Path
    key_file: Path

    def context(self) -> ssl.SSLContext:
        ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        ctx.load_cert_chain(self.cert_file, self.key_file)
        return ctx

    def ca_data(self) -> str:
        """The certificate, base64-encoded, for a kubeconfig's ``certificate-authority-data``."""
        return base64.b64encode(self.cert_file.read_bytes()).decode()


def self_signed(directory: Path, host: str) -> ServingCert:
    """Create a self-signed certificate for ``host``, 127.0.0.1 and localhost in ``directory``."""
    openssl = shutil.which("openssl")
    if openssl is None:
        raise TLSError("--tls needs the openssl command to create a self-signed certificate")
    directory.mkdir(parents=True, exist_ok=True)
    cert, key = directory / "kubesim.crt", directory / "kubesim.key"
    names = {"IP:127.0.0.1", "DNS:localhost"}
    names.add(f"IP:{host}" if host.replace(".", "").isdigit() or ":" in host else f"DNS:{host}")
    cmd = [
        openssl,
        "req",
        "-x509",
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
        "-keyout",
        str(key),
        "-out",
        str(cert),
        "-days",
        "365",
        "-subj",
        "/CN=kubesim",
        "-addext",
        "subjectAltName=" + ",".join(sorted(names)),
        "-addext",
        "basicConstraints=critical,CA:TRUE",
    ]
    result = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise TLSError(f"openssl could not create a certificate: {result.stderr.strip()}")
    key.chmod(0o600)
    return ServingCert(cert, key)
