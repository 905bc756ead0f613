"""Where no kubectl is installed the kubectl tests skip naming the package; CI makes it a failure."""

from __future__ import annotations

import pytest

from tests.fixtures.kubectl import INSTALL, kubectl_path


def test_no_kubectl_skips_naming_the_package_and_ci_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KSCHED_KUBECTL", raising=False)
    monkeypatch.delenv("KSCHED_REQUIRE_KUBECTL", raising=False)
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(pytest.skip.Exception, match="no kubectl on PATH") as skipped:
        kubectl_path()
    assert INSTALL in str(skipped.value)
    monkeypatch.setenv("KSCHED_REQUIRE_KUBECTL", "1")
    with pytest.raises(pytest.fail.Exception, match="KSCHED_REQUIRE_KUBECTL=1 makes that a failure"):
        kubectl_path()


def test_an_explicit_path_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KSCHED_KUBECTL", "/opt/k/kubectl")
    assert kubectl_path() == "/opt/k/kubectl"
