"""Validation of a pods/status write beyond its conditions (upstream ``ValidatePodStatusUpdate``): the
``extendedResourceClaimStatus`` the scheduler records for extended resources backed by DRA."""

from __future__ import annotations

from typing import Any

from ksched.apimachinery.validation import dns1123_label_errors, dns1123_subdomain_errors

from .errors import FieldError, duplicate, invalid_value, required
from .jsonio import JSON

PATH = "status.extendedResourceClaimStatus"


def _containers(spec: JSON) -> dict[str, JSON]:
    out: dict[str, JSON] = {}
    for key in ("initContainers", "containers"):
        for container in spec.get(key) or []:
            if isinstance(container, dict):
                out[str(container.get("name"))] = container
    return out


def extended_resource_claim_status_errors(pod: JSON) -> list[FieldError]:
    """Upstream ``validatePodExtendedResourceClaimStatus``."""
    status: Any = (pod.get("status") or {}).get("extendedResourceClaimStatus")
    if not isinstance(status, dict):
        return []
    containers = _containers(pod.get("spec") or {})
    errs: list[FieldError] = []
    mappings = status.get("requestMappings") or []
    mappings_path = f"{PATH}.requestMappings"
    if not mappings:
        errs.append(required(mappings_path, "at least one request mapping is required"))
    seen: set[tuple[str, str, str]] = set()
    for i, mapping in enumerate(mappings):
        mapping = mapping if isinstance(mapping, dict) else {}
        path = f"{mappings_path}[{i}]"
        container_name = str(mapping.get("containerName") or "")
        resource_name = str(mapping.get("resourceName") or "")
        request_name = str(mapping.get("requestName") or "")
        container = containers.get(container_name)
        if container is None:
            errs.append(
                invalid_value(
                    f"{path}.containerName",
                    container_name,
                    "must match the name of an entry in spec.initContainers.name or spec.containers.name",
                )
            )
        elif resource_name not in ((container.get("resources") or {}).get("requests") or {}):
            errs.append(
                invalid_value(
                    f"{path}.resourceName",
                    resource_name,
                    "must match the extended resource name of an entry in "
                    "spec.initContainers.resources.requests or spec.containers.resources.requests",
                )
            )
        # upstream names the field without the mapping's index
        errs += [
            invalid_value(f"{PATH}.requestName", request_name, m) for m in dns1123_label_errors(request_name)
        ]
        key = (container_name, resource_name, request_name)
        if key in seen:
            errs.append(duplicate(f"{path}.containerName", container_name))
            errs.append(duplicate(f"{path}.resourceName", resource_name))
            errs.append(duplicate(f"{path}.requestName", request_name))
        seen.add(key)
    claim_name = str(status.get("resourceClaimName") or "")
    if not claim_name:
        errs.append(required(f"{PATH}.resourceClaimName"))
    else:
        errs += [
            invalid_value(f"{PATH}.resourceClaimName", claim_name, m)
            for m in dns1123_subdomain_errors(claim_name)
        ]
    return errs
