"""TokenReview and SubjectAccessReview through kubernetes_asyncio, for :mod:`ksched.service.delegated`.

The client comes from ``--authentication-kubeconfig`` / ``--authorization-kubeconfig``, else the
in-cluster service account; with neither, there is no client and the secure port treats every caller
as anonymous (authentication) or denies what is not always allowed (authorization), as kube-scheduler
does with its kubeconfigs optional.
"""

from __future__ import annotations

from kubernetes_asyncio.client import (
    ApiClient,
    AuthenticationV1Api,
    AuthorizationV1Api,
    V1NonResourceAttributes,
    V1SubjectAccessReview,
    V1SubjectAccessReviewSpec,
    V1TokenReview,
    V1TokenReviewSpec,
)
from kubernetes_asyncio.client.exceptions import ApiException

from ksched.service.delegated import AccessReview, ReviewError, TokenReview, User
from ksched.service.kube import api_client, api_reachable

TIMEOUT = 10.0
"""Seconds a review may take (upstream: TokenRequestTimeout and ClientTimeout, 10 s)."""


async def review_client(kubeconfig: str | None, component: str) -> ApiClient | None:
    """A client for ``kubeconfig``, the in-cluster one when None, or None outside a cluster."""
    if not api_reachable(kubeconfig):
        return None
    return await api_client(kubeconfig, qps_connections=4, component=component)


def token_review(client: ApiClient) -> TokenReview:
    api = AuthenticationV1Api(client)

    async def review(token: str) -> User | None:
        body = V1TokenReview(spec=V1TokenReviewSpec(token=token))
        try:
            answer = await api.create_token_review(body, _request_timeout=TIMEOUT)
        except (ApiException, OSError, TimeoutError) as exc:
            raise ReviewError(f"TokenReview: {exc}") from exc
        status = answer.status
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


def access_review(client: ApiClient) -> AccessReview:
    api = AuthorizationV1Api(client)

    async def review(user: User, path: str, verb: str) -> tuple[bool, str]:
        body = V1SubjectAccessReview(
            spec=V1SubjectAccessReviewSpec(
                user=user.name,
                uid=user.uid or None,
                groups=list(user.groups) or None,
                extra=user.extra or None,
                non_resource_attributes=V1NonResourceAttributes(path=path, verb=verb),
            )
        )
        try:
            answer = await api.create_subject_access_review(body, _request_timeout=TIMEOUT)
        except (ApiException, OSError, TimeoutError) as exc:
            raise ReviewError(f"SubjectAccessReview: {exc}") from exc
        status = answer.status
        if status is None:
            return False, ""
        if status.denied:
            return False, status.reason or ""
        return bool(status.allowed), status.reason or ""

    return review
