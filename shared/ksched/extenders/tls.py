"""The TLS settings of an HTTPS extender, as client-go's ``TLSConfigFor`` builds them from the
extender's ``tlsConfig`` (upstream ``makeTransport``).

- ``enableHTTPS`` without a CA means ``insecure``: the server certificate is not verified;
- ``caData`` / ``certData`` / ``keyData`` take precedence over the ``*File`` variants;
- a client certificate is sent when both a certificate and a key are given;
- ``serverName`` is the name the server certificate is verified against (and sent as SNI);
- a CA together with ``insecure`` is refused, as client-go does.

Without any of these, requests use the system's trust store. Whether TLS is used at all depends
on the ``urlPrefix`` scheme (``https://``), as in upstream.
"""

from __future__ import annotations

import os
import ssl
import tempfile
from dataclasses import dataclass

from ksched.config.types import Extender as ExtenderConfig
from ksched.framework.extender import ExtenderError


class ExtenderTLSError(ExtenderError):
    """The extender's TLS settings cannot be used."""


@dataclass(frozen=True, slots=True)
class TLSSettings:
    """What a request needs: the SSL context (None: aiohttp's default) and the server name."""

    context: ssl.SSLContext | None
    server_name: str | None


def _read(data: bytes, path: str, what: str) -> bytes:
    if data:
        return data
    if not path:
        return b""
    try:
        with open(path, "rb") as fh:
            return fh.read()
    except OSError as exc:
        raise ExtenderTLSError(f"reading {what} {path}: {exc}") from exc


def _load_client_cert(ctx: ssl.SSLContext, cert: bytes, key: bytes) -> None:
    """``load_cert_chain`` wants files: write the PEM data to private temporary files."""
    with tempfile.TemporaryDirectory(prefix="ksched-extender-tls-") as tmp:
        cert_path, key_path = os.path.join(tmp, "cert.pem"), os.path.join(tmp, "key.pem")
        for path, data in ((cert_path, cert), (key_path, key)):
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
        try:
            ctx.load_cert_chain(cert_path, key_path)
        except (ssl.SSLError, OSError) as exc:
            raise ExtenderTLSError(f"loading the client certificate and key: {exc}") from exc


def tls_settings(config: ExtenderConfig) -> TLSSettings:
    """The TLS settings of ``config``; raises :class:`ExtenderTLSError` for unusable ones."""
    tls = config.tls_config
    insecure = bool(tls and tls.insecure)
    server_name = (tls.server_name if tls else "") or None
    ca = _read(tls.ca_data, tls.ca_file, "caFile") if tls else b""
    cert = _read(tls.cert_data, tls.cert_file, "certFile") if tls else b""
    key = _read(tls.key_data, tls.key_file, "keyFile") if tls else b""
    if config.enable_https and not ca:
        insecure = True
    if ca and insecure:
        raise ExtenderTLSError("specifying a root certificates file with the insecure flag is not allowed")
    if not (ca or (cert and key) or insecure or server_name):
        return TLSSettings(None, None)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    if insecure:
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    elif ca:
        try:
            ctx.load_verify_locations(cadata=ca.decode("ascii", errors="replace"))
        except (ssl.SSLError, ValueError) as exc:
            raise ExtenderTLSError(f"loading the CA certificates: {exc}") from exc
    else:
        ctx.load_default_certs(ssl.Purpose.SERVER_AUTH)
    if cert and key:
        _load_client_cert(ctx, cert, key)
    return TLSSettings(ctx, server_name)
