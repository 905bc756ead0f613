"""Errors as the API server reports them: ``Status`` objects with the real codes, reasons and texts."""

from __future__ import annotations

from typing import Any

from ksched.apimachinery.field import FieldError, aggregate_message, duplicate, not_supported, required
from ksched.apimachinery.field import forbidden as forbidden_field
from ksched.apimachinery.field import invalid as invalid_value

from .jsonio import JSON, encode

__all__ = [
    "ApiError",
    "FieldError",
    "already_exists",
    "bad_request",
    "conflict",
    "duplicate",
    "expired",
    "failure",
    "forbidden",
    "forbidden_field",
    "forbidden_path",
    "internal",
    "invalid",
    "invalid_value",
    "method_not_allowed",
    "not_found",
    "not_supported",
    "required",
    "resource_not_found",
    "stale",
    "success",
    "too_large_resource_version",
    "too_many_requests",
    "unauthorized",
    "unsupported_media_type",
]


class ApiError(Exception):
    """An error answered to the client as a ``Status`` object with an HTTP code."""

    def __init__(self, body: JSON, headers: dict[str, str] | None = None) -> None:
        super().__init__(body.get("message", ""))
        self.body = body
        self.code: int = body["code"]
        self.headers = headers or {}

    @property
    def reason(self) -> str:
        return str(self.body.get("reason", ""))

    def to_bytes(self) -> bytes:
        return encode(self.body)


def failure(
    code: int, reason: str, message: str, details: JSON | None = None, metadata: JSON | None = None
) -> JSON:
    """A ``Status`` with ``status: Failure`` in the API server's field order."""
    body: JSON = {"kind": "Status", "apiVersion": "v1", "metadata": metadata or {}, "status": "Failure"}
    if message:
        body["message"] = message
    if reason:
        body["reason"] = reason
    if details is not None:
        body["details"] = details
    body["code"] = code
    return body


def success(code: int | None = 201, details: JSON | None = None) -> JSON:
    """A ``Status`` with ``status: Success`` (binding and eviction answer 201; deletions carry no code)."""
    body: JSON = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success"}
    if details is not None:
        body["details"] = details
    if code is not None:
        body["code"] = code
    return body


def _details(name: str | None, group: str, kind: str, **extra: Any) -> JSON:
    details: JSON = {}
    if name:
        details["name"] = name
    if group:
        details["group"] = group
    if kind:  # omitempty: the reviews' validation names no kind
        details["kind"] = kind
    details.update(extra)
    return details


def _qualified(resource: str, group: str) -> str:
    return f"{resource}.{group}" if group else resource


def not_found(resource: str, group: str, name: str) -> ApiError:
    return ApiError(
        failure(
            404,
            "NotFound",
            f'{_qualified(resource, group)} "{name}" not found',
            _details(name, group, resource),
        )
    )


def already_exists(resource: str, group: str, name: str) -> ApiError:
    return ApiError(
        failure(
            409,
            "AlreadyExists",
            f'{_qualified(resource, group)} "{name}" already exists',
            _details(name, group, resource),
        )
    )


def conflict(resource: str, group: str, name: str, text: str) -> ApiError:
    message = f'Operation cannot be fulfilled on {_qualified(resource, group)} "{name}": {text}'
    return ApiError(failure(409, "Conflict", message, _details(name, group, resource)))


MODIFIED_TEXT = "the object has been modified; please apply your changes to the latest version and try again"


def stale(resource: str, group: str, name: str) -> ApiError:
    """409 for an update carrying an out-of-date ``metadata.resourceVersion``."""
    return conflict(resource, group, name, MODIFIED_TEXT)


def bad_request(message: str) -> ApiError:
    return ApiError(failure(400, "BadRequest", message))


def method_not_allowed() -> ApiError:
    return ApiError(
        failure(
            405, "MethodNotAllowed", "the server does not allow this method on the requested resource", {}
        )
    )


def resource_not_found() -> ApiError:
    return ApiError(failure(404, "NotFound", "the server could not find the requested resource", {}))


def unsupported_media_type(content_type: str, accepted: list[str]) -> ApiError:
    message = (
        "the body of the request was in an unknown format - accepted media types include: "
        f"{', '.join(accepted)}"
    )
    if not content_type:
        message = "the body of the request was in an unknown format"
    return ApiError(failure(415, "UnsupportedMediaType", message, {}))


def internal(message: str) -> ApiError:
    return ApiError(
        failure(
            500, "InternalError", f"Internal error occurred: {message}", {"causes": [{"message": message}]}
        )
    )


def unauthorized() -> ApiError:
    return ApiError(failure(401, "Unauthorized", "Unauthorized"))


def forbidden(resource: str, group: str, name: str | None, text: str) -> ApiError:
    """403 for a resource request (``pods "x" is forbidden: ...``)."""
    subject = f'{_qualified(resource, group)} "{name}"' if name else _qualified(resource, group)
    return ApiError(
        failure(403, "Forbidden", f"{subject} is forbidden: {text}", _details(name, group, resource)),
        {"X-Content-Type-Options": "nosniff"},
    )


def forbidden_path(path: str, verb: str, user: str = "system:anonymous") -> ApiError:
    text = f'forbidden: User "{user}" cannot {verb} path "{path}"'
    return ApiError(failure(403, "Forbidden", text, {}), {"X-Content-Type-Options": "nosniff"})


def expired(message: str, continue_token: str | None = None) -> ApiError:
    metadata = {"continue": continue_token} if continue_token else None
    return ApiError(failure(410, "Expired", message, None, metadata))


def too_many_requests(message: str, causes: list[JSON]) -> ApiError:
    return ApiError(failure(429, "TooManyRequests", message, {"causes": causes}))


def too_large_resource_version(requested: int, current: int) -> ApiError:
    message = f"Timeout: Too large resource version: {requested}, current: {current}"
    details = {
        "causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}],
        "retryAfterSeconds": 1,
    }
    return ApiError(failure(504, "Timeout", message, details), {"Retry-After": "1"})


# --- field errors (422 Invalid): apimachinery's, under the names kubesim's validators use -----------


def go_sprint(value: Any) -> str:
    """A decoded JSON value as Go's ``fmt`` prints it with ``%+v`` (``map[a:1 b:[x y]]``, keys sorted)."""
    if isinstance(value, dict):
        return "map[" + " ".join(f"{key}:{go_sprint(value[key])}" for key in sorted(value)) + "]"
    if isinstance(value, list):
        return "[" + " ".join(go_sprint(item) for item in value) + "]"
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def patch_invalid(value: str, detail: str) -> ApiError:
    """422 for a patch whose result does not decode (``"" is invalid: patch: Invalid value: ...``): the
    API server reports it against an empty kind and name."""
    error = invalid_value("patch", value, detail)
    causes = [{"reason": error.reason, "message": error.body(), "field": error.field}]
    return ApiError(failure(422, "Invalid", f' "" is invalid: {error}', {"causes": causes}))


def invalid(
    kind: str, group: str, name: str, errors: list[FieldError], details_kind: str | None = None
) -> ApiError:
    """422 ``Invalid``: ``Pod "x" is invalid: [a, b]`` with one cause per field error."""
    subject = f"{kind}.{group}" if group else kind
    joined = aggregate_message(errors)
    causes = [{"reason": e.reason, "message": e.body(), "field": e.field} for e in errors]
    details = _details(name, group, details_kind or kind, causes=causes)
    return ApiError(failure(422, "Invalid", f'{subject} "{name}" is invalid: {joined}', details))
