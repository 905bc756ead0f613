"""The ``ksched`` dispatcher: a subcommand whose module is absent is "not yet available"; an import
error inside a subcommand's module is raised as it is."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from ksched import cli


def subcommand(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, source: str) -> str:
    """A subcommand ``name`` whose module ``ksched_<name>.cli`` has ``source``; returns the name."""
    name = f"t{uuid.uuid4().hex[:8]}"
    package = tmp_path / f"ksched_{name}"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "cli.py").write_text(source)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(cli.SUBCOMMANDS, name, (f"ksched_{name}.cli:main", "a test subcommand"))
    return name


def test_a_missing_subcommand_module_is_reported(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(cli.SUBCOMMANDS, "ghost", ("ksched_ghost.cli:main", "not installed"))
    assert cli.main(["ghost"]) == 2
    assert (
        "ksched ghost: not yet available in this build (ksched_ghost is missing)" in capsys.readouterr().err
    )


def test_a_package_without_the_module_is_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    name = subcommand(tmp_path, monkeypatch, "")
    monkeypatch.setitem(cli.SUBCOMMANDS, name, (f"ksched_{name}.service_cli:main", "module absent"))
    assert cli.main([name]) == 2
    assert f"(ksched_{name}.service_cli is missing)" in capsys.readouterr().err


@pytest.mark.parametrize("missing", ["ksched.no_such_module", "SIBLING", "no_such_dependency"])
def test_an_import_error_inside_the_module_is_raised(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, missing: str
) -> None:
    name = subcommand(tmp_path, monkeypatch, "")
    target = f"ksched_{name}.helper" if missing == "SIBLING" else missing
    (tmp_path / f"ksched_{name}" / "cli.py").write_text(f"import {target}\n\ndef main(argv):\n    return 0\n")
    with pytest.raises(ModuleNotFoundError) as info:
        cli.main([name])
    assert info.value.name == target


def test_a_present_subcommand_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    name = subcommand(tmp_path, monkeypatch, "def main(argv):\n    return len(argv)\n")
    assert cli.main([name, "a", "b"]) == 2


def test_ksched_profile_charges_cpu_time_not_waiting(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``KSCHED_PROFILE=DIR``: the subcommand's cProfile stats, on the process's CPU clock (a sleep
    costs no CPU, so it must not show as time spent)."""
    import pstats

    source = "import time\n\ndef main(argv):\n    time.sleep(0.3)\n    return 0\n"
    name = subcommand(tmp_path, monkeypatch, source)
    out = tmp_path / "profiles"
    monkeypatch.setenv("KSCHED_PROFILE", str(out))
    assert cli.main([name]) == 0
    (path,) = out.glob(f"{name}-*.prof")
    stats = pstats.Stats(str(path))
    sleep = [v for k, v in stats.stats.items() if k[2] == "<built-in method time.sleep>"]  # type: ignore[attr-defined]
    assert sleep and sleep[0][3] < 0.1, sleep  # cumulative: CPU, not the 0.3 s of wall time


def test_ksched_profile_only_profiles_the_commands_it_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``KSCHED_PROFILE_ONLY=a,b``: only those subcommands are profiled (one service of a stack)."""
    name = subcommand(tmp_path, monkeypatch, "def main(argv):\n    return 0\n")
    out = tmp_path / "profiles"
    monkeypatch.setenv("KSCHED_PROFILE", str(out))
    monkeypatch.setenv("KSCHED_PROFILE_ONLY", "informer,queue")
    assert cli.main([name]) == 0
    assert not list(out.glob("*.prof"))
    monkeypatch.setenv("KSCHED_PROFILE_ONLY", f"informer,{name}")
    assert cli.main([name]) == 0
    assert len(list(out.glob(f"{name}-*.prof"))) == 1
