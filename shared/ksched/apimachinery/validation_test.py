"""Label keys, label values and DNS names (apimachinery ``content`` and ``util/validation``)."""

from __future__ import annotations

from ksched.apimachinery.validation import (
    dns1035_label_errors,
    dns1123_label_errors,
    dns1123_subdomain_errors,
    label_key_errors,
    label_value_errors,
)


def test_label_key_errors() -> None:
    assert label_key_errors("example.com/name") == []
    assert label_key_errors("/name") == ["prefix part must be non-empty"]
    assert label_key_errors("Bad_Prefix/name")[0].startswith("prefix part a lowercase RFC 1123 subdomain")
    assert label_key_errors("x" * 64) == ["name part must be no more than 63 bytes"]
    assert label_key_errors("é" * 32) == [  # 64 bytes, 32 characters: Go counts bytes
        "name part must be no more than 63 bytes",
        label_key_errors("é")[0],
    ]
    assert label_key_errors("a/b/c")[0].startswith("a valid label key must consist of")
    assert len(label_key_errors("example.com/")) == 2  # empty name: both the empty and the regex message
    assert label_key_errors("name\n") != []  # Go's $ is the end of the text


def test_label_value_errors() -> None:
    assert label_value_errors("") == []
    assert label_value_errors("a.b-c_d") == []
    assert label_value_errors("-a")[0].startswith("a valid label must be an empty string")
    assert label_value_errors("a b") != []
    assert label_value_errors("x" * 64) == ["must be no more than 63 bytes"]


def test_names() -> None:
    assert dns1123_subdomain_errors("a.b-c") == []
    assert dns1123_subdomain_errors("x" * 254)[0] == "must be no more than 253 characters"
    assert dns1123_label_errors("a.b") == ["must not contain dots"]
    assert dns1123_label_errors("A")[0].startswith("a lowercase RFC 1123 label must consist")
    assert dns1035_label_errors("1abc")[0].startswith("a DNS-1035 label must consist")
    assert dns1035_label_errors("abc-1") == []
