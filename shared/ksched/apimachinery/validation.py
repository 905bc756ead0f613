"""Label keys, label values and DNS names, checked and worded as apimachinery 1.36.2 does.

Two families of messages exist upstream and both are kept: ``api/validate/content`` (label keys and
values, and the DNS prefix of a key) says "must be no more than N bytes", ``util/validation`` (object
names) says "N characters". Lengths are Go's ``len``: bytes of the UTF-8 text.
"""

from __future__ import annotations

import re

_LABEL_KEY_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_LABEL_KEY_MSG = (
    "must consist of alphanumeric characters, '-', '_' or '.', "
    "and must start and end with an alphanumeric character"
)
_LABEL_VALUE_FMT = f"({_LABEL_KEY_FMT})?"
_LABEL_VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', "
    "and must start and end with an alphanumeric character"
)
_DNS1123_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
    "and must start and end with an alphanumeric character"
)
_DNS1123_SUBDOMAIN_FMT = _DNS1123_LABEL_FMT + "(\\." + _DNS1123_LABEL_FMT + ")*"
_DNS1123_SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
    "and must start and end with an alphanumeric character"
)
_DNS1035_LABEL_FMT = "[a-z]([-a-z0-9]*[a-z0-9])?"
_DNS1035_LABEL_MSG = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
    "alphabetic character, and end with an alphanumeric character"
)
# Go's ``^...$`` matches the whole text only: these are always used with ``fullmatch``.
_LABEL_KEY_RE = re.compile(_LABEL_KEY_FMT)
_LABEL_VALUE_RE = re.compile(_LABEL_VALUE_FMT)
_DNS1123_LABEL_RE = re.compile(_DNS1123_LABEL_FMT)
_DNS1123_SUBDOMAIN_RE = re.compile(_DNS1123_SUBDOMAIN_FMT)
_DNS1035_LABEL_RE = re.compile(_DNS1035_LABEL_FMT)

LABEL_MAX_LENGTH = 63
DNS1123_LABEL_MAX_LENGTH = 63
DNS1123_SUBDOMAIN_MAX_LENGTH = 253
DNS1035_LABEL_MAX_LENGTH = 63


def regex_error(msg: str, fmt: str, *examples: str) -> str:
    """``RegexError`` (the double space before ``or`` included)."""
    if not examples:
        return f"{msg} (regex used for validation is '{fmt}')"
    listed = " or ".join(f"'{e}', " for e in examples)
    return f"{msg} (e.g. {listed}regex used for validation is '{fmt}')"


def max_len_error(length: int) -> str:
    """``content.MaxLenError`` (label keys and values)."""
    return f"must be no more than {length} bytes"


def max_len_chars_error(length: int) -> str:
    """``validation.MaxLenError`` (object names)."""
    return f"must be no more than {length} characters"


def _byte_len(text: str) -> int:
    return len(text.encode())


def _subdomain_errors(value: str, too_long: str) -> list[str]:
    errs: list[str] = []
    if _byte_len(value) > DNS1123_SUBDOMAIN_MAX_LENGTH:
        errs.append(too_long)
    if not _DNS1123_SUBDOMAIN_RE.fullmatch(value):
        errs.append(regex_error(_DNS1123_SUBDOMAIN_MSG, _DNS1123_SUBDOMAIN_FMT, "example.com"))
    return errs


def dns1123_subdomain_errors(value: str) -> list[str]:
    """``validation.IsDNS1123Subdomain`` (object names)."""
    return _subdomain_errors(value, max_len_chars_error(DNS1123_SUBDOMAIN_MAX_LENGTH))


def dns1123_label_errors(value: str) -> list[str]:
    """``validation.IsDNS1123Label``: a subdomain-shaped value is told that dots are the problem."""
    errs: list[str] = []
    if _byte_len(value) > DNS1123_LABEL_MAX_LENGTH:
        errs.append(max_len_chars_error(DNS1123_LABEL_MAX_LENGTH))
    if not _DNS1123_LABEL_RE.fullmatch(value):
        if _DNS1123_SUBDOMAIN_RE.fullmatch(value):
            errs.append("must not contain dots")
        else:
            errs.append(regex_error(_DNS1123_LABEL_MSG, _DNS1123_LABEL_FMT, "my-name", "123-abc"))
    return errs


def dns1035_label_errors(value: str) -> list[str]:
    """``validation.IsDNS1035Label``."""
    errs: list[str] = []
    if _byte_len(value) > DNS1035_LABEL_MAX_LENGTH:
        errs.append(max_len_chars_error(DNS1035_LABEL_MAX_LENGTH))
    if not _DNS1035_LABEL_RE.fullmatch(value):
        errs.append(regex_error(_DNS1035_LABEL_MSG, _DNS1035_LABEL_FMT, "my-name", "abc-123"))
    return errs


def label_key_errors(key: str) -> list[str]:
    """Why ``key`` is not a valid label key or qualified name (``content.IsLabelKey``); [] if valid."""
    errs: list[str] = []
    parts = key.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errs.append("prefix part must be non-empty")
        else:
            prefix_errs = _subdomain_errors(prefix, max_len_error(DNS1123_SUBDOMAIN_MAX_LENGTH))
            errs.extend("prefix part " + m for m in prefix_errs)
    else:
        return [
            "a valid label key "
            + regex_error(_LABEL_KEY_MSG, _LABEL_KEY_FMT, "MyName", "my.name", "123-abc")
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]
    if not name:
        errs.append("name part must be non-empty")
    elif _byte_len(name) > LABEL_MAX_LENGTH:
        errs.append("name part " + max_len_error(LABEL_MAX_LENGTH))
    if not _LABEL_KEY_RE.fullmatch(name):
        errs.append(
            "name part " + regex_error(_LABEL_KEY_MSG, _LABEL_KEY_FMT, "MyName", "my.name", "123-abc")
        )
    return errs


def label_value_errors(value: str) -> list[str]:
    """Why ``value`` is not a valid label value (``content.IsLabelValue``); [] if valid."""
    errs: list[str] = []
    if _byte_len(value) > LABEL_MAX_LENGTH:
        errs.append(max_len_error(LABEL_MAX_LENGTH))
    if not _LABEL_VALUE_RE.fullmatch(value):
        errs.append(regex_error(_LABEL_VALUE_MSG, _LABEL_VALUE_FMT, "MyValue", "my_value", "12345"))
    return errs
