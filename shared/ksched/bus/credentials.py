"""How a service authenticates to NATS: user and password or a ``.creds`` file, and optional TLS.

Built from flags / ``KSCHED_NATS_*`` variables by :mod:`ksched.service.options`; passed to
:func:`ksched.bus.connect.connect` as ``connect(url, name=..., **credentials.connect_kwargs())``.
"""

from __future__ import annotations

import os
import ssl
from dataclasses import dataclass
from typing import TypedDict


class CredentialsError(ValueError):
    """Inconsistent or unreadable NATS credential settings (the message names the option)."""


class ConnectKwargs(TypedDict, total=False):
    user: str
    password: str
    creds_file: str
    tls: ssl.SSLContext


@dataclass(frozen=True)
class NatsCredentials:
    """Client-side NATS security settings; all optional (no auth, plain TCP)."""

    user: str | None = None
    password: str | None = None
    creds_file: str | None = None
    tls_ca: str | None = None
    tls_cert: str | None = None
    tls_key: str | None = None

    def __post_init__(self) -> None:
        if self.creds_file and (self.user or self.password):
            raise CredentialsError("--nats-creds and --nats-user/--nats-password are mutually exclusive")
        if self.password and not self.user:
            raise CredentialsError("--nats-password needs --nats-user")
        if bool(self.tls_cert) != bool(self.tls_key):
            raise CredentialsError("--nats-tls-cert and --nats-tls-key must be given together")
        for option, path in (
            ("--nats-creds", self.creds_file),
            ("--nats-tls-ca", self.tls_ca),
            ("--nats-tls-cert", self.tls_cert),
            ("--nats-tls-key", self.tls_key),
        ):
            if path and not os.path.isfile(path):
                raise CredentialsError(f"{option}: no such file: {path}")

    @property
    def tls_enabled(self) -> bool:
        return bool(self.tls_ca or self.tls_cert)

    def tls_context(self) -> ssl.SSLContext | None:
        """A client TLS context verifying the server with ``tls_ca`` (system CAs when None) and
        presenting ``tls_cert``/``tls_key`` when given (mutual TLS); None without TLS settings."""
        if not self.tls_enabled:
            return None
        try:
            context = ssl.create_default_context(ssl.Purpose.SERVER_AUTH, cafile=self.tls_ca)
            if self.tls_cert and self.tls_key:
                context.load_cert_chain(self.tls_cert, self.tls_key)
        except (ssl.SSLError, OSError) as exc:
            raise CredentialsError(f"NATS TLS settings: {exc}") from exc
        return context

    def connect_kwargs(self) -> ConnectKwargs:
        """Keyword arguments for :func:`ksched.bus.connect.connect`."""
        kwargs: ConnectKwargs = {}
        if self.user:
            kwargs["user"] = self.user
        if self.password:
            kwargs["password"] = self.password
        if self.creds_file:
            kwargs["creds_file"] = self.creds_file
        context = self.tls_context()
        if context is not None:
            kwargs["tls"] = context
        return kwargs
