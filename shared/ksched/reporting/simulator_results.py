"""kube-scheduler-simulator's result annotations: a :class:`CycleRecord` as the pod annotations its
debuggable scheduler writes (``kube-scheduler-simulator.sigs.k8s.io/filter-result`` ...), with the
same keys and JSON shapes, so its web UI and the scripts written for it read ksched's decisions.

Values are JSON as Go's ``encoding/json`` writes them (compact, map keys sorted, ``<``, ``>`` and ``&``
escaped); scores are strings. ``result-history`` is the list of every attempt's results, the oldest
dropped while it exceeds the API server's 256 KiB annotation limit (the simulator's
``updateResultHistory``). docs/simulate.md lists the keys.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ksched.framework.record import CycleRecord

PREFIX = "kube-scheduler-simulator.sigs.k8s.io/"
PRE_FILTER_STATUS = PREFIX + "prefilter-result-status"
PRE_FILTER_RESULT = PREFIX + "prefilter-result"
FILTER = PREFIX + "filter-result"
POST_FILTER = PREFIX + "postfilter-result"
PRE_SCORE = PREFIX + "prescore-result"
SCORE = PREFIX + "score-result"
FINAL_SCORE = PREFIX + "finalscore-result"
RESERVE = PREFIX + "reserve-result"
PERMIT = PREFIX + "permit-result"
PERMIT_TIMEOUT = PREFIX + "permit-result-timeout"
PRE_BIND = PREFIX + "prebind-result"
BIND = PREFIX + "bind-result"
SELECTED_NODE = PREFIX + "selected-node"
HISTORY = PREFIX + "result-history"

TOTAL_ANNOTATION_SIZE_LIMIT = 256 * 1024
"""apimachinery's ``TotalAnnotationSizeLimitB``."""

_GO_ESCAPES = str.maketrans(
    {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}
)


def go_json(value: Any) -> str:
    """``value`` as Go's ``json.Marshal`` writes it (maps with sorted keys, HTML characters escaped)."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return text.translate(_GO_ESCAPES)


def result_annotations(record: CycleRecord) -> dict[str, str]:
    """Every result annotation of one attempt (the simulator's ``GetStoredResult``)."""
    return {
        PRE_FILTER_RESULT: go_json(record.pre_filter_result),
        PRE_FILTER_STATUS: go_json(record.pre_filter_status),
        FILTER: go_json(record.filter),
        POST_FILTER: go_json(record.post_filter),
        PRE_SCORE: go_json(record.pre_score),
        SCORE: go_json(record.score),
        FINAL_SCORE: go_json(record.final_score),
        RESERVE: go_json(record.reserve),
        PERMIT_TIMEOUT: go_json(record.permit_timeout),
        PERMIT: go_json(record.permit),
        PRE_BIND: go_json(record.pre_bind),
        BIND: go_json(record.bind),
        SELECTED_NODE: record.selected_node,
    }


def with_binding(results: Mapping[str, str], record: CycleRecord) -> dict[str, str]:
    """A scheduling cycle's results completed with the binding cycle's PreBind and Bind results."""
    out = dict(results)
    out[PRE_BIND] = go_json(record.pre_bind)
    out[BIND] = go_json(record.bind)
    return out


def with_history(results: Mapping[str, str], current: Mapping[str, str]) -> dict[str, str]:
    """``results`` plus ``result-history``: the pod's ``current`` history with ``results`` appended,
    the oldest entries dropped while it is larger than the annotation limit. An unreadable history
    starts afresh."""
    try:
        history = json.loads(current.get(HISTORY, "[]"))
    except ValueError:
        history = []
    if not isinstance(history, list):
        history = []
    history.append(dict(results))
    out = dict(results)
    while history:
        text = go_json(history)
        if len(text.encode()) <= TOTAL_ANNOTATION_SIZE_LIMIT:
            out[HISTORY] = text
            break
        history = history[1:]
    return out
