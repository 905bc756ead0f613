"""Label and field selector parsing and matching (apimachinery grammar and error texts)."""

from __future__ import annotations

import pytest
from ksched_kubesim.errors import ApiError
from ksched_kubesim.selectors import (
    FieldSelector,
    LabelSelector,
    SelectorSyntaxError,
    match_label_selector_object,
    parse_field_selector,
    parse_label_selector,
)

LABELS = {"app": "web", "tier": "fe", "version": "3"}


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
        ("app=web,tier=fe", True),
        ("app=web,tier=be", False),
        ("app in (),tier", False),
        ("  app = web  ", True),
        ("", True),
    ],
)
def test_label_selector_matching(text: str, matches: bool) -> None:
    assert LabelSelector(text).matches(LABELS) is matches


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("app in (web", "unable to parse requirement: found '', expected: ',' or ')'"),
        ("app in web", "unable to parse requirement: found 'web' expected: '('"),
        ("!a=b", "found '=', expected: ',' or 'end of string'"),
        ("a b", "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt"),
        ("a=b,", "found '', expected: identifier after ','"),
        (",a", "found ',', expected: !, identifier, or 'end of string'"),
        ("a>b", "for 'Gt', 'Lt' operators, the value must be an integer"),
    ],
)
def test_label_selector_errors(text: str, message: str) -> None:
    with pytest.raises(SelectorSyntaxError) as info:
        LabelSelector(text)
    assert message in str(info.value)


def test_bad_label_key_is_reported() -> None:
    with pytest.raises(SelectorSyntaxError) as info:
        LabelSelector("bad key!=x")
    assert "unable to parse requirement" in str(info.value)


def test_parse_label_selector_raises_400() -> None:
    with pytest.raises(ApiError) as info:
        parse_label_selector("app in (web")
    assert info.value.code == 400
    assert parse_label_selector("") is None


def test_field_selector_terms() -> None:
    sel = FieldSelector(
        "spec.nodeName=,status.phase!=Succeeded,status.phase!=Failed", ("spec.nodeName", "status.phase")
    )
    assert sel.matches({"spec.nodeName": "", "status.phase": "Pending"})
    assert not sel.matches({"spec.nodeName": "n1", "status.phase": "Pending"})
    assert not sel.matches({"spec.nodeName": "", "status.phase": "Failed"})
    assert FieldSelector("a==x", ("a",)).matches({"a": "x"})
    assert FieldSelector("a=x\\,y", ("a",)).matches({"a": "x,y"})


def test_field_selector_errors() -> None:
    with pytest.raises(ApiError) as info:
        parse_field_selector("spec.foo=bar", ("spec.nodeName",))
    assert info.value.body["message"] == "field label not supported: spec.foo"
    with pytest.raises(ApiError) as info:
        parse_field_selector("justaname", ("justaname",))
    assert info.value.body["message"] == "invalid selector: 'justaname'; can't understand 'justaname'"


def test_label_selector_objects() -> None:
    selector = {
        "matchLabels": {"app": "web"},
        "matchExpressions": [{"key": "tier", "operator": "In", "values": ["fe"]}],
    }
    assert match_label_selector_object(selector, LABELS)
    assert not match_label_selector_object({"matchLabels": {"app": "db"}}, LABELS)
    assert match_label_selector_object({}, LABELS), "an empty selector matches everything"
    assert not match_label_selector_object(None, LABELS), "a missing selector matches nothing"
    assert match_label_selector_object(
        {"matchExpressions": [{"key": "x", "operator": "DoesNotExist"}]}, LABELS
    )
