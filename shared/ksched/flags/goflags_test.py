"""Go flag syntax on argparse: kube-scheduler's command lines parse, unknown flags fail as cobra's."""

from __future__ import annotations

import argparse
import logging

import pytest

from ksched.flags.goflags import GoBool, GoFlagParser, klog_level, normalize, parse_bool


def _parser() -> GoFlagParser:
    p = GoFlagParser(prog="kube-scheduler")
    p.add_argument("--leader-elect", action=GoBool, default=None)
    p.add_argument("--profiling", action=GoBool, default=True)
    p.add_argument("-v", "--v", type=int, default=0)
    p.add_argument("--kubeconfig")
    p.add_argument("--leader-elect-lease-duration")
    return p


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        ([], None),
        (["--leader-elect"], True),
        (["--leader-elect=true"], True),
        (["--leader-elect=false"], False),
        (["--leader-elect=F"], False),
        (["--leader-elect=1"], True),
        (["--no-leader-elect"], False),
        (["--leader-elect=false", "--leader-elect"], True),
    ],
)
def test_booleans_as_pflag(argv: list[str], expected: bool | None) -> None:
    assert _parser().parse_args(argv).leader_elect is expected


@pytest.mark.parametrize("argv", [["--v=4"], ["--v", "4"], ["-v", "4"], ["-v=4"], ["-v4"]])
def test_verbosity_spellings(argv: list[str]) -> None:
    assert _parser().parse_args(argv).v == 4


def test_kubeadm_command_line() -> None:
    ns = _parser().parse_args(["--kubeconfig=/etc/kubernetes/scheduler.conf", "--leader-elect=true"])
    assert (ns.kubeconfig, ns.leader_elect, ns.profiling) == ("/etc/kubernetes/scheduler.conf", True, True)


def test_bare_boolean_does_not_take_the_next_word() -> None:
    """pflag: ``--leader-elect false`` is the flag (true) and a stray argument, never false."""
    with pytest.raises(SystemExit) as exc:
        _parser().parse_args(["--leader-elect", "false"])
    assert exc.value.code == 1


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--foo"], "Error: unknown flag: --foo"),
        (["--foo=bar", "--v=2"], "Error: unknown flag: --foo"),
        (["--leader"], "Error: unknown flag: --leader"),  # no prefix abbreviation
        (["--kube"], "Error: unknown flag: --kube"),
        (["-x"], "Error: unknown shorthand flag: 'x' in -x"),
    ],
)
def test_unknown_flag_fails_as_cobra(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exc:
        _parser().parse_args(argv)
    assert exc.value.code == 1
    assert message in capsys.readouterr().err.splitlines()


def test_bad_boolean_names_flag_and_value(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        _parser().parse_args(["--leader-elect=maybe"])
    err = capsys.readouterr().err
    assert 'invalid argument "maybe" for "--leader-elect" flag' in err


def test_normalize_leaves_everything_after_double_dash() -> None:
    words = normalize(["--leader-elect", "--", "--leader-elect"], frozenset({"--leader-elect"}), frozenset())
    assert words == ["--leader-elect=true", "--", "--leader-elect"]


def test_parse_bool_is_go_strconv() -> None:
    assert [parse_bool(t) for t in ("t", "TRUE", "0", "False")] == [True, True, False, False]
    with pytest.raises(ValueError, match='parsing "yes"'):
        parse_bool("yes")


def test_klog_verbosity_levels() -> None:
    assert [klog_level(v) for v in (0, 2, 3, 4, 10)] == [logging.INFO] * 3 + [logging.DEBUG] * 2
    with pytest.raises(ValueError, match="--v"):
        klog_level(-1)


def test_gobool_in_plain_argparse_group() -> None:
    """GoBool also works in an argument group (how the services declare their options)."""
    p = GoFlagParser(prog="x")
    g = p.add_argument_group("g")
    g.add_argument("--leader-elect", action=GoBool, default=None)
    assert isinstance(p.parse_args(["--leader-elect=false"]), argparse.Namespace)
    assert p.parse_args(["--leader-elect=false"]).leader_elect is False
