"""Logging setup: text for people, JSON lines for tools; pod/node/profile/trace as fields.

:class:`ContextFilter` (on the handler) copies the pod being handled (:mod:`ksched.logcontext`) and
the service name onto every record; a value given explicitly with ``extra=`` wins. The JSON format
writes them as keys, the text format appends them as ``key=value`` (docs/metrics.md, "Logs").
"""

from __future__ import annotations

import json
import logging
import sys
import time

from ksched.logcontext import FIELD_NAMES, current_values

_FIELDS = (*FIELD_NAMES, "service")


def _known(record: logging.LogRecord, name: str) -> object:
    value = record.__dict__.get(name)
    return None if value == "" else value


class ContextFilter(logging.Filter):
    """Puts ``pod``, ``node``, ``profile``, ``trace_id`` (when bound) and ``service`` on each record."""

    def __init__(self, service: str = "") -> None:
        super().__init__()
        self.service = service

    def filter(self, record: logging.LogRecord) -> bool:
        attrs = record.__dict__
        values = current_values()
        if values is not None:
            for name, value in zip(FIELD_NAMES, values, strict=True):
                if value and attrs.get(name) in (None, ""):
                    attrs[name] = value
        if self.service and attrs.get("service") in (None, ""):
            attrs["service"] = self.service
        return True


class JsonFormatter(logging.Formatter):
    """One JSON object per line: ts, level, logger, msg, the known fields, and exc if any."""

    def format(self, record: logging.LogRecord) -> str:
        doc: dict[str, object] = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
            + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        for name in _FIELDS:
            value = _known(record, name)
            if value is not None:
                doc[name] = value
        if record.exc_info:
            doc["exc"] = self.formatException(record.exc_info)
        elif record.exc_text:
            doc["exc"] = record.exc_text
        return json.dumps(doc, default=str)


class TextFormatter(logging.Formatter):
    """The given format, then `` pod=ns/name node=n1 profile=p trace_id=t`` for the known fields
    (``service`` is left to the format, which names it already)."""

    def formatMessage(self, record: logging.LogRecord) -> str:
        line = super().formatMessage(record)
        parts = [line]
        for name in FIELD_NAMES:
            value = _known(record, name)
            if value is not None:
                text = str(value)
                parts.append(f"{name}={text if text.split() == [text] else json.dumps(text)}")
        return " ".join(parts)


def setup_logging(service: str, fmt: str = "text", level: str = "INFO") -> None:
    handler = logging.StreamHandler(sys.stderr)
    if fmt == "json":
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(TextFormatter(f"%(asctime)s {service} %(levelname)s %(name)s: %(message)s"))
    handler.addFilter(ContextFilter(service))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
