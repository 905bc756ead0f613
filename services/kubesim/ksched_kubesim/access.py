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

from . import errors, managed_fields
from .errors import FieldError, invalid_value
from .jsonio import JSON
from .resources import SUBJECT_ACCESS_REVIEWS, ResourceType
from .store import canonical_metadata

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

    def review(self, rt: ResourceType, asked: JSON, manager: str) -> JSON:
        """The TokenReview or SubjectAccessReview the API server answers (201) for the decoded
        request ``asked``, written by ``manager``. As for any create, the request's metadata loses
        the system fields (uid, creationTimestamp ...) and the namespace, and gains the
        ``managedFields`` entry of what the request set (its status too: a review has no status
        subresource); the answer keeps that metadata and the spec and replaces the status."""
        meta = {k: v for k, v in asked["metadata"].items() if k not in _WIPED_META}
        review = rt.kind == "TokenReview"
        request: JSON = {"metadata": meta, "spec": _token_spec(asked) if review else _access_spec(asked)}
        status = asked.get("status")
        if isinstance(status, dict) and status:
            request["status"] = status
        managed_fields.record(None, request, manager=manager, api_version=rt.api_version, kind=rt.kind)
        if review:
            status = self._token_status(request["spec"], asked.get("status"))
        else:
            _validate_access_review(request)
            status = self._access_status(request["spec"])
        return {
            "kind": rt.kind,
            "apiVersion": rt.api_version,
            "metadata": canonical_metadata(request["metadata"]),
            "spec": request["spec"],
            "status": status,
        }

    def _token_status(self, spec: JSON, given: Any) -> JSON:
        """The request's status with what authenticating the token found: ``authenticated``, and
        the error, or the user and audiences (what it does not find stays as sent)."""
        self.reviews["tokenreviews"] = self.reviews["tokenreviews"] + 1
        token = spec.get("token")
        if not token:
            raise errors.bad_request("token is required for TokenReview in authentication")
        given = given if isinstance(given, dict) else {}
        user, audiences, error = given.get("user") or {}, given.get("audiences"), given.get("error")
        asked = spec.get("audiences") or []
        who = self._identities.get(token)
        authenticated = False
        if who is None:
            error = "invalid bearer token"
        elif asked and AUDIENCE not in asked:
            wanted = ", ".join(json.dumps(a) for a in asked)
            error = (
                f"[invalid bearer token, token audiences [{json.dumps(AUDIENCE)}] is invalid for the target "
                f"audiences [{wanted}]]"
            )
        else:
            user = {"username": who.username}
            if who.uid:
                user["uid"] = who.uid
            user["groups"] = list(who.groups)
            if who.credential_id:
                user["extra"] = {"authentication.kubernetes.io/credential-id": [who.credential_id]}
            audiences = asked or [AUDIENCE]
            authenticated = True
        status: JSON = {"authenticated": True} if authenticated else {}
        status["user"] = user
        if audiences:
            status["audiences"] = audiences
        if error:
            status["error"] = error
        return status

    def _access_status(self, spec: JSON) -> JSON:
        self.reviews["subjectaccessreviews"] = self.reviews["subjectaccessreviews"] + 1
        user = str(spec.get("user") or "")
        groups = list(spec.get("groups") or [])
        non_resource = spec.get("nonResourceAttributes")
        if isinstance(non_resource, dict):
            allowed, reason = self.allows(
                user, groups, str(non_resource.get("path") or ""), str(non_resource.get("verb") or "")
            )
        else:
            allowed, reason = MASTERS in groups, ""
        status: JSON = {"allowed": allowed}
        if reason:
            status["reason"] = reason
        return status


#: what the create handler wipes from a request's metadata (rest.WipeObjectMetaSystemFields), and the
#: namespace of a cluster-scoped object
_WIPED_META = frozenset(
    {"creationTimestamp", "uid", "deletionTimestamp", "deletionGracePeriodSeconds", "selfLink", "namespace"}
)
#: SubjectAccessReviewSpec's fields in Go order
_ACCESS_SPEC = ("resourceAttributes", "nonResourceAttributes", "user", "groups", "extra", "uid")


def _token_spec(asked: JSON) -> JSON:
    """TokenReviewSpec as Go writes it back (empty fields omitted)."""
    spec = asked.get("spec") or {}
    return {key: spec[key] for key in ("token", "audiences") if spec.get(key)}


def _access_spec(asked: JSON) -> JSON:
    spec = asked.get("spec") or {}
    return {key: spec[key] for key in _ACCESS_SPEC if spec.get(key)}


def _validate_access_review(request: JSON) -> None:
    """422 as ValidateSubjectAccessReview: exactly one kind of attributes, a user or a group, and
    no metadata but managedFields (the error shows them)."""
    spec = request["spec"]
    resource, non_resource = spec.get("resourceAttributes"), spec.get("nonResourceAttributes")
    errs: list[FieldError] = []
    if resource is not None and non_resource is not None:
        errs.append(
            invalid_value(
                "spec.nonResourceAttributes",
                # the internal type, without json tags: Go's field names, every field
                {"Path": non_resource.get("path") or "", "Verb": non_resource.get("verb") or ""},
                "cannot be specified in combination with resourceAttributes",
            )
        )
    if resource is None and non_resource is None:
        errs.append(
            invalid_value(
                "spec.resourceAttributes",
                None,
                "exactly one of nonResourceAttributes or resourceAttributes must be specified",
            )
        )
    if not spec.get("user") and not spec.get("groups"):
        errs.append(invalid_value("spec.user", "", "at least one of user or group must be specified"))
    meta = canonical_metadata(request["metadata"])
    if any(key != "managedFields" for key in meta):
        errs.append(invalid_value("metadata", meta, "must be empty"))
    if errs:
        raise errors.invalid("", SUBJECT_ACCESS_REVIEWS.group, "", errs)
