"""Who is who and who may read which path: TokenReview and SubjectAccessReview as the API server.

kubesim knows its admin token (``system:masters``, may do anything) and the tokens and grants a
test or scenario adds: :meth:`Access.service_account_token` issues a token for a service account
(user ``system:serviceaccount:<ns>:<name>``, the groups the real server gives), and
:meth:`Access.grant` binds a ClusterRole's ``nonResourceURLs`` rule to a user, group or service
account, as a ClusterRoleBinding does (a path written with a trailing ``*`` is a prefix, verb ``*``
is any). Resource rules are not modelled: a SubjectAccessReview of resource attributes is allowed
for ``system:masters`` only. Bodies and statuses follow the captures 16c-16f and 16k-16l: a token
the server does not know is 201 with ``status.error``, a denial carries only ``allowed: false``.
"""

from __future__ import annotations

import json
import secrets
import uuid
from collections import Counter
from dataclasses import dataclass
from typing import Any

from .jsonio import JSON

AUDIENCE = "https://kubernetes.default.svc.cluster.local"
MASTERS = "system:masters"
ADMIN = "kubesim-admin"


@dataclass(frozen=True, slots=True)
class Identity:
    username: str
    uid: str
    groups: tuple[str, ...]
    credential_id: str | None = None


@dataclass(frozen=True, slots=True)
class Grant:
    """One ClusterRoleBinding of a ClusterRole with one ``nonResourceURLs`` rule."""

    binding: str
    role: str
    subject_kind: str
    """``User``, ``Group`` or ``ServiceAccount`` (then ``subject`` is ``namespace/name``)."""
    subject: str
    paths: tuple[str, ...]
    verbs: tuple[str, ...]

    def covers(self, user: str, groups: list[str], path: str, verb: str) -> bool:
        if self.subject_kind == "User":
            who = user == self.subject
        elif self.subject_kind == "Group":
            who = self.subject in groups
        else:
            namespace, _, name = self.subject.partition("/")
            who = user == f"system:serviceaccount:{namespace}:{name}"
        verb_ok = "*" in self.verbs or verb in self.verbs
        return who and verb_ok and any(_path_matches(rule, path) for rule in self.paths)

    def reason(self) -> str:
        subject = self.subject
        if self.subject_kind == "ServiceAccount":  # the API server writes name/namespace here
            namespace, _, name = subject.partition("/")
            subject = f"{name}/{namespace}"
        return (
            f'RBAC: allowed by ClusterRoleBinding "{self.binding}" of ClusterRole "{self.role}" '
            f'to {self.subject_kind} "{subject}"'
        )


_KINDS = {"serviceaccount": "ServiceAccount", "user": "User", "group": "Group"}


def parse_grant(text: str) -> tuple[str, str, tuple[str, ...]]:
    """``--grant KIND:SUBJECT=PATH[,PATH...]`` (KIND serviceaccount with SUBJECT namespace/name, user
    or group) → (subject kind, subject, paths). Raises ValueError naming what is wrong."""
    who, eq, paths = text.partition("=")
    kind, colon, subject = who.partition(":")
    bad_account = kind.lower() == "serviceaccount" and "/" not in subject
    if not eq or not colon or kind.lower() not in _KINDS or not subject or bad_account:
        raise ValueError(
            f"--grant {text!r}: expected serviceaccount:NAMESPACE/NAME=PATH[,PATH...] (or user:NAME=..., "
            "group:NAME=...)"
        )
    listed = tuple(p.strip() for p in paths.split(",") if p.strip())
    if not listed or not all(p.startswith("/") or p == "*" for p in listed):
        raise ValueError(f"--grant {text!r}: the paths must be absolute (/metrics,/debug/*)")
    return _KINDS[kind.lower()], subject, listed


def _path_matches(rule: str, path: str) -> bool:
    if rule in ("*", path):
        return True
    return rule.endswith("*") and path.startswith(rule[:-1])


class Access:
    """The identities behind tokens and the non-resource grants; counts the reviews it answers."""

    def __init__(self, admin_token: str | None) -> None:
        self._identities: dict[str, Identity] = {}
        if admin_token is not None:
            self._identities[admin_token] = Identity(ADMIN, "", (MASTERS, "system:authenticated"))
        self._grants: list[Grant] = []
        self.reviews: Counter[str] = Counter()
        """Reviews answered, by resource (``tokenreviews``, ``subjectaccessreviews``)."""

    def identity(self, token: str) -> Identity | None:
        return self._identities.get(token)

    def service_account_token(self, namespace: str, name: str) -> str:
        """A new bearer token of service account ``namespace/name``."""
        token = secrets.token_urlsafe(32)
        self._identities[token] = Identity(
            f"system:serviceaccount:{namespace}:{name}",
            str(uuid.uuid4()),
            ("system:serviceaccounts", f"system:serviceaccounts:{namespace}", "system:authenticated"),
            f"JTI={uuid.uuid4()}",
        )
        return token

    def grant(
        self,
        subject_kind: str,
        subject: str,
        paths: list[str] | tuple[str, ...],
        verbs: list[str] | tuple[str, ...] = ("get",),
        *,
        binding: str | None = None,
        role: str | None = None,
    ) -> None:
        """Allow ``subject`` the ``verbs`` on the non-resource ``paths``."""
        if subject_kind not in ("User", "Group", "ServiceAccount"):
            raise ValueError(f"subject kind: {subject_kind!r} is not User, Group or ServiceAccount")
        if subject_kind == "ServiceAccount" and "/" not in subject:
            raise ValueError(f"subject: a ServiceAccount is namespace/name, got {subject!r}")
        name = binding or f"kubesim-grant-{len(self._grants)}"
        self._grants.append(Grant(name, role or name, subject_kind, subject, tuple(paths), tuple(verbs)))

    def allows(self, user: str, groups: list[str], path: str, verb: str) -> tuple[bool, str]:
        """(allowed, reason) of a non-resource request."""
        if MASTERS in groups:
            return True, ""
        for grant in self._grants:
            if grant.covers(user, groups, path, verb):
                return True, grant.reason()
        return False, ""

    def token_review(self, body: Any) -> JSON:
        """The TokenReview the API server returns (201) for ``body``."""
        self.reviews["tokenreviews"] = self.reviews["tokenreviews"] + 1
        spec = body.get("spec") if isinstance(body, dict) else None
        spec = spec if isinstance(spec, dict) else {}
        token = spec.get("token") if isinstance(spec.get("token"), str) else ""
        audiences = [a for a in spec.get("audiences") or [] if isinstance(a, str)]
        out_spec: JSON = {}
        if token:
            out_spec["token"] = token
        if audiences:
            out_spec["audiences"] = audiences
        who = self._identities.get(token) if token else None
        status: JSON
        if who is None:
            status = {"user": {}, "error": "invalid bearer token"}
        elif audiences and AUDIENCE not in audiences:
            wanted = ", ".join(json.dumps(a) for a in audiences)
            status = {
                "user": {},
                "error": f"[invalid bearer token, token audiences [{json.dumps(AUDIENCE)}] is invalid for "
                f"the target audiences [{wanted}]]",
            }
        else:
            user: JSON = {"username": who.username}
            if who.uid:
                user["uid"] = who.uid
            user["groups"] = list(who.groups)
            if who.credential_id:
                user["extra"] = {"authentication.kubernetes.io/credential-id": [who.credential_id]}
            status = {"authenticated": True, "user": user, "audiences": audiences or [AUDIENCE]}
        return {
            "kind": "TokenReview",
            "apiVersion": "authentication.k8s.io/v1",
            "metadata": {},
            "spec": out_spec,
            "status": status,
        }

    def access_review(self, body: Any) -> JSON:
        """The SubjectAccessReview the API server returns (201) for ``body``."""
        self.reviews["subjectaccessreviews"] = self.reviews["subjectaccessreviews"] + 1
        spec = body.get("spec") if isinstance(body, dict) else None
        spec = spec if isinstance(spec, dict) else {}
        user = str(spec.get("user") or "")
        groups = [g for g in spec.get("groups") or [] if isinstance(g, str)]
        out_spec: JSON = {}
        for key in ("resourceAttributes", "nonResourceAttributes", "user", "groups", "extra", "uid"):
            if spec.get(key):
                out_spec[key] = spec[key]
        non_resource = spec.get("nonResourceAttributes")
        if isinstance(non_resource, dict):
            allowed, reason = self.allows(
                user, groups, str(non_resource.get("path", "")), str(non_resource.get("verb", ""))
            )
        else:
            allowed, reason = MASTERS in groups, ""
        status: JSON = {"allowed": allowed}
        if reason:
            status["reason"] = reason
        return {
            "kind": "SubjectAccessReview",
            "apiVersion": "authorization.k8s.io/v1",
            "metadata": {},
            "spec": out_spec,
            "status": status,
        }
