"""The proxy from the environment, by Go's ``ProxyFromEnvironment`` rules."""

from __future__ import annotations

import pytest

from ksched.client.proxy import proxy_from_environment, proxy_settings

ENV = {"HTTPS_PROXY": "https://secure:3129", "HTTP_PROXY": "plain:3128"}


@pytest.mark.parametrize(
    ("url", "env", "expected"),
    [
        ("https://10.96.0.1:443", ENV, "https://secure:3129"),
        ("http://api.example:8080", ENV, "http://plain:3128"),  # no scheme: http://
        ("https://api.example", {"https_proxy": "http://lower:1"}, "http://lower:1"),
        (
            "https://api.example",
            {"HTTPS_PROXY": "http://upper:1", "https_proxy": "http://lower:1"},
            "http://upper:1",
        ),
        ("https://api.example", {"HTTP_PROXY": "http://plain:1"}, None),  # https takes HTTPS_PROXY only
        ("http://api.example", {**ENV, "REQUEST_METHOD": "GET"}, None),  # CGI: HTTP_PROXY ignored
        ("https://localhost:6443", ENV, None),
        ("https://127.0.0.1:6443", ENV, None),
        ("https://[::1]:6443", ENV, None),
        ("https://10.96.0.1", {**ENV, "NO_PROXY": "*"}, None),
        ("https://10.96.0.1", {**ENV, "NO_PROXY": "10.96.0.1"}, None),
        ("https://10.96.0.1", {**ENV, "NO_PROXY": "10.0.0.0/8"}, None),
        ("https://10.96.0.1", {**ENV, "NO_PROXY": "192.168.0.0/16"}, "https://secure:3129"),
        ("https://api.example.com", {**ENV, "no_proxy": "example.com"}, None),
        ("https://a.api.example.com", {**ENV, "NO_PROXY": ".example.com"}, None),
        ("https://notexample.com", {**ENV, "NO_PROXY": "example.com"}, "https://secure:3129"),
        ("https://api.example.com:6443", {**ENV, "NO_PROXY": "api.example.com:6443"}, None),
        ("https://api.example.com:443", {**ENV, "NO_PROXY": "api.example.com:6443"}, "https://secure:3129"),
        ("unix:///run/socket", ENV, None),
    ],
)
def test_go_rules(url: str, env: dict[str, str], expected: str | None) -> None:
    assert proxy_from_environment(url, env) == expected


def test_a_proxy_user_becomes_the_proxy_authorization_header() -> None:
    assert proxy_settings("http://user:secret@proxy.example:3128") == (
        "http://proxy.example:3128",
        {"Proxy-Authorization": "Basic dXNlcjpzZWNyZXQ="},
    )
    assert proxy_settings("http://proxy.example:3128") == ("http://proxy.example:3128", {})
    assert proxy_settings(None) == (None, {})
