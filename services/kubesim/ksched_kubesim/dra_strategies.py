"""resource.k8s.io/v1 kinds (DeviceClass, ResourceSlice, ResourceClaim, ResourceClaimTemplate): the
API server's defaults and validation (upstream ``pkg/apis/resource/v1/defaults.go`` and
``pkg/apis/resource/validation``), the parts the scheduler and its users meet."""

from __future__ import annotations

import copy
from typing import Any

from ksched.api.timestamps import rfc3339
from ksched.apimachinery.field import ErrorType
from ksched.apimachinery.validation import dns1123_label_errors, dns1123_subdomain_errors, label_key_errors
from ksched.plugins.dynamicresources.cel import admission_error

from .errors import FieldError, duplicate, forbidden_field, invalid_value, not_supported, required
from .jsonio import JSON
from .resources import ResourceType
from .strategies import Lookup, Strategy

ALLOCATION_MODES = ("All", "ExactCount")
CONFIG_SOURCES = ("FromClaim", "FromClass")
TOLERATION_OPERATORS = ("Equal", "Exists")
MAX_SELECTOR_LENGTH = 10 * 1024
MAX_RESERVED_FOR = 256
_EXACTLY_ONE = "exactly one of `exactly` or `firstAvailable` is required"
_REQUEST_REF = (
    "must be the name of a request in the claim or the name of a request and a subrequest separated by '/'"
)
_SLICE_PLACEMENT = (
    "exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required"
)


# --- defaults ---------------------------------------------------------------------------------------


def _default_request(request: JSON) -> None:
    """SetDefaults_ExactDeviceRequest / _DeviceSubRequest: ExactCount, count 1."""
    if not request.get("allocationMode"):
        request["allocationMode"] = "ExactCount"
    if request["allocationMode"] == "ExactCount" and not request.get("count"):
        request["count"] = 1


def default_claim_spec(spec: Any) -> None:
    """Defaults of every request and subrequest of a claim spec (in place)."""
    devices = spec.get("devices") if isinstance(spec, dict) else None
    for request in (devices or {}).get("requests") or []:
        if not isinstance(request, dict):
            continue
        if isinstance(request.get("exactly"), dict):
            _default_request(request["exactly"])
        for sub in request.get("firstAvailable") or []:
            if isinstance(sub, dict):
                _default_request(sub)


def _default_taints(devices: Any) -> None:
    """SetDefaults_DeviceTaint: ``timeAdded`` is now."""
    for device in devices or []:
        for taint in (device or {}).get("taints") or []:
            if isinstance(taint, dict) and not taint.get("timeAdded"):
                taint["timeAdded"] = rfc3339()


# --- validation -------------------------------------------------------------------------------------


def _driver_errors(path: str, driver: Any) -> list[FieldError]:
    """ValidateCSIDriverName (DRA driver names follow the CSI rules)."""
    if not driver:
        return [required(path)]
    errs: list[FieldError] = []
    if len(driver) > 63:
        errs.append(invalid_value(path, driver, "must be no more than 63 characters"))
    errs += [invalid_value(path, driver, msg) for msg in dns1123_subdomain_errors(str(driver).lower())]
    return errs


def _selector_errors(path: str, selectors: Any) -> list[FieldError]:
    errs: list[FieldError] = []
    for i, selector in enumerate(selectors or []):
        cel = (selector or {}).get("cel")
        if not isinstance(cel, dict):
            errs.append(required(f"{path}[{i}].cel"))
            continue
        expression = cel.get("expression") or ""
        field = f"{path}[{i}].cel.expression"
        if len(expression) > MAX_SELECTOR_LENGTH:
            errs.append(invalid_value(field, expression, f"must have at most {MAX_SELECTOR_LENGTH} bytes"))
            continue
        if not expression:
            errs.append(required(field, "expression is required"))
            continue
        message = admission_error(expression)
        if message is not None:
            errs.append(invalid_value(field, expression, message))
    return errs


def _allocation_mode_errors(path: str, request: JSON) -> list[FieldError]:
    mode, count = request.get("allocationMode"), request.get("count") or 0
    if mode == "All":
        if count:
            return [
                invalid_value(f"{path}.count", count, "must not be specified when allocationMode is 'All'")
            ]
        return []
    if mode == "ExactCount":
        return [] if count > 0 else [invalid_value(f"{path}.count", count, "must be greater than zero")]
    return [not_supported(f"{path}.allocationMode", mode or "", ALLOCATION_MODES)]


def _toleration_errors(path: str, tolerations: Any) -> list[FieldError]:
    errs: list[FieldError] = []
    for i, tol in enumerate(tolerations or []):
        operator = (tol or {}).get("operator") or "Equal"
        if operator not in TOLERATION_OPERATORS:
            errs.append(not_supported(f"{path}[{i}].operator", operator, TOLERATION_OPERATORS))
    return errs


def _class_name_errors(path: str, name: Any) -> list[FieldError]:
    if not name:
        return [required(path)]
    return [invalid_value(path, name, msg) for msg in dns1123_subdomain_errors(str(name))]


def _request_body_errors(path: str, request: JSON) -> list[FieldError]:
    errs = _class_name_errors(f"{path}.deviceClassName", request.get("deviceClassName"))
    errs += _selector_errors(f"{path}.selectors", request.get("selectors"))
    errs += _allocation_mode_errors(path, request)
    errs += _toleration_errors(f"{path}.tolerations", request.get("tolerations"))
    return errs


def _name_errors(path: str, name: Any) -> list[FieldError]:
    if not name:
        return [required(path)]
    return [invalid_value(path, name, msg) for msg in dns1123_label_errors(str(name))]


def request_names(spec: Any) -> dict[str, set[str] | None]:
    """Request name -> its subrequest names (None for an ``exactly`` request)."""
    names: dict[str, set[str] | None] = {}
    for request in ((spec or {}).get("devices") or {}).get("requests") or []:
        subs = request.get("firstAvailable") or []
        names[request.get("name") or ""] = {s.get("name") or "" for s in subs} if subs else None
    return names


def _ref_errors(field: str, ref: Any, names: dict[str, set[str] | None]) -> list[FieldError]:
    """validateRequestNameRef: ``request`` or ``request/subrequest`` of this claim."""
    parts = str(ref or "").split("/")
    if len(parts) > 2:
        return [invalid_value(field, ref, _REQUEST_REF)]
    errs: list[FieldError] = []
    for part in parts:
        errs += _name_errors(field, part)
    subs = names.get(parts[0])
    known = parts[0] in names and (len(parts) == 1 or (subs is not None and parts[1] in subs))
    if not known:
        errs.append(invalid_value(field, ref, _REQUEST_REF))
    return errs


def _request_ref_errors(path: str, refs: Any, names: dict[str, set[str] | None]) -> list[FieldError]:
    errs: list[FieldError] = []
    for j, ref in enumerate(refs or []):
        errs += _ref_errors(f"{path}[{j}]", ref, names)
    return errs


def _opaque_errors(path: str, config: JSON) -> list[FieldError]:
    opaque = config.get("opaque")
    if not isinstance(opaque, dict):
        return [required(f"{path}.opaque")]
    errs = _driver_errors(f"{path}.opaque.driver", opaque.get("driver"))
    if opaque.get("parameters") is None:
        errs.append(required(f"{path}.opaque.parameters"))
    return errs


def claim_spec_errors(spec: Any, path: str) -> list[FieldError]:
    """validateResourceClaimSpec: requests, constraints and configurations of a claim."""
    devices = (spec or {}).get("devices") or {}
    errs: list[FieldError] = []
    seen: set[str] = set()
    for i, request in enumerate(devices.get("requests") or []):
        rpath = f"{path}.devices.requests[{i}]"
        name = request.get("name") or ""
        errs += _name_errors(f"{rpath}.name", name)
        if name and name in seen:
            errs.append(duplicate(f"{rpath}.name", name))
        seen.add(name)
        exactly, first = request.get("exactly"), request.get("firstAvailable") or []
        if exactly is None and not first:
            errs.append(required(rpath, _EXACTLY_ONE))
        elif exactly is not None and first:
            errs.append(invalid_value(rpath, None, f"{_EXACTLY_ONE}, but multiple fields are set"))
        elif first:
            sub_seen: set[str] = set()
            for j, sub in enumerate(first):
                spath = f"{rpath}.firstAvailable[{j}]"
                sub_name = sub.get("name") or ""
                errs += _name_errors(f"{spath}.name", sub_name)
                if sub_name and sub_name in sub_seen:
                    errs.append(duplicate(f"{spath}.name", sub_name))
                sub_seen.add(sub_name)
                errs += _request_body_errors(spath, sub)
        else:
            errs += _request_body_errors(f"{rpath}.exactly", exactly)
    names = request_names(spec)
    for i, constraint in enumerate(devices.get("constraints") or []):
        cpath = f"{path}.devices.constraints[{i}]"
        errs += _request_ref_errors(f"{cpath}.requests", constraint.get("requests"), names)
        if not constraint.get("matchAttribute") and not constraint.get("distinctAttribute"):
            errs.append(
                required(
                    cpath,
                    'exactly one of "matchAttribute" or "distinctAttribute" is required, '
                    "but multiple fields are set",
                )
            )
    for i, config in enumerate(devices.get("config") or []):
        cfg_path = f"{path}.devices.config[{i}]"
        errs += _request_ref_errors(f"{cfg_path}.requests", config.get("requests"), names)
        errs += _opaque_errors(cfg_path, config)
    return errs


def _allocation_errors(allocation: JSON, names: dict[str, set[str] | None]) -> list[FieldError]:
    """validateAllocationResult for a new allocation."""
    path = "status.allocation.devices"
    devices = allocation.get("devices") or {}
    errs: list[FieldError] = []
    for i, result in enumerate(devices.get("results") or []):
        rpath = f"{path}.results[{i}]"
        errs += _ref_errors(f"{rpath}.request", result.get("request"), names)
        errs += _driver_errors(f"{rpath}.driver", result.get("driver"))
        if not result.get("pool"):
            errs.append(required(f"{rpath}.pool"))
        errs += _name_errors(f"{rpath}.device", result.get("device"))
    for i, config in enumerate(devices.get("config") or []):
        cpath = f"{path}.config[{i}]"
        source = config.get("source") or ""
        if not source:
            errs.append(required(f"{cpath}.source"))
        elif source not in CONFIG_SOURCES:
            errs.append(not_supported(f"{cpath}.source", source, CONFIG_SOURCES))
        errs += _request_ref_errors(f"{cpath}.requests", config.get("requests"), names)
        errs += _opaque_errors(cpath, config)
    return errs


# --- Go's view of values in "field is immutable" errors ---------------------------------------------

#: internal (untagged) Go structs of pkg/apis/resource: JSON key -> (Go field name, nested struct)
_STRUCTS: dict[str, tuple[tuple[str, str, str | None], ...]] = {
    "AllocationResult": (
        ("devices", "Devices", "DeviceAllocationResult"),
        ("nodeSelector", "NodeSelector", "NodeSelector"),
        ("allocationTimestamp", "AllocationTimestamp", None),
    ),
    "DeviceAllocationResult": (
        ("results", "Results", "DeviceRequestAllocationResult"),
        ("config", "Config", "DeviceAllocationConfiguration"),
    ),
    "DeviceRequestAllocationResult": (
        ("request", "Request", None),
        ("driver", "Driver", None),
        ("pool", "Pool", None),
        ("device", "Device", None),
        ("adminAccess", "AdminAccess", None),
        ("tolerations", "Tolerations", "DeviceToleration"),
        ("bindingConditions", "BindingConditions", None),
        ("bindingFailureConditions", "BindingFailureConditions", None),
        ("shareID", "ShareID", None),
        ("consumedCapacity", "ConsumedCapacity", None),
    ),
    "DeviceAllocationConfiguration": (
        ("source", "Source", None),
        ("requests", "Requests", None),
        ("opaque", "Opaque", "OpaqueDeviceConfiguration"),
    ),
    "OpaqueDeviceConfiguration": (("driver", "Driver", None), ("parameters", "Parameters", None)),
    "DeviceToleration": (
        ("key", "Key", None),
        ("operator", "Operator", None),
        ("value", "Value", None),
        ("effect", "Effect", None),
        ("tolerationSeconds", "TolerationSeconds", None),
    ),
    "NodeSelector": (("nodeSelectorTerms", "NodeSelectorTerms", "NodeSelectorTerm"),),
    "NodeSelectorTerm": (
        ("matchExpressions", "MatchExpressions", "NodeSelectorRequirement"),
        ("matchFields", "MatchFields", "NodeSelectorRequirement"),
    ),
    "NodeSelectorRequirement": (
        ("key", "Key", None),
        ("operator", "Operator", None),
        ("values", "Values", None),
    ),
}
_STRING_FIELDS = {"Request", "Driver", "Pool", "Device", "Source", "Key", "Operator", "Value", "Effect"}


def go_internal(value: Any, struct: str) -> Any:
    """``value`` shaped as ``json.Marshal`` prints the internal Go struct (field names, nil as null)."""
    if isinstance(value, list):
        return [go_internal(item, struct) for item in value] if value else None
    if not isinstance(value, dict):
        return value
    out: dict[str, Any] = {}
    for key, go_name, nested in _STRUCTS[struct]:
        item = value.get(key)
        if item is None:
            out[go_name] = "" if go_name in _STRING_FIELDS else None
        elif nested is not None:
            out[go_name] = go_internal(item, nested)
        else:
            out[go_name] = item if item != [] else None
    return out


# --- strategies ---------------------------------------------------------------------------------------


def _extended_resource_name_errors(name: Any) -> list[FieldError]:
    """``spec.extendedResourceName`` must name an extended resource (``IsExtendedResourceName``)."""
    if name is None:
        return []
    text = str(name)
    native = "/" not in text or "kubernetes.io/" in text
    if native or text.startswith("requests.") or label_key_errors("requests." + text):
        return [invalid_value("spec.extendedResourceName", name, "must be a valid extended resource name")]
    return []


class DeviceClassStrategy(Strategy):
    def validate(self, obj: JSON, lookup: Lookup) -> list[FieldError]:
        spec = obj.get("spec") or {}
        errs = _selector_errors("spec.selectors", spec.get("selectors"))
        for i, config in enumerate(spec.get("config") or []):
            errs += _opaque_errors(f"spec.config[{i}]", config)
        errs += _extended_resource_name_errors(spec.get("extendedResourceName"))
        return errs

    def validate_update(self, new: JSON, old: JSON, lookup: Lookup) -> list[FieldError]:
        new_spec = new.get("spec") or {}
        if new_spec.get("selectors") == (old.get("spec") or {}).get("selectors"):
            return _extended_resource_name_errors(new_spec.get("extendedResourceName"))
        return self.validate(new, lookup)


class ResourceSliceStrategy(Strategy):
    def default(self, obj: JSON) -> None:
        _default_taints((obj.get("spec") or {}).get("devices"))

    def validate(self, obj: JSON, lookup: Lookup) -> list[FieldError]:
        spec = obj.get("spec") or {}
        errs = _driver_errors("spec.driver", spec.get("driver"))
        pool = spec.get("pool") or {}
        if not pool.get("name"):
            errs.append(required("spec.pool.name"))
        else:
            for part in str(pool["name"]).split("/"):
                errs += [invalid_value("spec.pool.name", part, m) for m in dns1123_subdomain_errors(part)]
        if (pool.get("generation") or 0) < 0:
            errs.append(
                invalid_value(
                    "spec.pool.generation", pool.get("generation"), "must be greater than or equal to 0"
                )
            )
        if (pool.get("resourceSliceCount") or 0) <= 0:
            count = pool.get("resourceSliceCount") or 0
            errs.append(invalid_value("spec.pool.resourceSliceCount", count, "must be greater than zero"))
        placement = [
            f"`{key}`"
            for key in ("nodeName", "nodeSelector", "allNodes", "perDeviceNodeSelection")
            if spec.get(key) not in (None, "", False)
        ]
        if not placement:
            errs.append(required("spec", _SLICE_PLACEMENT))
        elif len(placement) > 1:
            errs.append(
                invalid_value(
                    "spec",
                    "{" + ", ".join(placement) + "}",
                    f"{_SLICE_PLACEMENT}, but multiple fields are set",
                )
            )
        if spec.get("sharedCounters") is not None and spec.get("devices") is not None:
            errs.append(invalid_value("spec", "", "only one of `sharedCounters` or `devices` is allowed"))
        seen: set[str] = set()
        for i, device in enumerate(spec.get("devices") or []):
            name = (device or {}).get("name") or ""
            errs += _name_errors(f"spec.devices[{i}].name", name)
            if name and name in seen:
                errs.append(duplicate(f"spec.devices[{i}]", name))
            seen.add(name)
        return errs

    def validate_update(self, new: JSON, old: JSON, lookup: Lookup) -> list[FieldError]:
        errs = self.validate(new, lookup)
        new_spec, old_spec = new.get("spec") or {}, old.get("spec") or {}
        for path, a, b in (
            (
                "spec.pool.name",
                (new_spec.get("pool") or {}).get("name"),
                (old_spec.get("pool") or {}).get("name"),
            ),
            ("spec.driver", new_spec.get("driver"), old_spec.get("driver")),
            ("spec.nodeName", new_spec.get("nodeName"), old_spec.get("nodeName")),
        ):
            if a != b:
                errs.append(invalid_value(path, a or "", "field is immutable"))
        return errs


class ResourceClaimStrategy(Strategy):
    def default(self, obj: JSON) -> None:
        default_claim_spec(obj.get("spec"))

    def prepare_create(self, obj: JSON, lookup: Lookup) -> None:
        obj["status"] = {}

    def prepare_update(self, new: JSON, old: JSON) -> None:
        super().prepare_update(new, old)
        default_claim_spec(new.get("spec"))

    def validate(self, obj: JSON, lookup: Lookup) -> list[FieldError]:
        return claim_spec_errors(obj.get("spec"), "spec")

    def validate_update(self, new: JSON, old: JSON, lookup: Lookup) -> list[FieldError]:
        if new.get("spec") != old.get("spec"):
            return [invalid_value("spec", new.get("spec"), "field is immutable")]
        return []

    def validate_status_update(self, new: JSON, old: JSON, lookup: Lookup) -> list[FieldError]:
        status, old_status = new.get("status") or {}, old.get("status") or {}
        errs: list[FieldError] = []
        reserved = status.get("reservedFor") or []
        if len(reserved) > MAX_RESERVED_FOR:
            errs.append(
                FieldError(
                    ErrorType.TOO_MANY,
                    "status.reservedFor",
                    len(reserved),
                    f"must have at most {MAX_RESERVED_FOR} items",
                )
            )
        uids: set[str] = set()
        for i, ref in enumerate(reserved):
            path = f"status.reservedFor[{i}]"
            for key in ("resource", "name", "uid"):
                if not ref.get(key):
                    errs.append(required(f"{path}.{key}"))
            uid = ref.get("uid") or ""
            if uid and uid in uids:
                errs.append(duplicate(path, ref))
            uids.add(uid)
        allocation, old_allocation = status.get("allocation"), old_status.get("allocation")
        if reserved:
            if allocation is None:
                errs.append(
                    forbidden_field("status.reservedFor", "may not be specified when `allocated` is not set")
                )
            elif (new.get("metadata") or {}).get("deletionTimestamp"):
                old_uids = {r.get("uid") for r in old_status.get("reservedFor") or []}
                if uids - old_uids:
                    errs.append(
                        forbidden_field(
                            "status.reservedFor",
                            "new entries may not be added while `deallocationRequested` or "
                            "`deletionTimestamp` are set",
                        )
                    )
        if allocation is not None and old_allocation is not None:
            if allocation != old_allocation:
                shown = go_internal(allocation, "AllocationResult")
                errs.append(invalid_value("status.allocation", shown, "field is immutable"))
        elif allocation is not None:
            errs += _allocation_errors(allocation, request_names(new.get("spec")))
        return errs


class ResourceClaimTemplateStrategy(Strategy):
    def default(self, obj: JSON) -> None:
        spec = obj.get("spec")
        if isinstance(spec, dict):
            default_claim_spec(spec.get("spec"))

    def prepare_create(self, obj: JSON, lookup: Lookup) -> None:
        spec = obj.get("spec")
        if isinstance(spec, dict):
            spec.setdefault("metadata", {})

    def validate(self, obj: JSON, lookup: Lookup) -> list[FieldError]:
        return claim_spec_errors((obj.get("spec") or {}).get("spec"), "spec.spec")

    def prepare_update(self, new: JSON, old: JSON) -> None:
        self.default(new)
        spec = new.get("spec")
        if isinstance(spec, dict):
            spec.setdefault("metadata", {})

    def validate_update(self, new: JSON, old: JSON, lookup: Lookup) -> list[FieldError]:
        if new.get("spec") != old.get("spec"):
            return [invalid_value("spec", copy.deepcopy(new.get("spec")), "field is immutable")]
        return []


_DRA: dict[str, type[Strategy]] = {
    "deviceclasses.resource.k8s.io": DeviceClassStrategy,
    "resourceslices.resource.k8s.io": ResourceSliceStrategy,
    "resourceclaims.resource.k8s.io": ResourceClaimStrategy,
    "resourceclaimtemplates.resource.k8s.io": ResourceClaimTemplateStrategy,
}


def dra_strategy(rt: ResourceType) -> Strategy | None:
    """The strategy of a resource.k8s.io kind, None for other kinds."""
    kind = _DRA.get(rt.storage_key)
    return kind(rt) if kind is not None else None
