"""Selectors as kubesim meets them: query parameters answered with the API server's 400, and
``metav1.LabelSelector`` objects of stored PDBs and claims (semantics: ksched.apimachinery)."""

from __future__ import annotations

import pytest
from ksched_kubesim.errors import ApiError
from ksched_kubesim.selectors import (
    label_selector_of,
    matches_label_selector,
    parse_field_selector,
    parse_label_selector,
)

from ksched.apimachinery.labels import SelectorError

LABELS = {"app": "web", "tier": "fe", "version": "3"}


def test_parse_label_selector_raises_400() -> None:
    with pytest.raises(ApiError) as info:
        parse_label_selector("app in (web")
    assert info.value.code == 400
    assert info.value.body["message"] == "unable to parse requirement: found '', expected: ',' or ')'"
    assert parse_label_selector("") is None
    assert parse_label_selector(" ") is None
    selector = parse_label_selector("app=web")
    assert selector is not None and selector.matches(LABELS)


def test_field_selector_errors() -> None:
    with pytest.raises(ApiError) as info:
        parse_field_selector("spec.foo=bar", ("spec.nodeName",))
    assert info.value.body["message"] == "field label not supported: spec.foo"
    with pytest.raises(ApiError) as info:
        parse_field_selector("justaname", ("justaname",))
    assert info.value.body["message"] == "invalid selector: 'justaname'; can't understand 'justaname'"
    selector = parse_field_selector("spec.nodeName=", ("spec.nodeName",))
    assert selector is not None and selector.matches({"spec.nodeName": ""})
    assert parse_field_selector(",", ("spec.nodeName",)) is None


def test_label_selector_objects() -> None:
    selector = {
        "matchLabels": {"app": "web"},
        "matchExpressions": [{"key": "tier", "operator": "In", "values": ["fe"]}],
    }
    assert matches_label_selector(selector, LABELS)
    assert not matches_label_selector({"matchLabels": {"app": "db"}}, LABELS)
    assert matches_label_selector({}, LABELS), "an empty selector matches everything"
    assert not matches_label_selector(None, LABELS), "a missing selector matches nothing"
    assert matches_label_selector({"matchExpressions": [{"key": "x", "operator": "DoesNotExist"}]}, LABELS)


@pytest.mark.parametrize(
    "selector",
    [
        {"matchExpressions": [{"key": "app", "operator": "Bogus", "values": ["web"]}]},
        {"matchExpressions": [{"key": "bad key", "operator": "DoesNotExist"}]},
        {"matchLabels": {"app": "a b"}},
        {"matchLabels": "app=web"},
    ],
)
def test_an_invalid_selector_matches_nothing(selector: object) -> None:
    """As upstream's eviction and PV binder, which skip what LabelSelectorAsSelector refuses."""
    assert not matches_label_selector(selector, {"app": "web", "bad key": "x"})
    with pytest.raises(SelectorError):
        label_selector_of(selector)
