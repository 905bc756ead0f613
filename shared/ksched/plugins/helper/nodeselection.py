"""Node selectors of :mod:`ksched.apimachinery.nodeselector` evaluated on rows of the snapshot.

Each function answers, for many nodes at once through :class:`~ksched.plugins.helper.nodeindex.NodeIndex`,
what the scalar ``matches`` of the same object answers for one node.
"""

from __future__ import annotations

import numpy as np

from ksched.apimachinery.labels import Operator, Requirement
from ksched.apimachinery.nodeselector import (
    OBJECT_NAME_FIELD,
    FieldRequirement,
    NodeSelector,
    PreferredSchedulingTerms,
    RequiredNodeAffinity,
    Term,
)
from ksched.apimachinery.strconv import parse_go_int64
from ksched.framework.interfaces import BoolArray, Int64Array, Rows
from ksched.plugins.helper.nodeindex import NodeIndex


def _none(rows: Rows) -> BoolArray:
    return np.zeros(len(rows), dtype=np.bool_)


def requirement_rows(req: Requirement, index: NodeIndex, rows: Rows) -> BoolArray:
    """A label requirement of a node selector term (In, NotIn, Exists, DoesNotExist, Gt, Lt)."""
    codes, code_of = index.label_codes(req.key)
    row_codes = codes[rows]
    op = req.operator
    if op in (Operator.IN, Operator.NOT_IN):
        wanted = [code_of[v] for v in req.values if v in code_of]
        hit = np.isin(row_codes, wanted) if wanted else _none(rows)
        return hit if op is Operator.IN else ~hit
    if op is Operator.EXISTS:
        return np.asarray(row_codes >= 0)
    if op is Operator.DOES_NOT_EXIST:
        return np.asarray(row_codes < 0)
    bound = parse_go_int64(req.values[0]) if len(req.values) == 1 else None
    if bound is None:
        return _none(rows)
    numbers, valid = index.label_ints(req.key)
    row_numbers = numbers[rows]
    cmp = row_numbers > bound if op is Operator.GREATER_THAN else row_numbers < bound
    return np.asarray(valid[rows] & cmp)


def field_rows(req: FieldRequirement, index: NodeIndex, rows: Rows) -> BoolArray:
    if req.key != OBJECT_NAME_FIELD:
        same = req.value == ""
        return np.full(len(rows), same == req.equal, dtype=np.bool_)
    target = index.row_of(req.value)
    hit = rows == target if target is not None else _none(rows)
    return np.asarray(hit if req.equal else ~hit)


def term_rows(term: Term, index: NodeIndex, rows: Rows) -> BoolArray:
    if term.errors:
        return _none(rows)
    out = np.ones(len(rows), dtype=np.bool_)
    for req in term.labels.requirements if term.labels is not None else ():
        out &= requirement_rows(req, index, rows)
    for freq in term.fields or ():
        out &= field_rows(freq, index, rows)
    return out


def selector_rows(selector: NodeSelector, index: NodeIndex, rows: Rows) -> BoolArray:
    out = _none(rows)
    for term in selector.terms:
        out |= term_rows(term, index, rows)
    return out


def preferred_rows(preferred: PreferredSchedulingTerms, index: NodeIndex, rows: Rows) -> Int64Array:
    out = np.zeros(len(rows), dtype=np.int64)
    for term, weight in preferred.terms:
        out += term_rows(term, index, rows).astype(np.int64) * weight
    return out


def required_affinity_rows(required: RequiredNodeAffinity, index: NodeIndex, rows: Rows) -> BoolArray:
    out = np.ones(len(rows), dtype=np.bool_)
    for key, value in required.node_selector:
        codes, code_of = index.label_codes(key)
        code = code_of.get(value)
        if code is None:
            return _none(rows)
        out &= codes[rows] == code
    if required.affinity is not None:
        out &= selector_rows(required.affinity, index, rows)
    return out
