"""``field.Error`` texts as apimachinery 1.36.2 renders them."""

from __future__ import annotations

import pytest

from ksched.apimachinery import field


def test_paths() -> None:
    assert field.index(field.child("", "a", "b"), 0) == "a.b[0]"
    assert field.child(field.index("", 2), "matchFields") == "[2].matchFields"
    assert field.index("values[0]", "key") == "values[0][key]"


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        (3, "3"),
        (-1.5, "-1.5"),
        (100.0, "100"),
        (1e21, "1e+21"),
        (1e-5, "1e-05"),
        (0.0001, "0.0001"),
        (True, "true"),
        ("a\tb", '"a\\tb"'),
        (None, "null"),
        ([], "null"),  # an omitted list is the nil slice
        (["a", "b"], '["a","b"]'),
        ({"Enabled": None, "Disabled": [1]}, '{"Enabled":null,"Disabled":[1]}'),  # a struct: field order kept
        (["<&>"], '["\\u003c\\u0026\\u003e"]'),
    ],
)
def test_bad_values_print_as_error_body_prints_them(value: object, shown: str) -> None:
    assert field.go_value(value) == shown
    assert str(field.invalid("f", value, "d")) == f"f: Invalid value: {shown}: d"


def test_error_types() -> None:
    assert str(field.required("spec.x")) == "spec.x: Required value"
    assert str(field.required("spec.x", "must be set")) == "spec.x: Required value: must be set"
    assert str(field.forbidden("spec", "no")) == "spec: Forbidden: no"
    assert str(field.duplicate("names[1]", "a")) == 'names[1]: Duplicate value: "a"'
    assert str(field.not_supported("op", "x", ["In", "NotIn"])) == (
        'op: Unsupported value: "x": supported values: "In", "NotIn"'
    )
    assert str(field.not_supported("op", "x", [])) == 'op: Unsupported value: "x"'
    too_long = field.too_long("metadata.annotations", 262144)
    assert str(too_long) == "metadata.annotations: Too long: may not be more than 262144 bytes"
    assert (too_long.reason, too_long.body()) == (
        "FieldValueTooLong",
        "Too long: may not be more than 262144 bytes",
    )
    assert field.invalid("f", 1).reason == "FieldValueInvalid"
    assert str(field.invalid("f", 1)) == "f: Invalid value: 1"


def test_aggregate_message() -> None:
    assert field.aggregate_message([]) == ""
    assert field.aggregate_message(["a"]) == "a"
    assert field.aggregate_message(["a", "a"]) == "a"
    assert field.aggregate_message(["a", "b", "a"]) == "[a, b]"
    assert field.aggregate_message([field.required("x"), "b"]) == "[x: Required value, b]"
