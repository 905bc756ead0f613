"""Field selectors (apimachinery ``fields.ParseSelector``)."""

from __future__ import annotations

import pytest

from ksched.apimachinery.fields import FieldSelectorError, FieldTerm, parse


def test_terms_and_matching() -> None:
    sel = parse("spec.nodeName=,status.phase!=Succeeded,status.phase!=Failed")
    assert sel.matches({"spec.nodeName": "", "status.phase": "Pending"})
    assert not sel.matches({"spec.nodeName": "n1", "status.phase": "Pending"})
    assert not sel.matches({"spec.nodeName": "", "status.phase": "Failed"})
    assert parse("a==x").matches({"a": "x"})
    assert parse("a=x\\,y").terms == (FieldTerm("a", True, "x,y"),)
    assert parse(",,").empty


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("justaname", "invalid selector: 'justaname'; can't understand 'justaname'"),
        ("a=b\\x", "invalid field selector: invalid escape sequence: \\x"),
        ("a=b=c", "invalid field selector: unescaped = in value"),
    ],
)
def test_errors(text: str, message: str) -> None:
    with pytest.raises(FieldSelectorError) as info:
        parse(text)
    assert str(info.value) == message
