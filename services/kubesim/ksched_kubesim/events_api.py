"""Events: the core/v1 shape they are stored in and the events.k8s.io/v1 view of the same objects."""

from __future__ import annotations

from typing import Any

from .errors import FieldError, invalid_value, not_supported, required
from .jsonio import JSON

CORE_ORDER = (
    "metadata",
    "involvedObject",
    "reason",
    "message",
    "source",
    "firstTimestamp",
    "lastTimestamp",
    "count",
    "type",
    "eventTime",
    "series",
    "action",
    "related",
    "reportingComponent",
    "reportingInstance",
)
REFERENCE_ORDER = ("kind", "namespace", "name", "uid", "apiVersion", "resourceVersion", "fieldPath")


def _reference(ref: Any) -> JSON:
    if not isinstance(ref, dict):
        return {}
    return {k: ref[k] for k in REFERENCE_ORDER if ref.get(k)} | {
        k: v for k, v in ref.items() if k not in REFERENCE_ORDER
    }


def normalize_core(obj: JSON) -> JSON:
    """A core/v1 Event with the fields Go always serialises (source, timestamps, reporting*)."""
    out: JSON = {"metadata": obj.get("metadata") or {}}
    out["involvedObject"] = _reference(obj.get("involvedObject"))
    for key in ("reason", "message"):
        if obj.get(key):
            out[key] = obj[key]
    out["source"] = obj.get("source") or {}
    out["firstTimestamp"] = obj.get("firstTimestamp")
    out["lastTimestamp"] = obj.get("lastTimestamp")
    if obj.get("count"):
        out["count"] = obj["count"]
    if obj.get("type"):
        out["type"] = obj["type"]
    out["eventTime"] = obj.get("eventTime")
    for key in ("series", "action", "related"):
        if obj.get(key):
            out[key] = obj[key] if key != "related" else _reference(obj[key])
    out["reportingComponent"] = obj.get("reportingComponent") or ""
    out["reportingInstance"] = obj.get("reportingInstance") or ""
    for key, value in obj.items():
        if key not in CORE_ORDER and key not in ("kind", "apiVersion"):
            out[key] = value
    return out


def core_to_events(obj: JSON) -> JSON:
    """The events.k8s.io/v1 rendering of a stored core/v1 Event."""
    out: JSON = {"metadata": obj.get("metadata") or {}, "eventTime": obj.get("eventTime")}
    if obj.get("series"):
        series = obj["series"]
        out["series"] = {"count": series.get("count", 0), "lastObservedTime": series.get("lastObservedTime")}
    if obj.get("reportingComponent"):
        out["reportingController"] = obj["reportingComponent"]
    if obj.get("reportingInstance"):
        out["reportingInstance"] = obj["reportingInstance"]
    for key in ("action", "reason"):
        if obj.get(key):
            out[key] = obj[key]
    out["regarding"] = _reference(obj.get("involvedObject"))
    if obj.get("related"):
        out["related"] = _reference(obj["related"])
    if obj.get("message"):
        out["note"] = obj["message"]
    if obj.get("type"):
        out["type"] = obj["type"]
    out["deprecatedSource"] = obj.get("source") or {}
    out["deprecatedFirstTimestamp"] = obj.get("firstTimestamp")
    out["deprecatedLastTimestamp"] = obj.get("lastTimestamp")
    if obj.get("count"):
        out["deprecatedCount"] = obj["count"]
    return out


def events_to_core(obj: JSON) -> JSON:
    """The core/v1 shape of an events.k8s.io/v1 Event (how it is stored)."""
    core: JSON = {
        "metadata": obj.get("metadata") or {},
        "involvedObject": obj.get("regarding") or {},
        "reason": obj.get("reason"),
        "message": obj.get("note"),
        "source": obj.get("deprecatedSource") or {},
        "firstTimestamp": obj.get("deprecatedFirstTimestamp"),
        "lastTimestamp": obj.get("deprecatedLastTimestamp"),
        "count": obj.get("deprecatedCount"),
        "type": obj.get("type"),
        "eventTime": obj.get("eventTime"),
        "series": obj.get("series"),
        "action": obj.get("action"),
        "related": obj.get("related"),
        "reportingComponent": obj.get("reportingController"),
        "reportingInstance": obj.get("reportingInstance"),
    }
    return normalize_core(core)


EVENT_TYPES = ["Normal", "Warning"]


def validate(obj: JSON, via_events_api: bool) -> list[FieldError]:
    """The checks the API server makes on an Event (the events.k8s.io ones when eventTime is set)."""
    errs: list[FieldError] = []
    meta = obj.get("metadata") or {}
    involved = obj.get("involvedObject") or {}
    prefix = "regarding" if via_events_api else "involvedObject"
    ns = involved.get("namespace")
    if ns and ns != meta.get("namespace"):
        errs.append(invalid_value(f"{prefix}.namespace", ns, "does not match event.namespace"))
    if via_events_api and not obj.get("eventTime"):
        errs.append(required("eventTime"))
    if obj.get("eventTime"):
        for field, view_field in (
            ("reportingComponent", "reportingController"),
            ("reportingInstance", "reportingInstance"),
            ("action", "action"),
            ("reason", "reason"),
        ):
            if not obj.get(field):
                errs.append(required(view_field if via_events_api else field))
        event_type = obj.get("type")
        if event_type not in EVENT_TYPES:
            errs.append(not_supported("type", event_type or "", EVENT_TYPES))
    return errs
