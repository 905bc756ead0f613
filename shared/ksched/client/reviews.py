"""TokenReview and SubjectAccessReview, for the secure port's delegation (:mod:`ksched.secureport.delegated`).

The client comes from ``--authentication-kubeconfig`` / ``--authorization-kubeconfig``, else the
in-cluster service account; with neither, there is no client and the secure port treats every caller
as anonymous (authentication) or denies what is not always allowed (authorization), as kube-scheduler
does with its kubeconfigs optional.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import msgspec

from ksched.client.config import api_client, api_reachable
from ksched.client.rest import ApiError, Client

TIMEOUT = 10.0
"""Seconds a review may take (upstream: TokenRequestTimeout and ClientTimeout, 10 s)."""
TOKEN_REVIEWS = "/apis/authentication.k8s.io/v1/tokenreviews"
ACCESS_REVIEWS = "/apis/authorization.k8s.io/v1/subjectaccessreviews"


@dataclass(frozen=True)
class User:
    """What the API server's TokenReview says of a caller (``authentication.k8s.io/v1`` UserInfo)."""

    name: str
    uid: str = ""
    groups: tuple[str, ...] = ()
    extra: dict[str, list[str]] = field(default_factory=dict)


class ReviewError(Exception):
    """The API server could not be asked (transport error, or an error status)."""


TokenReview = Callable[[str], Awaitable[User | None]]
"""The API server's answer for a token: who it is, or None when it does not authenticate."""
AccessReview = Callable[[User, str, str], Awaitable[tuple[bool, str]]]
"""The API server's answer for (user, path, verb): (allowed, reason)."""


class _UserInfo(msgspec.Struct):
    username: str | None = None
    uid: str | None = None
    groups: list[str] | None = None
    extra: dict[str, list[str]] | None = None


class _TokenStatus(msgspec.Struct):
    authenticated: bool | None = None
    user: _UserInfo | None = None


class _TokenAnswer(msgspec.Struct):
    status: _TokenStatus | None = None


class _AccessStatus(msgspec.Struct):
    allowed: bool = False
    denied: bool | None = None
    reason: str | None = None


class _AccessAnswer(msgspec.Struct):
    status: _AccessStatus | None = None


async def review_client(kubeconfig: str | None, component: str) -> Client | None:
    """A client for ``kubeconfig``, the in-cluster one when None, or None outside a cluster."""
    if not api_reachable(kubeconfig):
        return None
    return await api_client(kubeconfig, qps_connections=4, component=component)


async def _create(client: Client, path: str, body: dict[str, Any], what: str) -> bytes:
    try:
        status, data = await client.request("POST", path, body, timeout=TIMEOUT)
    except (OSError, TimeoutError) as exc:
        raise ReviewError(f"{what}: {exc}") from exc
    if status not in (200, 201):
        raise ReviewError(f"{what}: {ApiError('POST', path, status, data)}")
    return data


def token_review(client: Client) -> TokenReview:
    async def review(token: str) -> User | None:
        body = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": token}}
        data = await _create(client, TOKEN_REVIEWS, body, "TokenReview")
        try:
            status = msgspec.json.decode(data, type=_TokenAnswer).status
        except msgspec.DecodeError as exc:
            raise ReviewError(f"TokenReview: {exc}") from exc
        if status is None or not status.authenticated or status.user is None:
            return None
        info = status.user
        return User(
            name=info.username or "",
            uid=info.uid or "",
            groups=tuple(info.groups or ()),
            extra={k: list(v) for k, v in (info.extra or {}).items()},
        )

    return review


def access_review(client: Client) -> AccessReview:
    async def review(user: User, path: str, verb: str) -> tuple[bool, str]:
        spec: dict[str, Any] = {"user": user.name, "nonResourceAttributes": {"path": path, "verb": verb}}
        if user.uid:
            spec["uid"] = user.uid
        if user.groups:
            spec["groups"] = list(user.groups)
        if user.extra:
            spec["extra"] = user.extra
        body = {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": spec}
        data = await _create(client, ACCESS_REVIEWS, body, "SubjectAccessReview")
        try:
            status = msgspec.json.decode(data, type=_AccessAnswer).status
        except msgspec.DecodeError as exc:
            raise ReviewError(f"SubjectAccessReview: {exc}") from exc
        if status is None:
            return False, ""
        if status.denied:
            return False, status.reason or ""
        return bool(status.allowed), status.reason or ""

    return review
