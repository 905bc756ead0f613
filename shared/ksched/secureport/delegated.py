"""Delegated authentication and authorization of the secure port, as kube-scheduler's.

Who the caller is: a bearer token is sent to the API server in a TokenReview (answers cached 10 s,
accepted and rejected alike, as apiserver's ``DelegatingAuthenticationOptions.CacheTTL``); a
request without one is ``system:anonymous`` (anonymous authentication is on, as upstream), and a
token the API server rejects is 401. Without an API server to ask (no authentication kubeconfig,
not in a cluster) every caller is anonymous, as upstream.

What the caller may do: members of ``system:masters`` may do anything, the always-allow paths
(``/healthz``, ``/readyz``, ``/livez`` by default) are open to all, and anything else is asked of
the API server in a SubjectAccessReview of the non-resource path and verb (answers cached 10 s
allowed, 10 s denied: ``DelegatingAuthorizationOptions.AllowCacheTTL`` / ``DenyCacheTTL``). Without
an API server to ask, everything else is denied.

Errors talking to the API server are not cached (upstream caches no errors either): the token is
then 401 and the request 403, naming the error.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Generic, TypeVar

from ksched.client.reviews import AccessReview, ReviewError, TokenReview, User

ANONYMOUS = "system:anonymous"
UNAUTHENTICATED = "system:unauthenticated"
MASTERS = "system:masters"
DEFAULT_ALWAYS_ALLOW_PATHS = ("/healthz", "/readyz", "/livez")
TOKEN_TTL = 10.0
ALLOW_TTL = 10.0
DENY_TTL = 10.0
CACHE_SIZE = 8192
"""Entries kept per cache (upstream: 8192 decisions of the webhook authorizer)."""

T = TypeVar("T")


ANONYMOUS_USER = User(ANONYMOUS, groups=(UNAUTHENTICATED,))


class TTLCache(Generic[T]):
    """Answers kept for a time each, the oldest dropped past ``size`` entries."""

    def __init__(self, size: int = CACHE_SIZE, clock: Callable[[], float] = time.monotonic) -> None:
        self._size = size
        self._clock = clock
        self._entries: OrderedDict[str, tuple[float, T]] = OrderedDict()

    def get(self, key: str) -> tuple[bool, T | None]:
        entry = self._entries.get(key)
        if entry is None:
            return False, None
        if entry[0] <= self._clock():
            del self._entries[key]
            return False, None
        return True, entry[1]

    def put(self, key: str, value: T, ttl: float) -> None:
        if ttl <= 0:
            return
        self._entries[key] = (self._clock() + ttl, value)
        self._entries.move_to_end(key)
        while len(self._entries) > self._size:
            self._entries.popitem(last=False)


class Unauthorized(Exception):
    """The caller presented a token the API server did not accept (HTTP 401)."""


class Authenticator:
    """Bearer token → :class:`User` through a cached TokenReview; no token → anonymous."""

    def __init__(
        self, review: TokenReview | None, ttl: float = TOKEN_TTL, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._review = review
        self._ttl = ttl
        self._cache: TTLCache[User | None] = TTLCache(clock=clock)

    async def authenticate(self, authorization: str | None) -> User:
        """The caller of a request whose ``Authorization`` header is ``authorization``."""
        if self._review is None:
            return ANONYMOUS_USER
        scheme, _, token = (authorization or "").partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token:
            return ANONYMOUS_USER
        key = hashlib.sha256(token.encode()).hexdigest()
        hit, user = self._cache.get(key)
        if not hit:
            try:
                user = await self._review(token)
            except ReviewError as exc:
                raise Unauthorized(str(exc)) from exc
            self._cache.put(key, user, self._ttl)
        if user is None:
            raise Unauthorized("invalid bearer token")
        return user


def path_matcher(always_allow: Sequence[str]) -> Callable[[str], bool]:
    """Upstream's path authorizer: exact paths, or prefixes written with one trailing ``*``."""
    exact: set[str] = set()
    prefixes: list[str] = []
    for raw in always_allow:
        p = raw.removeprefix("/")
        if p and "*" in p[:-1]:
            raise ValueError(f"--authorization-always-allow-paths: only trailing * allowed in {raw!r}")
        if p.endswith("*"):
            prefixes.append(p[:-1])
        else:
            exact.add(p)

    def allowed(path: str) -> bool:
        p = path.removeprefix("/")
        return p in exact or any(p.startswith(prefix) for prefix in prefixes)

    return allowed


class Authorizer:
    """(user, path, verb) → (allowed, reason): privileged group, always-allow paths, then a cached
    SubjectAccessReview."""

    def __init__(
        self,
        review: AccessReview | None,
        always_allow_paths: Sequence[str] = DEFAULT_ALWAYS_ALLOW_PATHS,
        *,
        allow_ttl: float = ALLOW_TTL,
        deny_ttl: float = DENY_TTL,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._review = review
        self._always = path_matcher(always_allow_paths)
        self._allow_ttl = allow_ttl
        self._deny_ttl = deny_ttl
        self._cache: TTLCache[tuple[bool, str]] = TTLCache(clock=clock)

    async def authorize(self, user: User, path: str, verb: str) -> tuple[bool, str]:
        if MASTERS in user.groups or self._always(path):
            return True, ""
        if self._review is None:
            return False, ""
        key = json.dumps([user.name, user.uid, user.groups, user.extra, path, verb], sort_keys=True)
        hit, decision = self._cache.get(key)
        if hit and decision is not None:
            return decision
        try:
            decision = await self._review(user, path, verb)
        except ReviewError as exc:
            return False, f"error checking access: {exc}"
        self._cache.put(key, decision, self._allow_ttl if decision[0] else self._deny_ttl)
        return decision
