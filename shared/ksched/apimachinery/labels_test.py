"""Label requirements and selectors against apimachinery's rules and texts (1.36.2)."""

from __future__ import annotations

import msgspec
import pytest

from ksched.api.meta import LabelSelector
from ksched.apimachinery.labels import (
    Operator,
    Requirement,
    Selector,
    SelectorError,
    label_selector_as_selector,
    new_requirement,
    parse,
)

LABELS = {"app": "web", "tier": "fe", "version": "3"}
VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and "
    "must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex "
    "used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)
NAME_MSG = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
    "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)


def selector(raw: dict[str, object] | None) -> Selector:
    return label_selector_as_selector(None if raw is None else msgspec.convert(raw, LabelSelector))


# --- labels.Parse (the query grammar) ------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "matches"),
    [
        ("app=web", True),
        ("app==web", True),
        ("app!=web", False),
        ("app!=db", True),
        ("missing!=x", True),
        ("app in (web,db)", True),
        ("app notin (web)", False),
        ("missing notin (a)", True),
        ("app", True),
        ("!app", False),
        ("!missing", True),
        ("version>2", True),
        ("version<3", False),
        ("missing>1", False),
        ("app>1", False),  # a label that is not an integer never compares
        ("app=web,tier=fe", True),
        ("app=web,tier=be", False),
        ("app in (),tier", False),
        ("  app = web  ", True),
        ("", True),
    ],
)
def test_parsed_selectors_match(text: str, matches: bool) -> None:
    assert parse(text).matches(LABELS) is matches


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("app in (web", "unable to parse requirement: found '', expected: ',' or ')'"),
        ("app in web", "unable to parse requirement: found 'web' expected: '('"),
        ("!a=b", "found '=', expected: ',' or 'end of string'"),
        ("a b", "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt"),
        ("a=b,", "found '', expected: identifier after ','"),
        (",a", "found ',', expected: !, identifier, or 'end of string'"),
        (
            "a>b",
            'unable to parse requirement: values[0]: Invalid value: "b": '
            "for 'Gt', 'Lt' operators, the value must be an integer",
        ),
        ("-a=b", f'unable to parse requirement: <nil>: Invalid value: "-a": {NAME_MSG}'),
        ("a in (x,-y)", f'unable to parse requirement: values[0][a]: Invalid value: "-y": {VALUE_MSG}'),
    ],
)
def test_parse_errors_read_as_upstream(text: str, message: str) -> None:
    with pytest.raises(SelectorError) as info:
        parse(text)
    assert str(info.value) == message


def test_parsed_requirements_are_sorted_by_key_with_sorted_unique_values() -> None:
    got = parse("b in (y,x,y),a")
    assert got.requirements == (
        Requirement("a", Operator.EXISTS, ()),
        Requirement("b", Operator.IN, ("x", "y")),
    )


# --- labels.NewRequirement -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "op", "values", "message"),
    [
        ("bad key", "in", ["x"], f'key: Invalid value: "bad key": {NAME_MSG}'),
        ("k", "in", ["a b"], f'values[0][k]: Invalid value: "a b": {VALUE_MSG}'),
        (
            "k",
            "in",
            [],
            "values: Invalid value: null: for 'in', 'notin' operators, values set can't be empty",
        ),
        (
            "k",
            "=",
            ["a", "b"],
            'values: Invalid value: ["a","b"]: exact-match compatibility requires one single value',
        ),
        (
            "k",
            "exists",
            ["v"],
            'values: Invalid value: ["v"]: values set must be empty for exists and does not exist',
        ),
        (
            "k",
            "gt",
            ["1", "2"],
            "values: Invalid value: [\"1\",\"2\"]: for 'Gt', 'Lt' operators, exactly one value is required",
        ),
        (
            "k",
            "near",
            [],
            'operator: Unsupported value: "near": supported values: '
            '"in", "notin", "=", "==", "!=", "gt", "lt", "exists", "!"',
        ),
    ],
)
def test_new_requirement_rejects_what_upstream_rejects(
    key: str, op: str, values: list[str], message: str
) -> None:
    with pytest.raises(SelectorError) as info:
        new_requirement(key, op, values)
    assert str(info.value) == message


def test_several_problems_aggregate() -> None:
    with pytest.raises(SelectorError) as info:
        new_requirement("bad key", "in", ["a b"], "spec")
    assert str(info.value) == (
        f'[spec.key: Invalid value: "bad key": {NAME_MSG}, '
        f'spec.values[0][bad key]: Invalid value: "a b": {VALUE_MSG}]'
    )


# --- metav1.LabelSelectorAsSelector --------------------------------------------------------------


def test_nil_selects_nothing_and_empty_everything() -> None:
    assert selector(None).never and not selector(None).matches({})
    assert selector({}).empty and selector({}).matches(LABELS)
    assert not Selector.nothing().empty
    assert Selector.nothing().add(Requirement("a", Operator.EXISTS, ())).never


def test_match_labels_and_expressions_are_anded() -> None:
    sel = selector(
        {
            "matchLabels": {"app": "web"},
            "matchExpressions": [{"key": "tier", "operator": "In", "values": ["fe"]}],
        }
    )
    assert sel.matches(LABELS)
    assert not sel.matches({"app": "web", "tier": "be"})
    assert sel.requirements[0] == Requirement("app", Operator.EQUALS, ("web",))
    assert selector({"matchExpressions": [{"key": "x", "operator": "DoesNotExist"}]}).matches(LABELS)


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (
            {"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["1"]}]},
            '"Gt" is not a valid label selector operator',
        ),
        ({"matchLabels": {"bad key": "x"}}, f'key: Invalid value: "bad key": {NAME_MSG}'),
        (
            {"matchExpressions": [{"key": "k", "operator": "NotIn", "values": ["a b"]}]},
            f'values[0][k]: Invalid value: "a b": {VALUE_MSG}',
        ),
    ],
)
def test_invalid_label_selectors_are_errors(raw: dict[str, object], message: str) -> None:
    with pytest.raises(SelectorError) as info:
        selector(raw)
    assert str(info.value) == message


def test_from_set_is_unvalidated_equality() -> None:
    sel = Selector.from_set({"bad key": "a b"})
    assert sel.matches({"bad key": "a b"}) and not sel.matches({})
    assert Selector.from_set({}).empty
