"""Packaging hygiene (issue 25 item 7): the wheel carries no test modules; every lock pins each
package with hashes and installs use --require-hashes; ``ksched --version`` names the upstream
kube-scheduler release it matches."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
import tomllib
from importlib.metadata import version
from pathlib import Path
from types import ModuleType

import pytest

import ksched

ROOT = Path(__file__).resolve().parents[1]
LOCKS = (
    "requirements.lock",
    "requirements-build.lock",
    "requirements-dev.lock",
    "requirements-otel.lock",
    "requirements-plot.lock",
)
PACKAGE_DIRS = {
    "ksched": ROOT / "shared" / "ksched",
    **{
        f"ksched_{s}": ROOT / "services" / s / f"ksched_{s}"
        for s in ("kubesim", "informer", "queue", "scheduler", "binder", "ui")
    },
}


def _setup_module() -> ModuleType:
    """setup.py's helpers (it calls setup() only when run as the build backend runs it)."""
    spec = importlib.util.spec_from_file_location("ksched_setup", ROOT / "setup.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_test_file_names() -> None:
    is_test_file = _setup_module().is_test_file
    assert is_test_file("shared/ksched/config/decode_test.py")
    assert is_test_file("shared/ksched/tests/helpers.py")
    assert is_test_file("x/test_thing.py") and is_test_file("x/conftest.py")
    assert not is_test_file(
        "shared/ksched/framework/testing.py"
    )  # helpers of `ksched bench` and plugin authors
    assert not is_test_file("shared/ksched/config/decode.py")
    assert not is_test_file("shared/ksched/contest.py")


def test_the_wheel_carries_no_test_files(tmp_path: Path) -> None:
    """Builds what the wheel is made of (setup.py's build_py) and compares it with the source tree."""
    out = tmp_path / "lib"
    build = subprocess.run(
        [sys.executable, "setup.py", "-q", "build_py", "--build-lib", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert build.returncode == 0, build.stderr
    built = {str(p.relative_to(out)) for p in out.rglob("*.py")}
    sources: set[str] = set()
    tests: set[str] = set()
    for package, directory in PACKAGE_DIRS.items():
        for path in directory.rglob("*.py"):
            name = f"{package}/{path.relative_to(directory)}"
            (tests if path.name.endswith("_test.py") or path.name.startswith("test_") else sources).add(name)
    assert tests, "the tree has *_test.py tables beside the code: the check must see some"
    assert not built & tests, sorted(built & tests)[:5]
    assert built == sources
    assert (out / "ksched" / "py.typed").exists()


@pytest.mark.parametrize("lock", LOCKS)
def test_every_lock_pins_every_package_with_hashes(lock: str) -> None:
    text = (ROOT / lock).read_text()
    requirements = [r for r in re.split(r"(?<!\\)\n", text) if r.strip() and not r.startswith("#")]
    assert requirements
    for req in requirements:
        head, *hashes = [part.strip() for part in req.split("\\\n")]
        assert re.fullmatch(r"[A-Za-z0-9_.-]+==[A-Za-z0-9_.+!-]+", head), f"{lock}: not a pin: {head!r}"
        assert hashes, f"{lock}: {head} has no hash"
        assert all(re.fullmatch(r"--hash=sha256:[0-9a-f]{64}", h) for h in hashes), f"{lock}: {head}"


def _pins(lock: str) -> dict[str, str]:
    """name → the whole entry (pin and hashes), names normalized."""
    text = (ROOT / lock).read_text()
    entries = [r for r in re.split(r"(?<!\\)\n", text) if r.strip() and not r.startswith("#")]
    return {re.split("==", e, maxsplit=1)[0].lower().replace("_", "-"): e for e in entries}


def test_the_dev_lock_holds_the_runtime_and_build_pins_unchanged() -> None:
    dev = _pins("requirements-dev.lock")
    for lock in (
        "requirements.lock",
        "requirements-build.lock",
        "requirements-otel.lock",
        "requirements-plot.lock",
    ):
        for name, entry in _pins(lock).items():
            assert dev.get(name) == entry, f"{name}: requirements-dev.lock differs from {lock}"
    assert "cryptography" in _pins("requirements.lock")  # the secure port's certificate
    assert "setuptools" in _pins("requirements-build.lock")


def test_installs_require_hashes() -> None:
    makefile = (ROOT / "Makefile").read_text()
    assert "--require-hashes -r requirements-dev.lock" in makefile
    assert "--no-build-isolation -e ." in makefile  # the build backend comes from the hashed lock
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert "--require-hashes -r requirements.lock -r requirements-build.lock" in dockerfile
    assert "--no-build-isolation ." in dockerfile
    assert "setup.py" in dockerfile  # the hook that leaves the tests out of the wheel
    context = (ROOT / ".dockerignore").read_text().splitlines()
    assert {"!requirements.lock", "!requirements-build.lock", "!setup.py"} <= set(context)


def test_version_names_the_upstream_release() -> None:
    ksched_bin = Path(sys.executable).with_name("ksched")
    out = subprocess.run([str(ksched_bin), "--version"], capture_output=True, text=True, check=True).stdout
    assert out == f"ksched {version('ksched')} (kube-scheduler 1.36.2 semantics)\n"
    assert ksched.UPSTREAM_VERSION == "1.36.2"


def test_the_version_is_the_newest_release() -> None:
    """pyproject.toml's version is the newest release of CHANGELOG.md (under a first "Unreleased"),
    and deploy/'s images and the docs that show the version name it."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    changelog = (ROOT / "CHANGELOG.md").read_text()
    releases = re.findall(r"^## (\d+\.\d+\.\d+) - \d{4}-\d{2}-\d{2}$", changelog, re.MULTILINE)
    assert releases, "CHANGELOG.md has no release heading '## X.Y.Z - YYYY-MM-DD'"
    assert releases[0] == project, f"pyproject.toml says {project}, the newest release is {releases[0]}"
    ordered = [tuple(int(n) for n in r.split(".")) for r in releases]
    assert ordered == sorted(ordered, reverse=True), "releases are listed newest first"
    assert changelog.index("## Unreleased\n") < changelog.index(f"## {project} - ")
    shown = [
        (path.relative_to(ROOT), tag)
        for path in [*sorted((ROOT / "deploy").rglob("*.yaml")), *sorted((ROOT / "docs").glob("*.md"))]
        for tag in re.findall(r"(?:ksched:|newTag: |`ksched )(\d+\.\d+\.\d+)", path.read_text())
    ]
    assert len(shown) >= 10, shown
    assert [s for s in shown if s[1] != project] == []
